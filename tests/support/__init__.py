"""Builders shared by every test directory, imported as ``support`` (``from support.tables import
empty_table``): tests/conftest.py puts tests/ on ``sys.path``, as it does for tests/clirun.py.

- :mod:`support.tables`: fresh tables (library-created, any schema, partition spec, sort order,
  format version and properties), tables with N data files written into them, CSV written
  through the command line.
- :mod:`support.files`: hand-made files (Parquet with field ids, data file entries with any
  metrics, position/equality delete files, deletion vectors) committed into a table.

A builder that makes a shape only one test module needs (a particular history, a corrupted file,
Spark-written evolution) stays in that module; what two modules build alike lives here.
"""
