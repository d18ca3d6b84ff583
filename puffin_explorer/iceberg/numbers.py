"""The one range check of integers read from a table's files, and the spec's integer type of each field.

Avro decodes a varint of any length and JSON has no integer limit, so a damaged manifest list, manifest
or metadata file can hold ``2**53 + 1`` where the spec says ``int`` or ``2**64`` where it says ``long``.
Every integer that lands in a typed column, or is used as an ``int`` / ``long``, passes :func:`in_range`
first; a value outside its type is a finding (``iceberg.manifest-number-range`` for Avro files,
``iceberg.metadata-number-range`` for the metadata JSON) and is read as absent.
"""

from __future__ import annotations

from typing import Any, Optional

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
BOUNDS = {"int": (INT32_MIN, INT32_MAX), "long": (INT64_MIN, INT64_MAX)}

#: Fields of manifest lists (``manifest_file``), manifest entries and ``data_file`` whose spec type is
#: ``int``; every other integer field of these records is a ``long``.
INT_FIELDS = frozenset({
    "partition_spec_id", "content", "added_files_count", "existing_files_count", "deleted_files_count",
    "added_data_files_count", "existing_data_files_count", "deleted_data_files_count", "status",
    "sort_order_id", "equality_ids", "spec_id",
})
#: The integer fields of a manifest list record (``manifest_file``), legacy v1 names included.
MANIFEST_FILE_INTS = ("manifest_length", "partition_spec_id", "content", "sequence_number", "min_sequence_number",
                      "added_snapshot_id", "added_files_count", "existing_files_count", "deleted_files_count",
                      "added_data_files_count", "existing_data_files_count", "deleted_data_files_count",
                      "added_rows_count", "existing_rows_count", "deleted_rows_count", "first_row_id")


def spec_type(field_name: str) -> str:
    """``int`` or ``long``: the spec's type of an integer field of a manifest list or manifest."""
    return "int" if field_name in INT_FIELDS else "long"


def is_integer(value: Any) -> bool:
    """An integer value (``True`` is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


def in_range(value: int, kind: str = "long", low: Optional[int] = None) -> bool:
    """``value`` fits ``kind`` (``int``: 32 bits, ``long``: 64 bits, signed), and is at least ``low`` if given."""
    lo, hi = BOUNDS[kind]
    return max(lo, low if low is not None else lo) <= value <= hi


#: Epoch milliseconds a nanosecond datetime (pandas, NumPy ``datetime64[ns]``) can hold: 1677-09-21 to 2262-04-11.
TIMESTAMP_MS_RANGE = (-((1 << 63) // 1_000_000 - 1), (1 << 63) // 1_000_000 - 1)


def datable_ms(value: Any) -> bool:
    """An epoch-millisecond integer a datetime column can hold (anything else is an unknown time)."""
    return is_integer(value) and TIMESTAMP_MS_RANGE[0] <= value <= TIMESTAMP_MS_RANGE[1]


def out_of_range(value: Any, kind: str = "long") -> bool:
    """An integer outside its type's range (anything that is not an integer is not this check's business)."""
    return is_integer(value) and not in_range(value, kind)


def show(value: int) -> str:
    """A number as a message quotes it: exact, with thousands separators."""
    return f"{value:,}"
