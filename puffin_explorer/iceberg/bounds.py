"""Iceberg single-value serialization (table spec, Appendix D): bound bytes -> typed values."""

from __future__ import annotations

import datetime as _dt
import decimal
import re
import struct
import uuid
from typing import Any

_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_TZ = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_FIXED = re.compile(r"^fixed\[\s*(\d+)\s*\]$")


class BoundDecodeError(ValueError):
    """The bytes do not fit the column's type."""


def _int_le(data: bytes, signed: bool = True) -> int:
    return int.from_bytes(data, "little", signed=signed)


def _after(epoch: Any, type_name: str, **delta: int) -> Any:
    """``epoch`` plus ``delta``; a value past the years Python's dates hold (1 to 9999) is a
    :class:`BoundDecodeError` naming it, not an ``OverflowError``."""
    try:
        return epoch + _dt.timedelta(**delta)
    except OverflowError:
        (unit, value), = delta.items()
        raise BoundDecodeError(f"{type_name} {value:,} {unit} from 1970-01-01 is outside the years 1 to 9999") \
            from None


def decode_value(type_name: Any, data: bytes) -> Any:
    """Decode one single-value-serialized ``data`` of Iceberg primitive type ``type_name``.

    Nested and unknown types come back as the raw bytes.  A 4-byte bound on a
    ``long`` column (written before an int -> long promotion) is read as an int,
    and a 4-byte bound on a ``double`` column as a float, as the spec allows.
    """
    if not isinstance(type_name, str):
        return bytes(data)
    t = type_name.strip().lower()
    n = len(data)
    if t == "boolean":
        if n != 1:
            raise BoundDecodeError(f"boolean needs 1 byte, got {n}")
        return data[0] != 0
    if t == "int":
        if n != 4:
            raise BoundDecodeError(f"int needs 4 bytes, got {n}")
        return _int_le(data)
    if t == "long":
        if n not in (4, 8):
            raise BoundDecodeError(f"long needs 8 bytes, got {n}")
        return _int_le(data)
    if t == "float":
        if n != 4:
            raise BoundDecodeError(f"float needs 4 bytes, got {n}")
        return struct.unpack("<f", data)[0]
    if t == "double":
        if n == 4:
            return struct.unpack("<f", data)[0]
        if n != 8:
            raise BoundDecodeError(f"double needs 8 bytes, got {n}")
        return struct.unpack("<d", data)[0]
    if t == "date":
        if n != 4:
            raise BoundDecodeError(f"date needs 4 bytes, got {n}")
        return _after(_EPOCH_DATE, t, days=_int_le(data))
    if t == "time":
        if n != 8:
            raise BoundDecodeError(f"time needs 8 bytes, got {n}")
        micros = _int_le(data)
        if not 0 <= micros < 86_400_000_000:
            raise BoundDecodeError(f"time {micros:,} microseconds is not within a day")
        return _after(_EPOCH, t, microseconds=micros).time()
    if t in ("timestamp", "timestamptz"):
        if n != 8:
            raise BoundDecodeError(f"{t} needs 8 bytes, got {n}")
        return _after(_EPOCH_TZ if t == "timestamptz" else _EPOCH, t, microseconds=_int_le(data))
    if t in ("timestamp_ns", "timestamptz_ns"):
        if n != 8:
            raise BoundDecodeError(f"{t} needs 8 bytes, got {n}")
        import pandas as pd

        ts = pd.Timestamp(_int_le(data), unit="ns")
        return ts.tz_localize("UTC") if t == "timestamptz_ns" else ts
    if t == "string":
        try:
            return bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BoundDecodeError(f"string bound is not UTF-8: {exc}") from exc
    if t == "uuid":
        if n != 16:
            raise BoundDecodeError(f"uuid needs 16 bytes, got {n}")
        return uuid.UUID(bytes=bytes(data))
    if t == "binary":
        return bytes(data)
    m = _FIXED.match(t)
    if m:
        return bytes(data)
    m = _DECIMAL.match(t)
    if m:
        scale = int(m.group(2))
        unscaled = int.from_bytes(data, "big", signed=True) if n else 0
        return decimal.Decimal(unscaled).scaleb(-scale)
    return bytes(data)


def field_of(fields_by_id: dict[int, tuple[str, Any]], field_id: Any) -> tuple[str, Any]:
    """``(column name, type)`` of a metrics map's key: ``("#<id>", None)`` for an id the schema lacks, or a key
    that is no id at all (a damaged manifest's null)."""
    try:
        return fields_by_id.get(int(field_id), (f"#{field_id}", None))
    except (TypeError, ValueError):
        return f"#{field_id}", None


def column_names(raw: Any, fields_by_id: dict[int, tuple[str, Any]]) -> dict[str, Any]:
    """A metrics count map (list of ``{key, value}``) as ``{column name: value}`` (see :func:`field_of`)."""
    return {field_of(fields_by_id, kv["key"])[0]: kv["value"] for kv in raw} if raw else {}


def decode_bounds(raw: Any, fields_by_id: dict[int, tuple[str, Any]]) -> dict[str, Any]:
    """Turn a manifest bounds map (list of ``{key, value}`` or dict) into ``{column name: value}``.

    Columns not in the schema keep their id as ``"#<id>"``; bytes that do not
    fit the type are shown as ``"<bad bound: hex>"`` rather than raising.
    """
    if not raw:
        return {}
    items = raw.items() if isinstance(raw, dict) else ((kv["key"], kv["value"]) for kv in raw)
    out: dict[str, Any] = {}
    for field_id, value in items:
        name, type_name = field_of(fields_by_id, field_id)
        try:
            out[name] = decode_value(type_name, value) if type_name is not None else bytes(value)
        except BoundDecodeError as exc:
            out[name] = f"<bad bound: {bytes(value).hex()} ({exc})>"
    return out
