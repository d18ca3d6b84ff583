"""Arrow values as Python values with maps as dicts, on every pyarrow this package allows.

``to_pylist(maps_as_pydicts="strict")`` came with pyarrow 20; before it, maps are lists of ``(key, value)``
pairs, which this module turns into dicts refusing a repeated key as pyarrow's strict mode does (there a
``KeyError``, here a ``ValueError`` naming the key)."""

from __future__ import annotations

from typing import Any


def _has_map(type_: Any) -> bool:
    import pyarrow as pa

    if pa.types.is_map(type_):
        return True
    if pa.types.is_struct(type_):
        return any(_has_map(type_.field(i).type) for i in range(type_.num_fields))
    if pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_):
        return _has_map(type_.value_type)
    return False


def _maps_as_dicts(value: Any, type_: Any) -> Any:
    import pyarrow as pa

    if value is None:
        return None
    if pa.types.is_map(type_):
        out = {}
        for key, item in value:
            if key in out:
                raise ValueError(f"duplicate key {key!r} in a map")
            out[key] = _maps_as_dicts(item, type_.item_type)
        return out
    if pa.types.is_struct(type_):
        fields = [type_.field(i) for i in range(type_.num_fields)]
        return {f.name: _maps_as_dicts(value[f.name], f.type) for f in fields}
    if pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_):
        return [_maps_as_dicts(v, type_.value_type) for v in value]
    return value


def to_pylist(data: Any) -> list:
    """``data.to_pylist(maps_as_pydicts="strict")`` of an Arrow array, chunked array or table (rows as dicts),
    with or without pyarrow 20's keyword."""
    import pyarrow as pa

    if int(pa.__version__.split(".")[0]) >= 20:
        return data.to_pylist(maps_as_pydicts="strict")
    rows = data.to_pylist()
    type_ = pa.struct(list(data.schema)) if isinstance(data, (pa.Table, pa.RecordBatch)) else data.type
    if not _has_map(type_):
        return rows
    return [_maps_as_dicts(row, type_) for row in rows]


__all__ = ["to_pylist"]
