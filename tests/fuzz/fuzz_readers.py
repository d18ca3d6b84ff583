"""Mutation fuzzer for the Puffin, deletion-vector, theta and Parquet readers and every view of them.

It mutates the project's samples (``resources/*.puffin``, ``resources/*.parquet``,
``resources/parquet-testing/*.parquet``) and the reference fixtures
(``resources/fixtures``): byte-level (bit flips, byte values, truncation, cut
heads, deletions, insertions, duplications, splices of two files) and
structure-aware (footer JSON rewrites: deep nesting, huge integers, long
strings, thousands of blob entries, blob offsets / lengths / codecs / types /
properties; any decoded field of a blob -- Roaring headers, run and array
containers, DV length / magic / CRC, theta preambles -- with and without the
DV's CRC fixed afterwards, inside compressed blobs too; Parquet Thrift fields,
deep nesting and huge list headers in the footer).  Each case then does what a
user does (open, findings, decode every blob, positions / ranges / containers,
regions, text, HTML, hex view; ``ParquetLayout`` with its tables, views, hex
view and a DV overlay).

Cases run in a pool of worker processes, each with an address-space limit
(``RLIMIT_AS``) and a CPU-time limit per case.  A worker that runs out of memory
or time, or dies, is replaced.  Outcomes:

``ok``          every path ran;
``documented``  a path documented to raise raised a ``PuffinError`` (``blob.decode()``,
                ``read_dv``, theta estimates of an unreadable sketch, anything with ``strict=True``);
``crash``       any other exception (or one from a path that must never raise: findings,
                views, tables, regions, hex);
``stall``       one operation of a case (opening the file, its findings, one view, one blob's decode)
                used more CPU time than ``--time-limit``, or the whole case more than ``--case-limit``
                (15 times as much by default), or the worker hung;
``memory``      ``MemoryError`` under the address-space limit, or a worker killed by the OS.

With ``--strict`` files are opened with ``strict=True`` and only ``PuffinError``
subclasses may escape.  Cases are generated from ``(seed, index)``, so any case
can be replayed: ``--replay-case N`` runs one case in this process and prints its
traceback; ``--save DIR`` writes the input of each failing case.

    python tests/fuzz/fuzz_readers.py --cases 100000            # the long run
    python tests/fuzz/fuzz_readers.py --cases 3000 --seed 1      # what the test suite runs
"""

from __future__ import annotations

import argparse
import json
import os
import random
import struct
import sys
import time
import traceback
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

# Keep the workers' address space small and predictable before numpy loads.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("MPLBACKEND", "Agg")

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz_pool  # noqa: E402
from fuzz_pool import GIB, Outcome, Report, Stall, describe  # noqa: E402
FIXTURES = Path(os.environ.get("PUFFIN_EXPLORER_FIXTURES", ROOT / "resources" / "fixtures"))

OUTCOMES = ("ok", "documented", "crash", "stall", "memory")
#: Corpus files above this size are skipped (the fuzzer rewrites whole files).
MAX_BASE = 512 * 1024


# ---------------------------------------------------------------------------- corpus
@dataclass
class Base:
    """One corpus file and what the structure-aware mutators need to know about it."""

    name: str
    kind: str  # "puffin", "parquet" or "dv" (a bare deletion-vector blob)
    data: bytes
    meta: Optional[dict] = None  # Puffin footer JSON
    blobs: list = field(default_factory=list)  # Puffin: (offset, length, codec, type, content bytes)
    fields: list = field(default_factory=list)  # (offset, length, kind, blob index or -1) of leaf regions
    footer: Optional[tuple[int, int]] = None  # Parquet FileMetaData (offset, length)


def corpus_paths() -> list[Path]:
    res = ROOT / "resources"
    paths = sorted(res.glob("*.puffin")) + sorted(res.glob("*.parquet")) + sorted(res.glob("parquet-testing/*.parquet"))
    if FIXTURES.is_dir():
        paths += sorted((FIXTURES / "puffin").rglob("*.puffin")) + sorted((FIXTURES / "puffin").rglob("*.bin"))
        paths += sorted((FIXTURES / "dv-blobs").glob("*.bin"))
        paths += sorted(p for p in FIXTURES.rglob("*.parquet") if p.stat().st_size <= 64 * 1024)[:12]
    return [p for p in paths if p.stat().st_size <= MAX_BASE]


def load_corpus() -> list[Base]:
    out = []
    for p in corpus_paths():
        rel = str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p.relative_to(FIXTURES.parent))
        out.append(load_base(rel, p.read_bytes()))
    return out


