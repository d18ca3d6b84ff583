"""Field ids → column names, from whatever schema the caller has (a Puffin file only stores ids)."""

from __future__ import annotations

from typing import Any, Optional


def column_names(schema: Any) -> dict[int, str]:
    """``{field_id: dotted column name}`` from a mapping, an Iceberg schema JSON dict,
    a pyiceberg ``Schema`` or a pyarrow schema whose fields carry ``PARQUET:field_id``."""
    if schema is None:
        return {}
    if isinstance(schema, dict) and "fields" not in schema:
        return {int(k): str(v) for k, v in schema.items()}
    if isinstance(schema, dict):
        out: dict[int, str] = {}
        _walk_json(schema.get("fields", []), "", out)
        return out
    if hasattr(schema, "find_column_name") and hasattr(schema, "highest_field_id"):
        out = {}
        for fid in range(1, int(schema.highest_field_id) + 1):
            try:
                name = schema.find_column_name(fid)
            except (ValueError, KeyError):
                name = None
            if name:
                out[fid] = name
        return out
    if hasattr(schema, "names") and hasattr(schema, "field"):
        out = {}
        for f in schema:
            meta = f.metadata or {}
            fid = meta.get(b"PARQUET:field_id")
            if fid is not None:
                out[int(fid)] = f.name
        return out
    raise TypeError(f"cannot read column names from a {type(schema).__name__}")


def _walk_json(fields: list, prefix: str, out: dict[int, str]) -> None:
    for f in fields:
        if not isinstance(f, dict) or "id" not in f:
            continue
        name = prefix + str(f.get("name"))
        out[int(f["id"])] = name
        t = f.get("type")
        if isinstance(t, dict) and t.get("type") == "struct":
            _walk_json(t.get("fields", []), name + ".", out)


def fields_label(fields: list, names: Optional[dict[int, str]]) -> str:
    """``[1 id, 2 name]`` when names are known, else ``[1, 2]``."""
    if not names:
        return "[" + ", ".join(str(f) for f in fields) + "]"
    return "[" + ", ".join(f"{f} {names[f]}" if f in names else str(f) for f in fields) + "]"
