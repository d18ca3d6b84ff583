"""A lenient reader of Avro object container files (manifests): every record before the damage.

The container is walked block by block here (header, metadata map, sync marker, then per block:
record count, byte size, bytes, sync marker); records are decoded with fastavro's
``schemaless_reader``, optionally through a *reader schema* that keeps only the fields asked for
(fastavro skips the others without building them).  Damage — a bad magic, a truncated block, a
block count larger than its bytes can hold, a sync marker that differs from the header's, a record
that does not decode — ends the walk with an :class:`AvroDamage` naming the byte it starts at; the
records decoded before it are kept.  No count or size read from the file sizes an allocation or a
loop beyond the bytes present.
"""

from __future__ import annotations

import io
import json
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .._text import plural

MAGIC = b"Obj\x01"
#: The block codecs this reader inflates (a container with another codec is damage here, ``codec …``).
CODECS = ("null", "deflate")
#: A deflate block may not inflate past this (a manifest block is a few MB at most).
MAX_INFLATED_BLOCK = 256 << 20

_PARSED: dict[tuple[str, Optional[str]], tuple[Any, Any]] = {}  # (writer text, reader text) -> parsed pair


@dataclass(frozen=True)
class AvroDamage:
    """Where and why a container stopped being readable."""

    offset: int
    reason: str


@dataclass
class AvroRecords:
    """What was read from one container: its metadata, the records, the claimed count, the damage."""

    metadata: dict[str, str]
    writer_schema: Any
    records: list
    claimed: int
    damage: Optional[AvroDamage] = None


class _Stop(Exception):
    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(reason)
        self.damage = AvroDamage(offset, reason)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    start = pos
    n = len(data)
    while True:
        if pos >= n:
            raise _Stop(start, "truncated varint")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
        if shift > 63:
            raise _Stop(start, "varint longer than 10 bytes")


def _header(data: bytes) -> tuple[dict[str, str], bytes, int]:
    """The metadata map and sync marker; returns the offset of the first block."""
    if data[:4] != MAGIC:
        raise _Stop(0, "not an Avro object container file (no 'Obj\\x01' magic)")
    pos, meta = 4, {}
    while True:
        at = pos
        count, pos = _varint(data, pos)
        if count == 0:
            break
        if count < 0:  # a negative block count is followed by the block's byte size
            count = -count
            _, pos = _varint(data, pos)
        if count * 2 > len(data) - pos:  # every entry needs a key length and a value length
            raise _Stop(at, f"metadata map claims {plural(count, 'entry')} in {plural(len(data) - pos, 'byte')}")
        for _ in range(count):
            parts = []
            for _part in (0, 1):
                size, pos = _varint(data, pos)
                if size < 0 or size > len(data) - pos:
                    raise _Stop(pos, f"metadata string of {plural(size, 'byte')} with {len(data) - pos:,} left")
                parts.append(data[pos:pos + size])
                pos += size
            meta[parts[0].decode("utf-8", "replace")] = parts[1].decode("utf-8", "replace")
    if len(data) - pos < 16:
        raise _Stop(pos, "truncated header: no sync marker")
    return meta, bytes(data[pos:pos + 16]), pos + 16


def parsed_schemas(writer_text: str, project: Optional[Callable[[Any], Any]] = None,
                   project_key: Optional[str] = None) -> tuple[Any, Any]:
    """fastavro's parsed writer schema and, with ``project``, the parsed reader schema it returns
    for the writer schema's JSON; both parsed once per distinct schema (a table's manifests share a few)."""
    import fastavro

    key = (writer_text, project_key)
    got = _PARSED.get(key)
    if got is None:
        writer_json = json.loads(writer_text)
        writer = fastavro.parse_schema(writer_json)
        reader = fastavro.parse_schema(project(json.loads(writer_text))) if project else None
        got = _PARSED[key] = (writer, reader)
    return got


