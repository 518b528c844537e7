"""Row-level deletes: the shared plan, merge-on-read, copy-on-write, positions, equality, keyed deletes, upsert."""
