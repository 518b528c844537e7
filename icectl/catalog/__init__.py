"""Homes of tables: the catalog seam (:mod:`.base`), the filesystem warehouse
(:mod:`.filesystem`), the SQL catalog shared with Iceberg Java's JdbcCatalog and pyiceberg's
SqlCatalog (:mod:`.sql`, :mod:`.sql_db`), where a command's catalog is configured
(:mod:`.config`) and how a TABLE argument finds its table (:mod:`.resolve`)."""