def read_records(data: bytes, project: Optional[Callable[[Any], Any]] = None,
                 project_key: Optional[str] = None) -> AvroRecords:
    """Every record of the container that decodes, and the damage that ended the walk (if any)."""
    import fastavro

    try:
        meta, sync, pos = _header(data)
    except _Stop as stop:
        return AvroRecords({}, None, [], 0, stop.damage)
    text = meta.get("avro.schema")
    codec = meta.get("avro.codec", "null") or "null"
    try:
        writer, reader = parsed_schemas(text, project, project_key)
    except Exception as exc:  # noqa: BLE001 - fastavro raises many types on a bad schema
        return AvroRecords(meta, None, [], 0, AvroDamage(0, f"schema unreadable: {type(exc).__name__}: {exc}"))
    if codec not in CODECS:
        return AvroRecords(meta, writer, [], 0, AvroDamage(pos, f"codec {codec!r} not supported ({', '.join(CODECS)})"))
    out: list = []
    claimed = 0
    end = len(data)
    read = fastavro.schemaless_reader
    try:
        while pos < end:
            block_at = pos
            count, pos = _varint(data, pos)
            size, pos = _varint(data, pos)
            if count < 0 or size < 0:
                raise _Stop(block_at, f"block with {plural(count, 'record')} and {plural(size, 'byte')}")
            claimed += count
            present = min(size, end - pos)
            raw = data[pos:pos + present]
            if codec == "deflate":
                inflater = zlib.decompressobj(-15)
                try:
                    body = inflater.decompress(raw, MAX_INFLATED_BLOCK)
                except zlib.error as exc:
                    raise _Stop(pos, f"deflate block does not inflate: {exc}") from None
            else:
                body = raw
            if count > len(body):  # every manifest record holds at least one byte
                if present == size:
                    raise _Stop(block_at, f"block claims {plural(count, 'record')} in {plural(len(body), 'byte')}")
            buf = io.BytesIO(body)
            complete = present == size
            for i in range(count):
                at = buf.tell()
                if at >= len(body):
                    break
                try:
                    rec = read(buf, writer, reader) if reader is not None else read(buf, writer, None)
                except Exception as exc:  # noqa: BLE001
                    where = pos + at if codec == "null" else pos
                    if not complete:
                        break
                    raise _Stop(where, f"record {i} of the block does not decode: {type(exc).__name__}") from None
                if buf.tell() <= at or buf.tell() > len(body) or (not complete and buf.tell() >= len(body)):
                    break  # read nothing, or past the bytes present: the record was cut
                out.append(rec)
            else:
                i = count
            if not complete:
                raise _Stop(block_at, f"block of {plural(size, 'byte')} at byte {block_at:,} runs past the end of the "
                                      f"file ({plural(end, 'byte')})")
            if i < count or buf.tell() != len(body):
                raise _Stop(block_at, f"block claims {plural(count, 'record')} but its bytes hold {i:,}")
            pos += size
            if data[pos:pos + 16] != sync:
                raise _Stop(pos, "sync marker differs from the header's" if end - pos >= 16 else
                            "truncated sync marker")
            pos += 16
    except _Stop as stop:
        return AvroRecords(meta, writer, out, max(claimed, len(out)), stop.damage)
    return AvroRecords(meta, writer, out, claimed)


def scan(data: bytes) -> tuple[dict[str, str], int, Optional[AvroDamage]]:
    """The container's metadata, the record count its blocks claim, and the first structural damage
    (magic, metadata, block header, truncation, sync marker), without decoding a record."""
    try:
        meta, sync, pos = _header(data)
    except _Stop as stop:
        return {}, 0, stop.damage
    claimed, end = 0, len(data)
    ratio = 1 if meta.get("avro.codec", "null") in ("null", "") else 1032  # deflate inflates at most ~1032:1
    try:
        while pos < end:
            block_at = pos
            count, pos = _varint(data, pos)
            size, pos = _varint(data, pos)
            if count < 0 or size < 0 or count > size * ratio:  # a manifest record is at least one byte
                raise _Stop(block_at, f"block claims {plural(count, 'record')} in {plural(size, 'byte')}")
            if size > end - pos:
                raise _Stop(block_at, f"block of {plural(size, 'byte')} at byte {block_at:,} runs past the end of the "
                                      f"file ({plural(end, 'byte')})")
            claimed += count
            pos += size
            if data[pos:pos + 16] != sync:
                raise _Stop(pos, "sync marker differs from the header's")
            pos += 16
    except _Stop as stop:
        return meta, claimed, stop.damage
    return meta, claimed, None
