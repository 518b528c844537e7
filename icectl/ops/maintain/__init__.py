"""Maintenance: compaction (data and delete files), the rewrite task, manifest rewrites, expire, orphans, reachability, file removal."""
