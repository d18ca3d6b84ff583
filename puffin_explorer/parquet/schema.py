"""Parquet schema leaves (columns) and decoding of their statistics values."""

from __future__ import annotations

import datetime as _dt
import decimal
import struct
from dataclasses import dataclass
from typing import Any, Optional

from .spec import CONVERTED_TYPES, LOGICAL_TYPES, REPETITIONS, TYPES, enum_name
from ..regions import clip
from .thrift import TStruct


@dataclass
class ColumnInfo:
    """One leaf of the schema: a column as stored in column chunks."""

    index: int
    path: tuple[str, ...]
    physical_type: str
    logical_type: str  # STRING, DATE, DECIMAL(10,2), TIMESTAMP ... or the converted type, or ""
    repetition: str
    max_definition_level: int
    max_repetition_level: int
    type_length: Optional[int] = None
    scale: Optional[int] = None

    @property
    def name(self) -> str:
        return ".".join(self.path)


_TIME_UNITS = {"field_1": "MILLIS", "field_2": "MICROS", "field_3": "NANOS"}
_NUMPY_UNITS = {"MILLIS": "ms", "MICROS": "us", "NANOS": "ns"}


def _timestamp_unit(logical: str) -> Optional[str]:
    """numpy unit of a TIMESTAMP(MICROS) / TIMESTAMP_MILLIS logical type, else None."""
    if not logical.startswith("TIMESTAMP"):
        return None
    for name, unit in _NUMPY_UNITS.items():
        if name in logical:
            return unit
    return None


def _logical_name(element: TStruct) -> tuple[str, Optional[int]]:
    scale = element.get("scale")
    lt = element.get("logicalType")
    if isinstance(lt, TStruct) and lt.fields:
        name = next(iter(lt.fields))
        if name == "DECIMAL":
            params = lt[name]
            s = params.get("param1") if isinstance(params, TStruct) else None
            p = params.get("param2") if isinstance(params, TStruct) else None
            scale = s if isinstance(s, int) else scale
            return f"DECIMAL({p},{scale})", scale
        if name in ("TIMESTAMP", "TIME"):
            params = lt[name]
            unit = params.get("param2") if isinstance(params, TStruct) else None
            if isinstance(unit, TStruct) and unit.fields:
                unit_name = _TIME_UNITS.get(next(iter(unit.fields)), "")
                return f"{name}({unit_name})" if unit_name else name, scale
            return name, scale
        if name in LOGICAL_TYPES.values():
            return name, scale
    ct = element.get("converted_type")
    if ct is not None:
        name = enum_name(CONVERTED_TYPES, ct)
        if name == "DECIMAL":
            return f"DECIMAL({element.get('precision')},{scale})", scale
        return name, scale
    return "", scale


def columns_from_schema(elements: list) -> tuple[list[ColumnInfo], Optional[str]]:
    """Flatten the depth-first schema element list into its leaf columns.

    Returns the columns and an error message when the list is malformed
    (children counts that run past the list).
    """
    columns: list[ColumnInfo] = []
    if not elements:
        return columns, "the schema is empty"
    error: Optional[str] = None
    pos = 1

    def visit(path: tuple[str, ...], d: int, r: int, remaining: int) -> None:
        nonlocal pos, error
        for _ in range(remaining):
            if pos >= len(elements):
                error = f"the schema declares more children than its {len(elements)} elements"
                return
            el = elements[pos]
            pos += 1
            if not isinstance(el, TStruct):
                error = f"schema element {pos - 1} is not a struct"
                return
            rep = enum_name(REPETITIONS, el.get("repetition_type", 0))
            nd = d + (1 if rep in ("OPTIONAL", "REPEATED") else 0)
            nr = r + (1 if rep == "REPEATED" else 0)
            name = str(el.get("name", f"#{pos - 1}"))
            n_children = el.get("num_children")
            if isinstance(n_children, int) and n_children > 0:
                if len(path) >= 100:
                    error = "the schema nests deeper than 100 levels"
                    return
                visit(path + (name,), nd, nr, n_children)
                if error:
                    return
            else:
                logical, scale = _logical_name(el)
                columns.append(ColumnInfo(
                    index=len(columns), path=path + (name,),
                    physical_type=enum_name(TYPES, el.get("type")), logical_type=logical,
                    repetition=rep, max_definition_level=nd, max_repetition_level=nr,
                    type_length=el.get("type_length"), scale=scale))

    root = elements[0]
    n_root = root.get("num_children", 0) if isinstance(root, TStruct) else 0
    visit((), 0, 0, int(n_root or 0))
    if error is None and pos != len(elements):
        error = f"the schema has {len(elements) - pos} elements outside the root's children"
    return columns, error


def decode_stat(raw: Any, column: Optional[ColumnInfo]) -> Any:
    """A statistics value (min/max bytes) as a Python value of the column's type.

    Falls back to the hex string when the bytes do not fit the type.
    """
    if not isinstance(raw, (bytes, bytearray)) or column is None:
        return raw
    t, lt = column.physical_type, column.logical_type
    try:
        if t == "BOOLEAN":
            return bool(raw[0]) if len(raw) == 1 else raw.hex()
        if t in ("INT32", "INT64"):
            fmt = "<i" if t == "INT32" else "<q"
            if len(raw) != struct.calcsize(fmt):
                return raw.hex()
            (v,) = struct.unpack(fmt, raw)
            if lt == "DATE":
                return _dt.date(1970, 1, 1) + _dt.timedelta(days=v)
            unit = _timestamp_unit(lt)
            if unit is not None and t == "INT64":
                import numpy as np

                return np.datetime64(v, unit)
            if lt.startswith("DECIMAL") and column.scale:
                return decimal.Decimal(v).scaleb(-column.scale)
            return v
        if t in ("FLOAT", "DOUBLE"):
            fmt = "<f" if t == "FLOAT" else "<d"
            if len(raw) != struct.calcsize(fmt):
                return raw.hex()
            return struct.unpack(fmt, raw)[0]
        if t in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
            if lt in ("STRING", "UTF8", "ENUM", "JSON"):
                return bytes(raw).decode("utf-8", "replace")
            if lt.startswith("DECIMAL") and column.scale is not None and raw:
                return decimal.Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-column.scale)
            return bytes(raw).hex()
    except (ValueError, OverflowError, IndexError):
        return bytes(raw).hex()
    return bytes(raw).hex()


_SCHEMA_ENUMS = (("type", TYPES, "physical type"), ("repetition_type", REPETITIONS, "repetition"),
                 ("converted_type", CONVERTED_TYPES, "converted type"))


def schema_enum_problems(elements: list) -> list[tuple[int, int, str]]:
    """``(offset, length, message)`` for each schema element whose type, repetition or converted
    type is not a value the format defines (a corrupted footer shows them as ``UNKNOWN(n)``)."""
    out = []
    for i, el in enumerate(elements):
        if not isinstance(el, TStruct):
            continue
        for key, table, what in _SCHEMA_ENUMS:
            value = el.get(key)
            if value is None or (isinstance(value, int) and not isinstance(value, bool) and value in table):
                continue
            start, end = el.spans.get(key, (el.offset, el.offset))[:2]
            out.append((start, end - start,
                        f"schema element {i} ({clip(el.get('name', '?'), 60)[1:-1]}): {what} {clip(value)} "
                        f"is not one of {', '.join(table.values())}"))
    return out
