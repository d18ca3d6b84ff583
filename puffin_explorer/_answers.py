"""The one rule for what a public call answers (docs/answers.md), as the two steps every tabular answer takes.

A tabular answer is a pandas DataFrame whose ``attrs`` name where it came from (``table`` and ``snapshot_id``
for Iceberg, ``version`` for Delta, ``warehouse`` for a warehouse); a call whose answer grows with the table
also takes ``arrow=True`` and answers the same columns as a ``pyarrow.Table``, the same names in its schema's
metadata.
"""

from __future__ import annotations

from typing import Any

#: The ``attrs`` keys that name where an answer came from, in the order they are written.
ORIGIN_KEYS = ("warehouse", "table", "snapshot_id", "version")


def tabular(frame: Any, arrow: bool = False, **origin: Any) -> Any:
    """``frame`` with ``origin`` (``table=``, ``snapshot_id=`` / ``version=``) in its ``attrs``; with ``arrow``
    its columns as a ``pyarrow.Table`` instead (:func:`as_arrow`)."""
    frame.attrs.update(origin)
    return as_arrow(frame) if arrow else frame


def as_arrow(frame: Any) -> Any:
    """A DataFrame's columns as a ``pyarrow.Table`` (no index), its origin (the ``attrs`` of
    :data:`ORIGIN_KEYS`) as text in the schema's metadata."""
    import pyarrow as pa

    table = pa.Table.from_pandas(frame, preserve_index=False)
    origin = {k: "" if frame.attrs[k] is None else str(frame.attrs[k]) for k in ORIGIN_KEYS if k in frame.attrs}
    return table.replace_schema_metadata({**(table.schema.metadata or {}), **origin})


__all__ = ["ORIGIN_KEYS", "as_arrow", "tabular"]
