"""File formats: Avro (container, schema, records), Parquet (read, schema, write), Puffin."""
