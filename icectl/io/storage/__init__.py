"""Storage: the FileIO, local disks and fsspec object stores (conditional create), the cache directory."""
