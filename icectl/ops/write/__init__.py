"""Writing rows and registering files: append, ingest, write, data files, sinks, spill sort, row sources, Arrow compute."""
