"""The Puffin footer: where it sits, its payload (LZ4-compressed or not) read as JSON, its blob entries and
where they lie in the file, each problem a finding.  :class:`~.puffin.PuffinFile` reads it on open."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any, Optional

from .._gc import gc_paused
from .._text import plural
from ..errors import PuffinError
from ..regions import Finding, Severity, clip
from . import codecs
from .blob_entry import BlobEntry

MAGIC = b"PFA1"
#: FooterPayloadSize + Flags + Magic
FOOTER_TRAILER = 12
#: Magic + FooterPayload(empty) + trailer
MIN_FOOTER = 4 + FOOTER_TRAILER
DEFAULT_TAIL = 64 * 1024
FLAG_COMPRESSED = 0x1

_REQUIRED_BLOB_FIELDS = {
    "type": str,
    "fields": list,
    "snapshot-id": int,
    "sequence-number": int,
    "offset": int,
    "length": int,
}


#: Deepest nesting of arrays and objects accepted in a footer (a valid one nests 4 deep).  Checked before
#: ``json.loads``, whose C parser recurses once per level: with a raised recursion limit a crafted footer
#: would overflow the C stack instead of raising RecursionError.
MAX_JSON_DEPTH = 64


def json_depth(text: str) -> int:
    """How deep arrays and objects nest in JSON ``text`` (brackets inside strings ignored; when there are
    few brackets, their count, an upper bound); linear time, vectorized."""
    opens = text.count("[") + text.count("{")
    if opens <= MAX_JSON_DEPTH:
        return opens
    import numpy as np

    raw = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    quotes = np.flatnonzero(raw == 0x22)
    escaped = quotes[(quotes > 0) & (raw[np.maximum(quotes - 1, 0)] == 0x5C)]
    if len(escaped):  # a quote after an odd run of backslashes is part of the string
        index = np.arange(len(raw), dtype=np.int64)
        last_other = np.maximum.accumulate(np.where(raw == 0x5C, -1, index))
        run = (quotes - 1) - last_other[np.maximum(quotes - 1, 0)]
        quotes = quotes[(quotes == 0) | (run % 2 == 0)]
    opening = np.flatnonzero((raw == 0x5B) | (raw == 0x7B))
    closing = np.flatnonzero((raw == 0x5D) | (raw == 0x7D))
    # a bracket is outside strings when an even number of quotes precede it
    opening = opening[np.searchsorted(quotes, opening) % 2 == 0]
    closing = closing[np.searchsorted(quotes, closing) % 2 == 0]
    brackets = np.concatenate([opening, closing])
    steps = np.concatenate([np.ones(len(opening), np.int32), -np.ones(len(closing), np.int32)])
    steps = steps[np.argsort(brackets, kind="stable")]
    return int(np.cumsum(steps).max()) if len(steps) else 0


#: A blob's compression-codec as written by the writers that compress (absent: uncompressed).
_CODECS_AS_WRITTEN = (None, *codecs.KNOWN_CODECS)

_TYPE_WORDS = {"type": "a string", "fields": "a list of ints", "snapshot-id": "an integer",
               "sequence-number": "an integer", "offset": "an integer", "length": "an integer"}


@dataclass
class Footer:
    """Where the footer sits and what its fixed fields say."""

    offset: int  # footer start magic
    payload_offset: int
    payload_size: int
    flags: int
    payload: bytes = b""  # as stored
    text: Optional[str] = None  # decompressed UTF-8 JSON

    @property
    def compressed(self) -> bool:
        return bool(self.flags & FLAG_COMPRESSED)

    @property
    def size(self) -> int:
        """Footer bytes: magic + payload + size + flags + magic."""
        return self.payload_size + MIN_FOOTER


class FooterReader:
    """Mixin of :class:`~.puffin.PuffinFile`: the footer read from the file's ``source`` of ``size`` bytes into
    ``footer``, ``properties`` and ``blobs`` (entries made as ``_entry_type``), each problem in ``footer_findings``.
    A file that is not a Puffin file is handed to ``_sniff_other`` once its tail is read."""

    #: What the footer's entries are made as (:class:`~.puffin.BlobMetadata`, which opens its file again).
    _entry_type: type

    def _add(self, code: str, severity: Severity, offset: Optional[int], message: str, hint: str = "",
             length: Optional[int] = None) -> None:
        self.footer_findings.append(Finding(code, severity, offset, message, hint, length))

    def _read_footer(self, tail_size: int) -> None:
        size = self.size
        if size < 4:
            self._add("file.too-small", Severity.ERROR, 0,
                      f"the file has {plural(size, 'byte', sep='')}, not even the 4-byte magic PFA1")
            return
        if size < 4 + MIN_FOOTER:
            self._add("footer.missing", Severity.ERROR, 4 if size >= 4 else 0,
                      f"the file has {plural(size, 'byte', sep='')}; a Puffin file needs at least {4 + MIN_FOOTER} "
                      "(magic and footer)", "an interrupted write leaves a file like this", size - 4)
            return
        tail_start, tail = self.source.tail(min(tail_size, size))
        self.source.keep(tail_start, tail)
        end_magic = tail[-4:]
        if end_magic != MAGIC and self._sniff_other(tail_start, tail):
            return
        if end_magic != MAGIC:
            self._add("footer.magic-end", Severity.ERROR, size - 4,
                      f"the file ends with {end_magic.hex(' ')}, not the footer magic 50 46 41 31 "
                      "(PFA1): there is no footer", "the write was interrupted or the file was cut")
            return
        payload_size, flags = struct.unpack_from("<iI", tail, len(tail) - 12)
        if flags & ~FLAG_COMPRESSED:
            self._add("footer.flags-reserved", Severity.WARNING, size - 8,
                      f"reserved footer flag bits are set (flags {flags:#010x})",
                      "a newer writer may use them; this reader ignores them")
        if payload_size < 0:
            self._add("footer.payload-size-negative", Severity.ERROR, size - 12,
                      f"footer payload size is negative ({payload_size})")
            return
        footer_start = size - MIN_FOOTER - payload_size
        if footer_start < 4:
            self._add("footer.payload-size-beyond-file", Severity.ERROR, size - 12,
                      f"footer payload size {payload_size:,} needs a {payload_size + MIN_FOOTER + 4:,}-byte "
                      f"file, the file has {plural(size, 'byte')}")
            return
        if payload_size > self.max_footer_size:
            self._add("footer.too-large", Severity.ERROR, size - 12,
                      f"footer payload of {plural(payload_size, 'byte')} is above the "
                      f"{self.max_footer_size:,}-byte limit",
                      "open with a larger max_footer_size to read it")
            return
        if footer_start < tail_start:
            tail = self.source.read(footer_start, tail_start - footer_start) + tail
            tail_start = footer_start
        self.source.keep(tail_start, tail)
        rel = footer_start - tail_start
        start_magic = tail[rel:rel + 4]
        payload = tail[rel + 4:rel + 4 + payload_size]
        self.footer = Footer(footer_start, footer_start + 4, payload_size, flags, payload)
        if start_magic != MAGIC:
            self._add("footer.magic-start", Severity.ERROR, footer_start,
                      f"footer start magic is {start_magic.hex(' ')}, expected 50 46 41 31 (PFA1)",
                      "the payload size may be wrong, or bytes were inserted or removed")
        self._parse_payload(self.footer)

    @gc_paused()
    def _parse_payload(self, footer: Footer) -> None:
        data = footer.payload
        at = footer.payload_offset
        if footer.compressed:
            try:
                data = codecs.decompress(data, "lz4", self.max_footer_size)
            except PuffinError as exc:
                self._add("footer.decompress", Severity.ERROR, at,
                          f"the footer payload is flagged LZ4-compressed but cannot be decompressed: {exc}")
                return
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._add("footer.utf8", Severity.ERROR, at + (exc.start if not footer.compressed else 0),
                      f"the footer payload is not UTF-8 ({exc.reason} at payload byte {exc.start})")
            return
        footer.text = text
        depth = json_depth(text)
        if depth > MAX_JSON_DEPTH:
            self._add("footer.json", Severity.ERROR, at,
                      f"the footer JSON nests arrays or objects {depth:,} deep (a reader allows {MAX_JSON_DEPTH})",
                      "no writer nests a Puffin footer more than a few levels: the footer is damaged or hostile")
            return
        try:
            meta = json.loads(text)
        except json.JSONDecodeError as exc:
            self._add("footer.json", Severity.ERROR, at + (exc.pos if not footer.compressed else 0),
                      f"the footer payload is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})")
            return
        except RecursionError:  # pragma: no cover - json_depth rejects such footers first
            self._add("footer.json", Severity.ERROR, at, "the footer JSON nests arrays or objects too deeply to read")
            return
        except ValueError as exc:  # e.g. an integer of more than 4300 digits
            self._add("footer.json", Severity.ERROR, at, f"the footer JSON cannot be read: {str(exc).split(';')[0]}",
                      "a number in the footer is too large for any reader")
            return
        if not isinstance(meta, dict):
            self._add("footer.schema", Severity.ERROR, at,
                      f"the footer payload is a JSON {type(meta).__name__}, expected an object")
            return
        props = meta.get("properties", {})
        if not isinstance(props, dict):
            self._add("footer.schema", Severity.ERROR, at, "file 'properties' is not a JSON object")
            props = {}
        for key, value in props.items():
            if not isinstance(value, str):
                self._add("footer.property-type", Severity.WARNING, at,
                          f"file property {clip(key)} is a {type(value).__name__}, not a string")
        self.properties = props
        blobs = meta.get("blobs")
        if not isinstance(blobs, list):
            self._add("footer.schema", Severity.ERROR, at,
                      "the footer has no 'blobs' list" if blobs is None else "'blobs' is not a JSON list")
            return
        for i, raw in enumerate(blobs):
            self.blobs.append(self._blob_metadata(i, raw, at))
        self._check_layout()

    def _blob_metadata(self, i: int, raw: Any, at: int) -> BlobEntry:
        if type(raw) is dict:  # the well-formed entry every writer writes, checked at once (no finding to say)
            get = raw.get
            kind, fields, sid, seq, off, length = (get("type"), get("fields"), get("snapshot-id"),
                                                   get("sequence-number"), get("offset"), get("length"))
            codec, props = get("compression-codec"), get("properties")
            if (type(kind) is str and type(fields) is list and type(sid) is int and type(seq) is int
                    and type(off) is int and type(length) is int and codec in _CODECS_AS_WRITTEN
                    and (props is None and "properties" not in raw
                         or type(props) is dict and all(type(v) is str for v in props.values()))
                    and all(type(x) is int for x in fields)):
                return self._entry_type(i, kind, fields, sid, seq, off, length, codec, {} if props is None else props,
                                    raw, True)._attach(self)
        if not isinstance(raw, dict):
            self._add("footer.blob-field", Severity.ERROR, at, f"blob {i} is not a JSON object")
            return self._entry_type(i, None, [], None, None, None, None, raw={}, readable=False)._attach(self)
        values: dict[str, Any] = {}
        for name, kind in _REQUIRED_BLOB_FIELDS.items():
            v = raw.get(name)
            ok = isinstance(v, kind) and not isinstance(v, bool)
            if ok and name == "fields":
                ok = all(isinstance(x, int) and not isinstance(x, bool) for x in v)
            if v is None:
                self._add("footer.blob-field", Severity.ERROR, at, f"blob {i} has no required field {name!r}")
            elif not ok:
                self._add("footer.blob-field", Severity.ERROR, at,
                          f"blob {i} field {name!r} is {clip(v, 60)}, expected "
                          f"{_TYPE_WORDS[name]}")
            values[name] = v if ok else None
        codec = raw.get("compression-codec")
        if codec is not None and not isinstance(codec, str):
            self._add("footer.blob-field", Severity.ERROR, at, f"blob {i} compression-codec is not a string")
            codec = str(codec)
        codec = codecs.normalize_codec(codec)
        if codec is not None and codec not in codecs.KNOWN_CODECS:
            self._add("blob.unknown-codec", Severity.ERROR, at,
                      f"blob {i} uses compression codec {clip(codec)}; the spec knows only lz4 and zstd")
        props = raw.get("properties", {})
        if not isinstance(props, dict):
            self._add("footer.blob-field", Severity.ERROR, at, f"blob {i} 'properties' is not a JSON object")
            props = {}
        for key, value in props.items():
            if not isinstance(value, str):
                self._add("footer.property-type", Severity.WARNING, at,
                          f"blob {i} property {clip(key)} is a {type(value).__name__}, not a string")
        readable = values["offset"] is not None and values["length"] is not None
        return self._entry_type(i, values["type"], values["fields"] or [], values["snapshot-id"],
                            values["sequence-number"], values["offset"], values["length"], codec, props,
                            raw, readable)._attach(self)

    def _check_layout(self) -> None:
        assert self.footer is not None
        data_end = self.footer.offset
        placed = []
        for b in self.blobs:
            if not b.readable:
                continue
            off, ln = b.offset, b.length
            problem = None
            if ln < 0:
                problem = f"has a negative length ({ln})"
            elif off < 4:
                problem = f"starts at {off}, inside the leading magic (blobs start at 4 or later)"
            elif off + ln > self.size:
                problem = f"spans [{off:,}, {off + ln:,}), past the end of the {self.size:,}-byte file"
            elif off + ln > data_end:
                problem = f"spans [{off:,}, {off + ln:,}), overlapping the footer at {data_end:,}"
            if problem:
                b.readable = False
                self._add("blob.out-of-bounds", Severity.ERROR, max(0, min(off, self.size)),
                          f"blob {b.index} {problem}", length=max(ln, 0))
            else:
                placed.append(b)
        placed.sort(key=lambda b: (b.offset, b.length))
        covered = 4
        for prev, cur in zip([None] + placed[:-1], placed):
            if prev is not None and cur.offset < prev.end:
                self._add("blob.overlap", Severity.ERROR, cur.offset,
                          f"blob {cur.index} [{cur.offset:,}, {cur.end:,}) overlaps blob {prev.index} "
                          f"[{prev.offset:,}, {prev.end:,})", length=min(prev.end, cur.end) - cur.offset)
            if cur.offset > covered:
                self._add_gap(covered, cur.offset)
            covered = max(covered, cur.end)
        if data_end > covered:
            self._add_gap(covered, data_end)

    def _add_gap(self, start: int, end: int) -> None:
        self._add("layout.unclaimed", Severity.WARNING, start,
                  f"{plural(end - start, 'byte')} at [{start:,}, {end:,}) belong to no blob",
                  "left over from a rewrite, or a blob missing from the footer", end - start)
