"""Manifests and manifest lists: records, columnar decoding and its generated decoders, maps, shapes, byte copy, cache. See README.md here."""
