"""icectl: a command-line tool, a Python API and a metadata engine for Apache Iceberg tables on
a filesystem or object store.

The Python API is this package's face (README.md, "Python API")::

    import icectl

    t = icectl.load_table("db.events", warehouse="/data/wh")   # location, metadata file or id
    t.plan("day = '2024-01-02'").to_json()                     # == icectl plan ... --json
    t.scan("id > 5", columns=["id"]).to_arrow()                # a pyarrow.Table
    t.delete("id in (3, 7)"); t.upsert(rows, on=["id"]); t.compact(engine="spark"); t.expire("7d")

``load_table``, ``Table`` (:mod:`icectl.api`), ``ScanResult`` and the error kinds of
:mod:`icectl.errors` are attributes of the package, loaded on first use (a module
``__getattr__``): ``import icectl`` itself imports nothing else, so the command line's fast
``plan`` path, which imports the package, stays cheap. The API is a thin layer over the
operations, as the command line is: both resolve tables, times and engines through the same
functions, parse filters with the one parser and return the same result objects
(``to_json()`` is the command's ``--json``).

Architecture (README.md, "Architecture", says the same at more length). Layers, imports
pointing down only (tests/test_layering.py checks it)::

    cli, api  ->  ops (ops/compute)  ->  scan  ->  table  ->  io  ->  expr, spec
                   \\-> engines (plain task functions; the only place pyspark may be imported, lazily)

* ``api`` (the module ``icectl/api.py``, beside ``cli``) takes Python values, parses a filter
  once and calls the same operations; the CLI and the API share table, engine and time
  resolution below them.
* ``cli`` parses options, calls one operation and renders its result; it alone prints and knows
  exit codes. ``cli/app.py`` keeps the table of commands (name, module, one-line help) and
  imports a command's module only when the command is used; ``cli/common.py`` has the shared
  options, time options, progress display, result rendering and error handling. The program
  is ``cli/entry.py``: it runs a plain ``icectl plan`` line without loading typer (the plan body
  is ``cli/plan_run.py``, what bodies share without typer ``cli/runner.py``).
* ``ops`` holds the operations. Each returns a result object whose ``to_json()`` is its stable
  ``--json`` view and raises :mod:`icectl.errors` kinds whose messages name no command-line flag.
  ``spec/timetext.py`` is the one parser of times (operations, the CLI and scan planning import
  it); ``ops/compute`` the Arrow compute layer.
* ``scan`` plans scans; ``table`` loads tables and commits (rename that never overwrites, then
  the version hint, retried with re-validation); ``io`` reads and writes files, Avro and
  Parquet; ``expr`` is the filter language; ``spec`` the pure Iceberg model.
* ``engines`` runs work: an operation plans tasks as plain data, an engine maps a pure task
  function over them and returns plain results in order, and the driver (the operation)
  commits. ``local`` is a process pool; ``spark`` (engines/spark.py) runs the same task
  functions in Spark executors.

Where things go: a new command is ``cli/<name>_cmd.py`` with ``register(app)`` plus one line in
``cli/app.py``'s ``COMMANDS``, its operation ``ops/<name>.py``; a new engine is a module in
``engines`` registered in ``ENGINES``. One path per job: reuse or move the code that already does
a job rather than writing a second one.
"""

__version__ = "0.1.0"

_API = ("load_table", "Table", "ScanResult")
_ERRORS = ("IcectlError", "InvalidInput", "NotFound", "AlreadyExists", "ValidationError",
           "CommitConflict", "StorageError", "CorruptMetadata", "UnsupportedFeature",
           "UnsafeStorage", "CommitStateUnknown", "WorkerLost", "DuplicateWapCommit", "Interrupted")
__all__ = [*_API, *_ERRORS, "__version__"]


def __getattr__(name: str):  # the public API, imported on first use
    if name == "ScanResult":
        from icectl.ops.write.arrow_rows import ScanResult

        return ScanResult
    if name in _API:
        from icectl import api

        return getattr(api, name)
    if name in _ERRORS:
        from icectl import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'icectl' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
