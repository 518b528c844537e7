"""Metadata-only changes: create, schema/spec/sort-order evolution, properties, refs, warehouse operations."""
