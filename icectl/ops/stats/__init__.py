"""Table statistics: Puffin files of column sketches and partition statistics files."""
