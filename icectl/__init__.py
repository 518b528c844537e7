"""icectl: a command-line tool and metadata engine for Apache Iceberg tables on a filesystem."""

__version__ = "0.1.0"