def load_base(rel: str, data: bytes) -> Base:
    """``data`` as a corpus entry named ``rel``, with its fields and blobs located for the structure-aware mutators."""
    from puffin_explorer import ParquetLayout, PuffinFile
    from puffin_explorer.format import codecs

    if data[:4] == b"PAR1" or data[-4:] == b"PAR1":
        b = Base(rel, "parquet", data)
        pl = ParquetLayout(data)
        if pl.footer_offset is not None:
            b.footer = (pl.footer_offset, pl.footer_length)
        b.fields = [(r.offset, r.length, r.kind, -1) for r in pl.regions().leaves() if 0 < r.length <= 16]
        return b
    if data[:4] != b"PFA1" and data[4:8] == b"\xd1\xd3\x39\x64":
        from puffin_explorer import DeletionVector

        b = Base(rel, "dv", data)
        b.fields = [(r.offset, r.length, r.kind, 0) for top in DeletionVector.from_bytes(data).regions()
                    for r in top.leaves() if 0 < r.length <= 16]
        return b
    b = Base(rel, "puffin", data)
    pf = PuffinFile(data)
    if pf.footer is not None and pf.footer.text:
        try:
            b.meta = json.loads(pf.footer.text)
        except ValueError:
            b.meta = None
    for blob in pf.blobs:
        if not blob.readable:
            continue
        stored = data[blob.offset:blob.offset + blob.length]
        try:
            content = codecs.decompress(stored, blob.compression_codec)
        except Exception:
            content = None
        b.blobs.append((blob.offset, blob.length, blob.compression_codec, blob.type, content))
        if content is not None:
            try:
                dec = blob.decode()
            except Exception:
                continue
            base_off = blob.offset if blob.compression_codec is None else 0
            for top in dec.regions():
                for r in top.leaves():
                    if 0 < r.length <= 16:
                        b.fields.append((r.offset - base_off, r.length, r.kind, len(b.blobs) - 1))
    b.fields += [(r.offset, r.length, r.kind, -1) for r in pf.regions(decode=False).leaves()
                 if 0 < r.length <= 16 and r.space == "file"]
    return b


# ---------------------------------------------------------------------------- mutators
INTERESTING8 = [0x00, 0x01, 0x7F, 0x80, 0xFF, 0x10, 0x40]


def interesting_int(rng: random.Random, nbytes: int) -> int:
    top = (1 << (8 * nbytes)) - 1
    return rng.choice([0, 1, 2, top, top - 1, top >> 1, (top >> 1) + 1, rng.randrange(top + 1),
                       rng.randrange(min(top, 70000) + 1), 4096, 4097, 65535, 65536, 12346, 12347]) & top


def m_flip(rng, b: Base, corpus) -> bytes:
    d = bytearray(b.data)
    for _ in range(rng.choice([1, 1, 2, 4, 8])):
        if d:
            d[rng.randrange(len(d))] ^= 1 << rng.randrange(8)
    return bytes(d)


def m_bytes(rng, b: Base, corpus) -> bytes:
    d = bytearray(b.data)
    for _ in range(rng.randint(1, 4)):
        if d:
            d[rng.randrange(len(d))] = rng.choice(INTERESTING8 + [rng.randrange(256)])
    return bytes(d)


def m_truncate(rng, b: Base, corpus) -> bytes:
    n = len(b.data)
    cut = rng.choice([rng.randrange(n + 1), n - rng.randint(1, min(n, 64)) if n else 0, rng.randint(0, min(n, 64))])
    return b.data[:max(0, cut)]


def m_cut_head(rng, b: Base, corpus) -> bytes:
    return b.data[rng.randint(1, max(1, min(len(b.data), rng.choice([4, 16, 256, len(b.data)])))):]


def m_delete(rng, b: Base, corpus) -> bytes:
    n = len(b.data)
    if n < 2:
        return b.data
    a = rng.randrange(n)
    return b.data[:a] + b.data[a + rng.randint(1, min(n - a, rng.choice([1, 4, 64, 4096]))):]


