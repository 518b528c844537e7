"""Relocation: a table's metadata rewritten for another location, and its files copied there."""
