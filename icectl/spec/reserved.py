"""Reserved field ids (spec "Reserved Field IDs") and the position delete file schema (pure).

The one home of these numbers: metadata columns, the columns of position delete files, and the
row-lineage fields of format v3. Content kinds (data, position deletes, equality deletes; data or
delete manifests) are :mod:`icectl.spec.manifests`' ``DATA``, ``POSITION_DELETES``,
``EQUALITY_DELETES``, ``MANIFEST_DATA`` and ``MANIFEST_DELETES``.
"""

from __future__ import annotations

from icectl.spec.schema import Schema
from icectl.spec.types import LONG, STRING, NestedField

__all__ = [
    "FILE_PATH_COLUMN_ID", "ROW_POSITION_ID", "IS_DELETED_ID", "SPEC_ID_COLUMN_ID",
    "PARTITION_COLUMN_ID", "DELETE_FILE_PATH_ID", "DELETE_FILE_POS_ID", "DELETE_FILE_ROW_ID",
    "ROW_ID_ID", "LAST_UPDATED_SEQUENCE_NUMBER_ID", "POSITION_DELETE_SCHEMA",
]

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