def m_insert(rng, b: Base, corpus) -> bytes:
    a = rng.randrange(len(b.data) + 1)
    k = rng.choice([1, 4, 64, 4096])
    blob = bytes(rng.randrange(256) for _ in range(min(k, 64))) * max(1, k // 64)
    return b.data[:a] + blob + b.data[a:]


def m_duplicate(rng, b: Base, corpus) -> bytes:
    n = len(b.data)
    if not n:
        return b"\x00"  # a mutation always changes the bytes (a one-byte file is duplicated below)
    a = rng.randrange(n)
    e = min(n, a + rng.randint(1, 8192))
    at = rng.randrange(n + 1)
    return b.data[:at] + b.data[a:e] * rng.choice([1, 2, 16]) + b.data[at:]


def m_splice(rng, b: Base, corpus) -> bytes:
    other = rng.choice(corpus)
    return b.data[:rng.randrange(len(b.data) + 1)] + other.data[rng.randrange(len(other.data) + 1):]


def _field_value(rng, length: int) -> bytes:
    choice = rng.randrange(6)
    if choice == 0:
        return bytes([rng.choice(INTERESTING8)]) * length
    if choice == 1:
        return bytes(rng.randrange(256) for _ in range(length))
    v = interesting_int(rng, min(length, 8))
    return v.to_bytes(min(length, 8), rng.choice(["little", "big"])) + b"\x00" * max(0, length - 8)


def fix_dv_crc(d: bytearray, start: int, end: int) -> None:
    """Make the DV in ``d[start:end]`` pass its CRC (and its length prefix), so parsing goes deeper."""
    if end - start < 12:
        return
    struct.pack_into(">I", d, start, end - start - 8)
    struct.pack_into(">I", d, end - 4, zlib.crc32(bytes(d[start + 4:end - 4])) & 0xFFFFFFFF)


def _mutate_fields(rng, content: bytearray, fields: list, k: int) -> None:
    for _ in range(k):
        off, ln, _, _ = rng.choice(fields)
        if 0 <= off and off + ln <= len(content):
            content[off:off + ln] = _field_value(rng, ln)


def m_field(rng, b: Base, corpus) -> bytes:
    """Overwrite decoded fields (container headers, counts, keys, cookies, preambles, Thrift fields)."""
    if not b.fields:
        return m_bytes(rng, b, corpus)
    blob_fields: dict[int, list] = {}
    for f in b.fields:
        blob_fields.setdefault(f[3], []).append(f)
    which = rng.choice(sorted(blob_fields))
    fields = blob_fields[which]
    if b.kind != "puffin" or which < 0:
        d = bytearray(b.data)
        _mutate_fields(rng, d, fields, rng.choice([1, 1, 2, 3]))
        if b.kind == "dv" and rng.random() < 0.6:
            fix_dv_crc(d, 0, len(d))
        return bytes(d)
    off, length, codec, btype, content = b.blobs[which]
    content = bytearray(content)
    _mutate_fields(rng, content, fields, rng.choice([1, 1, 2, 3]))
    if btype == "deletion-vector-v1" and rng.random() < 0.6:
        fix_dv_crc(content, 0, len(content))
    return rebuild_blob(b, which, bytes(content), codec)


def m_blob_bytes(rng, b: Base, corpus) -> bytes:
    """Byte-level damage inside one blob's decompressed content, recompressed with its codec."""
    if not b.blobs:
        return m_flip(rng, b, corpus)
    which = rng.randrange(len(b.blobs))
    off, length, codec, btype, content = b.blobs[which]
    if content is None:
        return m_flip(rng, b, corpus)
    inner = Base("", "", content)
    content = rng.choice([m_flip, m_bytes, m_truncate, m_delete, m_duplicate])(rng, inner, corpus)
    if btype == "deletion-vector-v1" and rng.random() < 0.5:
        c = bytearray(content)
        fix_dv_crc(c, 0, len(c))
        content = bytes(c)
    if rng.random() < 0.15:
        codec = rng.choice([None, "zstd", "lz4"])
    return rebuild_blob(b, which, content, codec)


def rebuild_blob(b: Base, which: int, content: bytes, codec: Optional[str]) -> bytes:
    """The file with blob ``which`` replaced (compressed with ``codec``) and the footer rewritten to match."""
    from puffin_explorer.format import codecs

    stored = codecs.compress(content, codec)
    off, length = b.blobs[which][0], b.blobs[which][1]
    data = b.data[:off] + stored + b.data[off + length:]
    if b.meta is None:
        return data
    meta = json.loads(json.dumps(b.meta))
    delta = len(stored) - length
    for entry in meta.get("blobs", []):
        if not isinstance(entry, dict) or not isinstance(entry.get("offset"), int):
            continue
        if entry["offset"] == off:
            entry["length"] = len(stored)
            if codec is None:
                entry.pop("compression-codec", None)
            else:
                entry["compression-codec"] = codec
        elif entry["offset"] > off:
            entry["offset"] += delta
    footer_start = _footer_start(b.data)
    if footer_start is None:
        return data
    return assemble(data[:footer_start + delta], json.dumps(meta), compressed=_footer_compressed(b.data))


def _footer_start(data: bytes) -> Optional[int]:
    if len(data) < 16 or data[-4:] != b"PFA1":
        return None
    (size,) = struct.unpack_from("<i", data, len(data) - 12)
    start = len(data) - 16 - size
    return start if 4 <= start <= len(data) - 16 and size >= 0 else None


def _footer_compressed(data: bytes) -> bool:
    return len(data) >= 8 and bool(struct.unpack_from("<I", data, len(data) - 8)[0] & 1)


def assemble(body: bytes, footer_text: str, compressed: bool = False, flags_extra: int = 0,
             size_delta: int = 0) -> bytes:
    """``body`` (magic and blobs) followed by a footer holding ``footer_text``."""
    payload = footer_text.encode("utf-8", "surrogatepass")
    if compressed:
        import lz4.frame

        payload = lz4.frame.compress(payload, store_size=True)
    flags = (1 if compressed else 0) | flags_extra
    return body + b"PFA1" + payload + struct.pack("<iI", len(payload) + size_delta, flags) + b"PFA1"


def _json_value(rng) -> Any:
    return rng.choice([None, True, -1, 0, 2 ** 31, 2 ** 63, -(2 ** 63) - 1, 1.5, "", "x", "12", "-3", [], {},
                       [1, 2], {"a": 1}, "lz4", "zstd", "deletion-vector-v1", "apache-datasketches-theta-v1"])


def m_footer(rng, b: Base, corpus) -> bytes:
    """Rewrite the footer JSON: nesting, huge numbers, long strings, many blobs, wrong fields."""
    if b.kind != "puffin" or b.meta is None or _footer_start(b.data) is None:
        return m_truncate(rng, b, corpus)
    meta = json.loads(json.dumps(b.meta))
    blobs = meta.get("blobs") if isinstance(meta.get("blobs"), list) else []
    placeholders: dict[str, str] = {}

    def hole(text: str) -> str:
        key = f"@@{len(placeholders)}@@"
        placeholders[key] = text
        return key

    op = rng.choice(["nest", "nest", "huge-int", "long-string", "many-blobs", "field", "field", "range", "range",
                     "codec", "type", "drop", "props", "shape", "flags"])
    entry = rng.choice(blobs) if blobs and all(isinstance(x, dict) for x in blobs) else None
    depth = rng.choice([50, 900, 1000, 5000, 100_000])
    if op == "nest":
        opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
        nested = hole(opener * depth + "1" + closer * depth)
        target = entry if entry is not None and rng.random() < 0.6 else meta
        target[rng.choice(["properties", "fields", "offset", "x-extra"])] = nested
    elif op == "huge-int" and entry is not None:
        digits = rng.choice([20, 400, 4301, 5000, 20_000])
        entry[rng.choice(["offset", "length", "snapshot-id", "sequence-number"])] = hole(
            rng.choice(["", "-"]) + "9" * digits)
    elif op == "long-string":
        n = rng.choice([1000, 100_000, 1_000_000])
        text = rng.choice(["x", "é", "\u202e", "<b>&", "\x00"]) * n
        if entry is not None and rng.random() < 0.5:
            key = rng.choice(["type", "compression-codec", "properties"])
            entry[key] = text if key != "properties" else {"cardinality": text, "referenced-data-file": text}
        else:
            meta.setdefault("properties", {})[rng.choice(["created-by", text[:200]])] = text
    elif op == "many-blobs" and blobs:
        n = rng.choice([1000, 5000, 20_000])
        meta["blobs"] = [dict(rng.choice(blobs)) if isinstance(rng.choice(blobs), dict) else {} for _ in range(n)]
        if rng.random() < 0.5:
            for i, e in enumerate(meta["blobs"]):
                if isinstance(e.get("offset"), int):
                    e["offset"] = 4 + (i * 7) % max(1, len(b.data))
    elif op == "field" and entry is not None:
        entry[rng.choice(["type", "fields", "snapshot-id", "sequence-number", "offset", "length",
                          "compression-codec", "properties"])] = _json_value(rng)
    elif op == "range" and entry is not None:
        key = rng.choice(["offset", "length"])
        v = entry.get(key) if isinstance(entry.get(key), int) else 0
        entry[key] = rng.choice([v + 1, v - 1, v + rng.randint(-64, 64), 0, 4, len(b.data), len(b.data) - 1,
                                 2 ** 31 - 1, 2 ** 40, -4, v * 2])
    elif op == "codec" and entry is not None:
        entry["compression-codec"] = rng.choice(["zstd", "lz4", "none", "ZSTD", "snappy", None, "", 7])
        if entry["compression-codec"] is None:
            entry.pop("compression-codec")
    elif op == "type" and entry is not None:
        entry["type"] = rng.choice(["deletion-vector-v1", "apache-datasketches-theta-v1", "x-unknown-v1", ""])
    elif op == "drop" and entry is not None and entry:
        entry.pop(rng.choice(sorted(entry)))
    elif op == "props" and entry is not None:
        props = entry.setdefault("properties", {}) if isinstance(entry.get("properties"), dict) else {}
        entry["properties"] = props
        props[rng.choice(["cardinality", "ndv", "referenced-data-file"])] = _json_value(rng)
    elif op == "shape":
        meta = rng.choice([[], "x", 1, {"blobs": {}}, {"blobs": [1, "x", None]}, {"properties": []}, {}])
    text = json.dumps(meta)
    for key, value in placeholders.items():
        text = text.replace(json.dumps(key), value)
    body = b.data[:_footer_start(b.data)]
    compressed = _footer_compressed(b.data) if rng.random() < 0.8 else not _footer_compressed(b.data)
    return assemble(body, text, compressed=compressed,
                    flags_extra=(1 << rng.randrange(1, 31)) if op == "flags" else 0,
                    size_delta=rng.choice([0] * 9 + [rng.randint(-8, 8)]))


def m_thrift(rng, b: Base, corpus) -> bytes:
    """Parquet footer surgery: deep nesting, huge list headers, long varints; the footer length kept right."""
    if b.kind != "parquet" or b.footer is None:
        return m_flip(rng, b, corpus)
    start, length = b.footer
    footer = bytearray(b.data[start:start + length])
    op = rng.randrange(4)
    at = rng.randrange(len(footer) + 1)
    if op == 0:  # nested structs: field delta 1, type struct, over and over
        footer[at:at] = b"\x1c" * rng.choice([100, 1000, 20_000])
    elif op == 1:  # nested lists of lists
        footer[at:at] = b"\x19\x19" * rng.choice([100, 1000, 20_000])
    elif op == 2:  # a list header claiming billions of struct elements
        footer[at:at] = b"\xfc" + b"\xff\xff\xff\xff\x0f"
    else:  # a varint that never ends, or a binary claiming a huge length
        footer[at:at] = rng.choice([b"\x18\xff\xff\xff\xff\x07", b"\xff" * 20, b"\x16" + b"\xff" * 9 + b"\x01"])
    return b.data[:start] + bytes(footer) + struct.pack("<I", len(footer)) + b"PAR1"


BYTE_MUTATORS: list[Callable] = [m_flip, m_bytes, m_truncate, m_cut_head, m_delete, m_insert, m_duplicate, m_splice]
MUTATORS = {f.__name__[2:]: f for f in BYTE_MUTATORS + [m_field, m_blob_bytes, m_footer, m_thrift]}
WEIGHTS = {"puffin": {"flip": 3, "bytes": 2, "truncate": 2, "cut_head": 1, "delete": 1, "insert": 1, "duplicate": 1,
                      "splice": 1, "field": 6, "blob_bytes": 3, "footer": 6, "thrift": 0},
           "parquet": {"flip": 3, "bytes": 2, "truncate": 2, "cut_head": 1, "delete": 1, "insert": 1, "duplicate": 1,
                       "splice": 1, "field": 6, "blob_bytes": 0, "footer": 0, "thrift": 3},
           "dv": {"flip": 3, "bytes": 2, "truncate": 2, "cut_head": 1, "delete": 1, "insert": 1, "duplicate": 1,
                  "splice": 0, "field": 6, "blob_bytes": 0, "footer": 0, "thrift": 0}}


def make_case(corpus: list[Base], seed: int, index: int) -> tuple[str, str, bytes]:
    """``(base name, mutator names, bytes)`` of case ``index`` (deterministic)."""
    rng = random.Random(f"{seed}:{index}")
    base = corpus[rng.randrange(len(corpus))]
    names = []
    current = base
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        w = WEIGHTS[base.kind]
        name = rng.choices(list(w), weights=list(w.values()))[0]
        data = MUTATORS[name](rng, current, corpus)
        names.append(name)
        current = Base(base.name, base.kind, data)  # later mutators see bytes only
    return base.name, "+".join(names), current.data


# ---------------------------------------------------------------------------- user paths
class Run:
    """Runs the steps of one case, recording documented errors, and turns anything else into an Outcome."""

    def __init__(self, strict: bool, step_limit: Optional[float] = None) -> None:
        from puffin_explorer.errors import PuffinError

        self.strict = strict
        self.PuffinError = PuffinError
        self.documented: list[str] = []
        self.clock = fuzz_pool.StepClock(step_limit)
        self.stall: Optional[Outcome] = None  # the first operation over ``step_limit``

    def step(self, name: str, fn: Callable[[], Any], may_raise: bool = False) -> Any:
        c0 = time.process_time()
        try:
            return fn()
        except (Stall, MemoryError, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - classifying is the point
            if isinstance(exc, self.PuffinError) and (may_raise or self.strict):
                self.documented.append(f"{name}: {type(exc).__name__}")
                return None
            raise Outcome("crash", name, describe(exc)) from exc
        finally:
            stall = self.clock.timed(name, time.process_time() - c0)
            if self.stall is None:
                self.stall = stall


#: Blob views (text and HTML) per case; every blob is still decoded and queried.
MAX_BLOB_VIEWS = 3
#: Distinct DVs per file whose DataFrame paths (ranges, containers, to_pandas) run. Each frame costs
#: pandas about 0.3 ms whatever the DV holds, so a footer of 20,000 entries naming 14,000 distinct
#: DVs spends 10 s building frames (work bounded by the bytes present, not a stall); every DV is
#: still decoded, summarized and queried for positions, bounds and membership.
MAX_DV_FRAMES = 200


def _views(run: Run, name: str, obj: Any) -> None:
    run.step(f"{name}.to_text", obj.to_text)
    run.step(f"{name}.to_html", obj.to_html)


def run_puffin(data: bytes, run: Run, rng: random.Random) -> None:
    import numpy as np

    from puffin_explorer import DeletionVector, PuffinFile, RawBlob, ThetaSketch, read_dv

    pf = run.step("PuffinFile", lambda: PuffinFile(data, strict=run.strict))
    if pf is None:
        return
    run.step("findings", lambda: list(pf.findings), may_raise=False)
    if run.strict:
        run.step("validate", pf.validate)
    run.step("is_valid", lambda: pf.is_valid)
    run.step("blob_table", pf.blob_table)
    run.step("to_pandas", pf.to_pandas)
    run.step("to_dict", lambda: json.dumps(pf.to_dict(decode=True), default=str))
    viewed = framed = 0
    exercised: set = set()  # footer entries naming the same bytes share one decoded object: query it once
    for blob in pf.blobs:
        dec = run.step(f"blob[{blob.index}].decode", blob.decode, may_raise=True)
        if isinstance(blob.offset, int) and isinstance(blob.length, int) and blob.type == "deletion-vector-v1":
            run.step("read_dv", lambda: read_dv(data, blob.offset, blob.length), may_raise=True)
        if dec is None or id(dec) in exercised:
            continue
        exercised.add(id(dec))
        run.step("summary", dec.summary)
        run.step("regions", dec.regions)
        if isinstance(dec, DeletionVector):
            framed += 1
            dv_paths(run, dec, np, frames=framed <= MAX_DV_FRAMES)
        elif isinstance(dec, ThetaSketch):
            for attr in ("estimate", "theta", "num_retained", "is_empty", "ndv_property", "expected_ndv",
                         "ndv_agrees"):
                run.step(f"theta.{attr}", lambda: getattr(dec, attr), may_raise=True)
            run.step("theta.bounds", lambda: dec.lower_bound(2) + dec.upper_bound(2), may_raise=True)
            run.step("theta.to_pandas", dec.to_pandas)
        elif isinstance(dec, RawBlob):
            run.step("raw.text", lambda: dec.text)
        viewed += 1
        if viewed <= MAX_BLOB_VIEWS:  # each DV view draws a chart: the file view covers the rest
            _views(run, "blob", dec)
    run.step("regions", pf.regions)
    _views(run, "file", pf)
    run.step("mimebundle", pf._repr_mimebundle_)
    hx = run.step("hex", pf.hex)
    if hx is not None:
        run.step("hex.text", hx.text)
        run.step("hex.html", hx.to_html)
    off = rng.randrange(len(data) + 8)
    hx = run.step("hex(offset)", lambda: pf.hex(offset=off, length=rng.choice([1, 64, 4096, 1 << 20])))
    if hx is not None:
        run.step("hex(offset).text", hx.text)


def dv_paths(run: Run, dv: Any, np: Any, frames: bool = True) -> None:
    run.step("dv.cardinality", lambda: dv.cardinality)
    run.step("dv.positions", dv.positions)
    if frames:
        run.step("dv.ranges", dv.ranges)
        run.step("dv.containers", dv.containers)
    run.step("dv.container_summary", dv.container_summary)
    run.step("dv.min_position", lambda: dv.min_position)
    run.step("dv.max_position", lambda: dv.max_position)
    run.step("dv.contains", lambda: dv.contains(7) or dv.contains(1 << 33))
    if frames:
        run.step("dv.to_pandas", dv.to_pandas)


def run_dv(data: bytes, run: Run, rng: random.Random) -> None:
    import numpy as np

    from puffin_explorer import DeletionVector

    dv = run.step("DeletionVector.from_bytes", lambda: DeletionVector.from_bytes(data, strict=run.strict),
                  may_raise=True)
    if dv is None:
        return
    run.step("findings", lambda: list(dv.findings))
    run.step("regions", dv.regions)
    dv_paths(run, dv, np)
    _views(run, "dv", dv)


def run_parquet(data: bytes, run: Run, rng: random.Random) -> None:
    import numpy as np

    from puffin_explorer import ParquetLayout

    pl = run.step("ParquetLayout", lambda: ParquetLayout(data, strict=run.strict, max_workers=1))
    if pl is None:
        return
    run.step("findings", lambda: list(pl.findings))
    run.step("regions", pl.regions)
    run.step("row_groups", pl.row_groups)
    run.step("column_chunks", pl.column_chunks)
    run.step("pages", pl.pages)
    _views(run, "layout", pl)
    hx = run.step("hex", pl.hex)
    if hx is not None:
        run.step("hex.text", hx.text)
        run.step("hex.html", hx.to_html)
    n = run.step("num_rows", lambda: pl.num_rows) or 0
    positions = np.arange(0, max(1, min(int(n) if isinstance(n, int) else 1, 1 << 20) + 5), 3, dtype=np.uint64)
    ov = run.step("overlay", lambda: pl.overlay(positions))
    if ov is not None:
        run.step("overlay.findings", lambda: list(ov.findings))
        run.step("overlay.tables", lambda: (ov.row_groups, ov.pages))
        run.step("overlay.to_text", ov.to_text)


RUNNERS = {"puffin": run_puffin, "parquet": run_parquet, "dv": run_dv}


class _LightCharts:
    """Within this block views bin the data for their charts (the part that reads the model) but skip
    matplotlib's drawing, which costs a tenth of a second a chart and reads nothing from the file."""

    def __enter__(self):
        from puffin_explorer.display import charts

        self.charts, self.saved = charts, (charts.dv_chart_svg, charts.theta_chart_svg)
        charts.dv_chart_svg = lambda dv, bins=charts.DEFAULT_BINS: (charts.dv_histogram(dv, bins), "")[1]
        charts.theta_chart_svg = lambda sketch: (sketch.bounds(), "")[1]
        return self

    def __exit__(self, *exc):
        self.charts.dv_chart_svg, self.charts.theta_chart_svg = self.saved
        return False


def run_case(case: tuple[str, str, bytes], kinds: dict[str, str], seed: int, index: int, strict: bool,
             chart_every: int = 1, step_limit: Optional[float] = None) -> dict:
    """Run one generated case (``make_case``) in this process; return its outcome record (no limits here
    but ``step_limit``, the CPU seconds one operation may take before the case counts as a stall).

    Charts are drawn for one case in ``chart_every`` (all cases by default); the others bin the data only."""
    if chart_every > 1 and index % chart_every:
        with _LightCharts():
            return run_case(case, kinds, seed, index, strict, step_limit=step_limit)
    name, mutators, data = case
    run = Run(strict, step_limit)
    rng = random.Random(f"paths:{seed}:{index}")
    record = {"case": index, "base": name, "mutators": mutators, "size": len(data), "outcome": "ok", "step": "",
              "detail": ""}
    try:
        RUNNERS[kinds[name]](data, run, rng)
        if run.stall is not None:
            raise run.stall
        if run.documented:
            record.update(outcome="documented", detail=run.documented[0])
    except Outcome as out:
        record.update(outcome=out.kind, step=out.step, detail=out.detail)
    cpu, step = run.clock.slowest_step
    if step:
        record["slowest_step"] = [step, round(cpu, 3)]
    return record


# ---------------------------------------------------------------------------- worker pool
class ReaderHarness:
    """The file fuzzer's cases for :func:`fuzz_pool.run_pool`."""

    outcomes = OUTCOMES

    def __init__(self, seed: int, strict: bool, chart_every: int, step_limit: Optional[float] = None) -> None:
        self.corpus = load_corpus()
        self.kinds = {b.name: b.kind for b in self.corpus}
        self.seed, self.strict, self.chart_every, self.step_limit = seed, strict, chart_every, step_limit

    def prepare(self, index: int) -> tuple[str, str, bytes]:
        return make_case(self.corpus, self.seed, index)

    def run(self, case: tuple[str, str, bytes], index: int) -> dict:
        return run_case(case, self.kinds, self.seed, index, self.strict, self.chart_every, self.step_limit)

    def release(self, case: tuple[str, str, bytes]) -> None:
        pass

    def name(self, index: int) -> tuple[str, str]:
        return make_case(self.corpus, self.seed, index)[:2]

    def save(self, folder: str, rec: dict) -> None:
        _save(folder, self.corpus, self.seed, rec)

    def preload(self) -> None:
        _preload()


def run_pool(cases: int, seed: int = 1, workers: int = 2, strict: bool = False, time_limit: float = 5.0,
             mem_limit: int = 2 * GIB, start: int = 0, save: Optional[str] = None,
             progress: Optional[Callable[[Report], None]] = None, chart_every: int = 1,
             step_limit: Optional[float] = None) -> Report:
    """Run cases ``start .. start+cases-1`` on ``workers`` processes; return the tally.

    ``time_limit`` is the CPU of a whole case; ``step_limit``, when given, that of each operation in it."""
    return fuzz_pool.run_pool(ReaderHarness(seed, strict, chart_every, step_limit), cases, workers, time_limit,
                              mem_limit, start, save, progress)


def _preload() -> None:
    """Import what the views use once, before forking, so a replaced worker starts warm."""
    import matplotlib.figure  # noqa: F401
    import pandas  # noqa: F401

    import puffin_explorer.display  # noqa: F401
    from puffin_explorer.display import charts, dv_view, hexview, parquet_view, puffin_view, theta_view  # noqa: F401


def _save(folder: str, corpus: list[Base], seed: int, rec: dict) -> None:
    os.makedirs(folder, exist_ok=True)
    try:
        name, mutators, data = make_case(corpus, seed, rec["case"])
    except Exception:  # noqa: BLE001
        return
    stem = os.path.join(folder, f"{rec['outcome']}-{seed}-{rec['case']}")
    with open(stem + ".bin", "wb") as fh:
        fh.write(data)
    with open(stem + ".json", "w") as fh:
        json.dump(dict(rec, base=name, mutators=mutators), fh, indent=1)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    fuzz_pool.add_pool_arguments(ap, cases=3000)
    ap.add_argument("--strict", action="store_true", help="open with strict=True: only PuffinError may escape")
    ap.add_argument("--chart-every", type=int, default=1,
                    help="draw charts in one case of N (the others only bin the data; drawing is slow)")
    args = ap.parse_args(argv)

    if args.replay_case is not None:
        corpus = load_corpus()
        name, mutators, data = make_case(corpus, args.seed, args.replay_case)
        print(f"case {args.replay_case}: {name} {mutators} ({len(data):,} bytes)")
        run = Run(args.strict, args.time_limit)
        kinds = {b.name: b.kind for b in corpus}
        t0 = time.process_time()
        try:
            RUNNERS[kinds[name]](data, run, random.Random(f"paths:{args.seed}:{args.replay_case}"))
        except Outcome as out:
            print(f"{out.kind} in {out.step}: {out.detail}")
            traceback.print_exception(out.__cause__)
            return 1
        slow = f"; slowest step {run.clock.slowest_step[1]}: {run.clock.slowest_step[0]:.2f} s"
        if run.stall is not None:
            print(f"stall in {run.stall.step}: {run.stall.detail} ({time.process_time() - t0:.2f} s CPU{slow})")
            return 1
        print(f"ok ({time.process_time() - t0:.2f} s CPU{slow}); documented: {run.documented[:3]}")
        return 0

    return fuzz_pool.run_and_report(
        args, lambda progress: run_pool(args.cases, args.seed, args.workers, args.strict, fuzz_pool.case_limit(args),
                                        int(args.memory * GIB), args.start, args.save, progress, args.chart_every,
                                        step_limit=args.time_limit),
        "strict" if args.strict else "lenient")


if __name__ == "__main__":
    raise SystemExit(main())
