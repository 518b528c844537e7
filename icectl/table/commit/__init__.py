"""Commits: the snapshot-producer template, fast append, row delta, rewrite, manifest rewrite, the manifest filter, validation."""
