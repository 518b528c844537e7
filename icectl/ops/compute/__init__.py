"""The Arrow compute layer: what every operation that turns rows into files does to the rows.

- :mod:`~icectl.ops.compute.conform` - rows from any source conformed to a table schema (names
  matched, types cast, required columns checked, field ids attached);
- :mod:`~icectl.ops.compute.transforms` - partition transforms on whole arrays, equal to
  :mod:`icectl.spec.transforms` value by value;
- :mod:`~icectl.ops.compute.partition` - rows split into partitions (partition tuples in
  icectl's internal values) and each part sorted (:mod:`~icectl.ops.compute.sort`);
- :mod:`~icectl.ops.compute.arrow_values` - internal values to and from Arrow arrays, columns
  by field id.

Input is a ``pyarrow.Table`` or ``RecordBatch`` plus the table's schema, spec and sort order;
output is :class:`~icectl.ops.compute.partition.PartitionBatch` values ready for a file writer.
Writers (``icectl write``), delete-file writers and compaction share this layer; nothing here
reads or writes files.
"""

from icectl.ops.compute.conform import conform_to_schema
from icectl.ops.compute.partition import PartitionBatch, partition_groups, partitioned_batches
from icectl.ops.compute.sort import sort_indices
from icectl.ops.compute.transforms import transform_array

__all__ = ["conform_to_schema", "transform_array", "PartitionBatch", "partition_groups",
           "partitioned_batches", "sort_indices"]
