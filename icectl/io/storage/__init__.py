"""Storage: the protocol (base), its stores by URL scheme (registry: local disks, fsspec object stores with the conditional create), FileIO routing each path to its store, the cache directory."""
