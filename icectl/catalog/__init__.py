"""Homes of tables: the catalog seam (:mod:`.base`), the filesystem warehouse
(:mod:`.filesystem`), the SQL catalog shared with Iceberg Java's JdbcCatalog and pyiceberg's
SqlCatalog (:mod:`.sql`, :mod:`.sql_db`), where a command's catalog is configured
(:mod:`.config`) and how a TABLE argument finds its table (:mod:`.resolve`)."""

# the environment variable naming the catalog of every command (--catalog's default); here, in
# a module that imports nothing, so the CLI's start-up does not load the catalog configuration
CATALOG_ENV = "ICECTL_CATALOG"
