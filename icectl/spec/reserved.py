"""The spec's fixed numbers: reserved field ids (spec "Reserved Field IDs"), the position delete
file schema, and the codes of content kinds and entry statuses (pure).

The one home of these numbers: metadata columns, the columns of position delete files, the
row-lineage fields of format v3; a file's content (data, position deletes, equality deletes), a
manifest's content (data or deletes) and a manifest entry's status (re-exported by
:mod:`icectl.spec.manifests`, where most code takes them from). Small on purpose: views that
only need a code do not load the manifest model.
"""

from __future__ import annotations

from icectl.spec.schema import Schema
from icectl.spec.types import LONG, STRING, NestedField

__all__ = [
    "FILE_PATH_COLUMN_ID", "ROW_POSITION_ID", "IS_DELETED_ID", "SPEC_ID_COLUMN_ID",
    "PARTITION_COLUMN_ID", "DELETE_FILE_PATH_ID", "DELETE_FILE_POS_ID", "DELETE_FILE_ROW_ID",
    "ROW_ID_ID", "LAST_UPDATED_SEQUENCE_NUMBER_ID", "POSITION_DELETE_SCHEMA",
    "DATA", "POSITION_DELETES", "EQUALITY_DELETES", "MANIFEST_DATA", "MANIFEST_DELETES",
    "EXISTING", "ADDED", "DELETED",
]

# a data file's content (plain ints: cheap to build 200k times)
DATA = 0
POSITION_DELETES = 1
EQUALITY_DELETES = 2
# a manifest's content
MANIFEST_DATA = 0
MANIFEST_DELETES = 1
# a manifest entry's status
EXISTING = 0
ADDED = 1
DELETED = 2

# metadata columns
FILE_PATH_COLUMN_ID = 2147483646  # _file
ROW_POSITION_ID = 2147483645  # _pos (also the field a deletion vector blob names)
IS_DELETED_ID = 2147483644  # _deleted
SPEC_ID_COLUMN_ID = 2147483643  # _spec_id
PARTITION_COLUMN_ID = 2147483642  # _partition
# position delete files
DELETE_FILE_PATH_ID = 2147483546  # file_path
DELETE_FILE_POS_ID = 2147483545  # pos
DELETE_FILE_ROW_ID = 2147483544  # row
# row lineage (v3)
ROW_ID_ID = 2147483540  # _row_id
LAST_UPDATED_SEQUENCE_NUMBER_ID = 2147483539  # _last_updated_sequence_number

POSITION_DELETE_SCHEMA = Schema((NestedField(DELETE_FILE_PATH_ID, "file_path", STRING, True),
                                 NestedField(DELETE_FILE_POS_ID, "pos", LONG, True)))
