"""Mutation fuzzer for tables: Iceberg warehouses and tables, Delta tables, and every lenient path over them.

Bases are real tables: the Spark-written warehouse and the DuckDB-written v3 table of the reference
fixtures (``resources/fixtures``), the two Delta tables (and a copy of the larger one with a Parquet
checkpoint written by delta-rs), and ``./demo-warehouse`` when ``make demo`` has built it.  A case
copies one base into a temporary folder (metadata copied, data files hard-linked) and replaces one
file with a damaged version:

* ``*.metadata.json``, ``_last_checkpoint``, Delta commits: structure-aware JSON mutations (wrong types,
  missing keys, ids that point nowhere -- current snapshot, schemas, specs, parents, refs, statistics --,
  2^62, 2^64, -1, floats, NaN, huge arrays and strings, deep nesting), Delta actions (DV descriptors,
  paths, sizes, stats, schema strings, protocol) and lines (dropped, repeated, garbage, cut);
* manifest lists and manifests: re-encoded with fastavro, with each file's own Avro schema and
  key-value metadata, one or a few field values changed to values valid for the Avro type but wrong
  for Iceberg (negative, 2^62, unknown content codes, paths that do not exist, swapped paths,
  partition values), entries repeated or dropped, or the key-value metadata damaged;
* Puffin DV and statistics files, Delta DV files, checkpoints: the file fuzzer's mutators;
* any of them: byte damage, truncation, or the file removed.

Each case then runs what a user runs: ``Warehouse`` and its card; ``Table.from_folder`` /
``from_metadata`` and the card, ``check()``, ``snapshots()``, ``timeline()``, ``files()``, ``dvs()``,
``delete_debt()``, ``deleted_rows_per_file()``, ``snapshot()`` and ``commit_deletes()`` of the current
and every snapshot, ``statistics_files()``, ``puffin_files()``, ``read_dv`` of listed DVs;
``DeltaTable`` with its card, ``versions()``, ``files()``, ``dvs()``, ``check()``, ``read_dv``; the
``table`` command line in-process (every view); the Spark planner's driver-side plan.  Outcomes:

``ok``          every path ran;
``documented``  a path documented to raise raised its error: opening where there is no table
                (``SourceError``, ``TableNotFoundError``), ``read_dv`` (any ``PuffinError``);
``escape``      a ``PuffinError`` escaped a lenient path (a finding was due);
``crash``       any other exception, or a traceback / "unexpected error" from the command line;
``stall``       a case used more CPU time than ``--time-limit``;
``memory``      ``MemoryError`` under the address-space limit, or a worker killed by the OS.

Cases are generated from ``(seed, index)``; ``--replay-case N`` rebuilds case N and runs it in this process,
printing each failure's traceback (``--keep`` keeps its folder); ``--save DIR`` writes each failing case's
replaced file; ``--classes FILE`` writes the failure classes, deduplicated, each with a replay command.

    python tests/fuzz/fuzz_tables.py --cases 3000 --workers 2     # a long run
    python tests/fuzz/fuzz_tables.py --replay-case 17 --keep      # one case, its tracebacks and folder
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz_pool  # noqa: E402
import fuzz_readers  # noqa: E402  (sets up sys.path, thread counts and the fixtures folder)
from fuzz_pool import GIB, Outcome, Stall, describe  # noqa: E402

ROOT, FIXTURES = fuzz_readers.ROOT, fuzz_readers.FIXTURES
OUTCOMES = ("ok", "documented", "crash", "escape", "stall", "memory")
#: Snapshots per case whose card and commit deletes run (a metadata file may list thousands).
MAX_SNAPSHOTS = 12
#: DVs per case read with ``read_dv`` (every row `dvs()` lists, up to this many: a damaged log may list thousands).
MAX_READ_DVS = 50
#: Where derived bases (a Delta table with a checkpoint) are built once and kept, so replays see the same bytes.
DERIVED = Path(tempfile.gettempdir()) / "puffin-explorer-fuzz-tables-bases"


# ---------------------------------------------------------------------------- bases
@dataclass
class TableBase:
    """One table to damage: the folder copied per case and the files a case may replace."""

    name: str
    kind: str  # "iceberg" or "delta"
    root: Path  # copied per case: a warehouse folder (Iceberg) or the table folder (Delta)
    table: str  # the table's folder relative to ``root`` ("" for the root itself)
    files: list = field(default_factory=list)  # (relative path, file kind, weight)


def _iceberg_kind(rel: str, current: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    if name.endswith(".metadata.json"):
        return "metadata-current" if rel == current else "metadata"
    if name == "version-hint.text":
        return "version-hint"
    if name.endswith(".avro"):
        return "manifest-list" if name.startswith("snap-") else "manifest"
    if name.endswith(".puffin"):
        return "puffin-dv"
    if name.endswith(".stats"):
        return "puffin-stats"
    return "other"


def _delta_kind(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    if name == "_last_checkpoint":
        return "last-checkpoint"
    if name.endswith(".checkpoint.parquet"):
        return "checkpoint"
    if name.endswith(".json"):
        return "commit"
    if name.endswith(".bin"):
        return "delta-dv"
    return "other"


#: How often a file of each kind is the damaged one (divided among the files of that kind).
KIND_WEIGHTS = {"metadata-current": 30, "metadata": 6, "version-hint": 4, "manifest-list": 20, "manifest": 26,
                "puffin-dv": 9, "puffin-stats": 5, "commit": 45, "checkpoint": 15, "last-checkpoint": 6,
                "delta-dv": 14, "other": 0}


def _weigh(files: list[tuple[str, str]]) -> list[tuple[str, str, float]]:
    per_kind: dict[str, int] = {}
    for _, kind in files:
        per_kind[kind] = per_kind.get(kind, 0) + 1
    return [(rel, kind, KIND_WEIGHTS[kind] / per_kind[kind]) for rel, kind in files if KIND_WEIGHTS[kind]]


def _iceberg_tables(warehouse: Path) -> list[Path]:
    return sorted(p.parent for p in warehouse.rglob("metadata") if p.is_dir() and any(p.glob("*.metadata.json")))


def iceberg_bases(label: str, warehouse: Path) -> list[TableBase]:
    out = []
    for folder in _iceberg_tables(warehouse):
        table = folder.relative_to(warehouse).as_posix()
        hint = folder / "metadata" / "version-hint.text"
        current = ""
        if hint.is_file():
            current = f"{table}/metadata/v{hint.read_text().strip()}.metadata.json"
        files = [p for p in sorted((folder / "metadata").iterdir()) if p.is_file()]
        files += sorted(folder.rglob("data/**/*.puffin"))
        rels = [p.relative_to(warehouse).as_posix() for p in files]
        out.append(TableBase(f"{label}:{table.replace('/', '.')}", "iceberg", warehouse, table,
                             _weigh([(r, _iceberg_kind(r, current)) for r in rels])))
    return out


def delta_base(label: str, folder: Path) -> TableBase:
    files = sorted(p for p in (folder / "_delta_log").iterdir() if p.is_file()) + sorted(folder.glob("*.bin"))
    rels = [p.relative_to(folder).as_posix() for p in files]
    return TableBase(label, "delta", folder, "", _weigh([(r, _delta_kind(r)) for r in rels]))


def _checkpointed(source: Path) -> Optional[Path]:
    """A copy of the Delta table ``source`` with a Parquet checkpoint at its last version (built once)."""
    target = DERIVED / (source.name + "-checkpointed")
    if (target / "_delta_log" / "_last_checkpoint").is_file():
        return target
    try:
        from deltalake import DeltaTable as RsTable
    except ImportError:
        return None
    work = Path(tempfile.mkdtemp(prefix=target.name + "-", dir=_mkdir(DERIVED)))
    shutil.copytree(source, work / "t")
    RsTable(str(work / "t")).create_checkpoint()
    try:
        os.replace(work / "t", target)
    except OSError:  # another process built it first
        pass
    shutil.rmtree(work, ignore_errors=True)
    return target


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def load_bases() -> list[TableBase]:
    """Every base table present on this machine, in a fixed order."""
    out: list[TableBase] = []
    if (FIXTURES / "warehouse").is_dir():
        out += iceberg_bases("warehouse", FIXTURES / "warehouse")
    engines = FIXTURES / "engines"
    if (engines / "duckdb").is_dir():
        out += iceberg_bases("duckdb", engines / "duckdb")
    for folder in sorted((engines / "delta").glob("*")) if (engines / "delta").is_dir() else []:
        if (folder / "_delta_log").is_dir():
            out.append(delta_base(f"delta:{folder.name}", folder))
    large = engines / "delta" / "delta-spark-table-with-dv-large"
    if large.is_dir():
        cp = _checkpointed(large)
        if cp is not None:
            out.append(delta_base("delta:checkpointed", cp))
    if (ROOT / "demo-warehouse").is_dir():
        out += iceberg_bases("demo", ROOT / "demo-warehouse")
    return [b for b in out if b.files]


# ---------------------------------------------------------------------------- JSON mutations
HUGE_INTS = [2 ** 62, 2 ** 64, 2 ** 63, 2 ** 63 - 1, -(2 ** 63), -1, 0, 2 ** 31, -(2 ** 31) - 1]
#: Integers at the edges of the types a reader may put a number in: just past a double's exact range, the int32
#: and int64 boundaries, and 10^12 (a millisecond timestamp or byte count that fits a long but not an int).
BOUNDARY_INTS = [2 ** 53 + 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 63 - 1, -(2 ** 63), 10 ** 12]
#: Characters no writer puts in a path: NUL (the OS refuses it) and other C0 controls and DEL.
CONTROL_CHARS = ["\x00", "\x00", "\x01", "\x1f", "\x7f", "\n"]  # NUL twice: the one the OS refuses
ODD_NUMBERS = [1.5, -0.0, 1e308, float("nan"), float("inf"), float("-inf")]
#: Keys holding ids or locations that other parts of the metadata refer to.
ID_KEYS = {"current-snapshot-id", "parent-snapshot-id", "snapshot-id", "schema-id", "current-schema-id",
           "default-spec-id", "spec-id", "default-sort-order-id", "order-id", "source-id", "field-id", "id",
           "sequence-number", "last-sequence-number", "last-column-id", "last-partition-id", "last-updated-ms",
           "timestamp-ms", "format-version", "next-row-id", "first-row-id", "added-rows"}
#: How deep the JSON mutators look for a value to change.
MAX_PATH_DEPTH = 200
PATH_KEYS = {"manifest-list", "statistics-path", "metadata-file", "location", "path", "pathOrInlineDv"}


def with_control_character(rng: random.Random, path: str) -> str:
    """``path`` with a control character put in a folder name, in the file name or at an end."""
    c = rng.choice(CONTROL_CHARS)
    cut = path.rfind("/")
    at = rng.choice([0, len(path), max(cut, 0), max(cut, 0), rng.randrange(len(path) + 1)])
    return path[:at] + c + path[at:]


def _paths(value: Any, prefix: tuple = (), out: Optional[list] = None, limit: int = 20_000) -> list[tuple]:
    """Every path (tuple of keys and indexes) in a JSON value, the root excluded, up to ``limit`` paths and
    ``MAX_PATH_DEPTH`` levels (an earlier mutation may have nested a value past the recursion limit)."""
    out = [] if out is None else out
    if len(out) >= limit or len(prefix) >= MAX_PATH_DEPTH:
        return out
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        out.append(prefix + (k,))
        _paths(v, prefix + (k,), out, limit)
    return out


def _get(value: Any, path: tuple) -> Any:
    for k in path:
        value = value[k]
    return value


def _set(value: Any, path: tuple, new: Any) -> None:
    _get(value, path[:-1])[path[-1]] = new


def _ints_in(value: Any) -> list[int]:
    return [v for p in _paths(value) for v in [_get(value, p)] if isinstance(v, int) and not isinstance(v, bool)]


def _wrong_type(rng: random.Random, old: Any) -> Any:
    choices = [None, True, "12", "x", [], {}, [1, 2], {"a": 1}, 1.5, -1, 0, 2 ** 62]
    return rng.choice([c for c in choices if type(c) is not type(old)] or choices)


def _dangling(rng: random.Random, doc: Any, old: Any) -> Any:
    """An id no part of ``doc`` uses, or a location where nothing is."""
    if isinstance(old, str):
        return rng.choice(["", "/nonexistent/x.avro", "metadata/missing.avro", "s3://nowhere/x/y.avro",
                           "file:///nonexistent/table", old + ".missing", old[: len(old) // 2], "x" * 5000,
                           "data/../../../../etc/passwd", "\x00", "relative.puffin"])
    used = set(_ints_in(doc))
    top = max([v for v in used if abs(v) < 2 ** 62] or [0])
    for v in [top + 1, rng.randrange(1, 2 ** 63), 12345, -1, -2, 2 ** 62, 7]:
        if v not in used:
            return v
    return top + 2


def _placeholder_text(doc: Any, holes: dict[str, str]) -> str:
    text = json.dumps(doc)
    for key, raw in holes.items():
        text = text.replace(json.dumps(key), raw)
    return text


def mutate_json_doc(rng: random.Random, doc: Any) -> tuple[str, str]:
    """One structure-aware mutation of a parsed JSON document: ``(op, new text)``."""
    paths = _paths(doc)
    holes: dict[str, str] = {}
    ops = ["type", "drop", "number", "dangle", "dangle", "dangle", "huge-array", "huge-string", "nest", "swap",
           "shape", "boundary", "control"]
    op = rng.choice(ops)
    if not paths:
        op = "shape"
    id_paths = [p for p in paths if isinstance(p[-1], str) and (p[-1] in ID_KEYS or p[-1] in PATH_KEYS)]
    path = rng.choice(id_paths) if op in ("dangle", "number") and id_paths else (rng.choice(paths) if paths else ())
    if op == "type":
        _set(doc, path, _wrong_type(rng, _get(doc, path)))
    elif op == "drop":
        parent = _get(doc, path[:-1])
        if isinstance(parent, dict):
            parent.pop(path[-1])
        else:
            del parent[path[-1]]
    elif op == "number":
        _set(doc, path, rng.choice(HUGE_INTS + ODD_NUMBERS))
    elif op == "boundary":  # any integer of the document, not only ids
        ints = [p for p in paths if isinstance(_get(doc, p), int) and not isinstance(_get(doc, p), bool)]
        _set(doc, rng.choice(ints) if ints else path, rng.choice(BOUNDARY_INTS))
    elif op == "control":  # a path the metadata names
        named = [p for p in paths if isinstance(p[-1], str) and p[-1] in PATH_KEYS and isinstance(_get(doc, p), str)]
        target = rng.choice(named) if named else path
        old = _get(doc, target)
        _set(doc, target, with_control_character(rng, old if isinstance(old, str) else "x"))
    elif op == "dangle":
        _set(doc, path, _dangling(rng, doc, _get(doc, path)))
    elif op == "huge-array":
        lists = [p for p in paths if isinstance(_get(doc, p), list)]
        if lists:
            path = rng.choice(lists)
            items = _get(doc, path)
            if items and rng.random() < 0.7:
                n = rng.choice([100, 1000, 10_000]) if isinstance(items[0], (dict, list)) else \
                    rng.choice([1000, 100_000, 1_000_000])
                _set(doc, path, [items[i % len(items)] for i in range(n)])
            else:
                _set(doc, path, list(range(rng.choice([1000, 100_000, 1_000_000]))))
        else:
            _set(doc, path, list(range(100_000)))
    elif op == "huge-string":
        n = rng.choice([10_000, 1_000_000, 5_000_000])
        _set(doc, path, rng.choice(["x", "é", "<b>&", "\u202e", "\x00", "/"]) * n)
    elif op == "nest":
        depth = rng.choice([100, 1000, 5000, 100_000])
        opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
        holes["@@0@@"] = opener * depth + "1" + closer * depth
        _set(doc, path, "@@0@@")
    elif op == "swap" and len(paths) > 1:
        other = rng.choice(paths)
        a, b = _get(doc, path), _get(doc, other)
        if path[:len(other)] != other and other[:len(path)] != path:
            _set(doc, path, b)
            _set(doc, other, a)
    elif op == "shape":
        doc = rng.choice([[], "x", 1, None, {}, [doc], {"format-version": 2}, {"format-version": 3, "snapshots": {}}])
    return op, _placeholder_text(doc, holes)


def m_json(rng: random.Random, data: bytes, ctx: "CaseContext") -> tuple[str, Optional[bytes]]:
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return m_bytes(rng, data, ctx)
    op, text = mutate_json_doc(rng, doc)
    return f"json-{op}", text.encode("utf-8", "surrogatepass")


# ---------------------------------------------------------------------------- Delta log mutations
DV_VALUES = {
    "storageType": ["u", "p", "i", "x", "", None, 1],
    "pathOrInlineDv": ["", "!!!!", "vBn[lx{q8@P<9BNH/isA", "0" * 5000, "abc", "/nonexistent/dv.bin",
                       "file:///nonexistent/deletion_vector.bin", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"],
    "offset": [0, 1, -1, 2 ** 31, 2 ** 62, 2 ** 64, None, 1.5, "1"],
    "sizeInBytes": [0, 1, 7, -1, 2 ** 31, 2 ** 62, None, "36"],
    "cardinality": [0, -1, 2 ** 62, 2 ** 64, None, 1.5, "2"],
}


def _mutate_action(rng: random.Random, action: dict) -> str:
    kind = next(iter(action), "")
    body = action.get(kind)
    if kind in ("add", "remove") and isinstance(body, dict):
        op = rng.choice(["dv", "dv", "dv", "path", "size", "stats", "json"])
        if op == "dv":
            dv = body.get("deletionVector")
            if not isinstance(dv, dict):
                dv = body["deletionVector"] = {"storageType": "u", "pathOrInlineDv": "vBn[lx{q8@P<9BNH/isA",
                                               "offset": 1, "sizeInBytes": 36, "cardinality": 2}
            key = rng.choice(sorted(DV_VALUES) + ["drop"])
            if key == "drop":
                dv.pop(rng.choice(sorted(dv)), None) if dv else None
            else:
                dv[key] = rng.choice(DV_VALUES[key])
            return f"delta-dv-{key}"
        if op == "path":
            body["path"] = rng.choice(["", "missing.parquet", "/abs/missing.parquet", "s3://nowhere/x.parquet",
                                       "%zz", "a%20b.parquet", None, 7, "x" * 10_000])
            return "delta-path"
        if op == "size":
            body[rng.choice(["size", "modificationTime"])] = rng.choice(HUGE_INTS + ODD_NUMBERS + ["1", None])
            return "delta-size"
        if op == "stats":
            stats = {"numRecords": rng.choice(HUGE_INTS + ODD_NUMBERS + ["10", None, []]),
                     "minValues": rng.choice([{}, [], {"value": "x"}, None]), "tightBounds": rng.choice([True, 1])}
            body["stats"] = rng.choice([json.dumps(stats), "{", "", "null", "[]", None, 7])
            return "delta-stats"
    if kind == "metaData" and isinstance(body, dict) and rng.random() < 0.6:
        key = rng.choice(["schemaString", "partitionColumns", "configuration", "format", "id"])
        body[key] = rng.choice([None, "", "{", "[]", 7, [], {}, json.dumps({"type": "struct", "fields": 1}),
                                ["value"], {"delta.enableDeletionVectors": "maybe"}])
        return f"delta-metadata-{key}"
    if kind == "protocol" and isinstance(body, dict) and rng.random() < 0.6:
        key = rng.choice(["minReaderVersion", "minWriterVersion", "readerFeatures", "writerFeatures"])
        body[key] = rng.choice([0, -1, 99, 2 ** 64, None, "3", ["deletionVectors", "x-unknown"], [], {}])
        return f"delta-protocol-{key}"
    op, text = mutate_json_doc(rng, action)
    action.clear()
    action["@@raw@@"] = text
    return f"delta-json-{op}"


def m_delta_actions(rng: random.Random, data: bytes, ctx: "CaseContext") -> tuple[str, Optional[bytes]]:
    lines = data.decode("utf-8", "replace").splitlines()
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except (ValueError, RecursionError):
            parsed.append(None)
    candidates = [i for i, a in enumerate(parsed) if isinstance(a, dict) and a]
    if not candidates:
        return m_bytes(rng, data, ctx)
    preferred = [i for i in candidates if next(iter(parsed[i])) in ("add", "remove")]
    i = rng.choice(preferred if preferred and rng.random() < 0.7 else candidates)
    names = []
    for _ in range(rng.choice([1, 1, 2])):
        names.append(_mutate_action(rng, parsed[i]))
        if "@@raw@@" in parsed[i]:
            break
    a = parsed[i]
    lines[i] = a["@@raw@@"] if "@@raw@@" in a else json.dumps(a)
    return "+".join(names), "\n".join(lines).encode("utf-8", "surrogatepass") + b"\n"


def m_delta_lines(rng: random.Random, data: bytes, ctx: "CaseContext") -> tuple[str, Optional[bytes]]:
    lines = data.decode("utf-8", "replace").splitlines()
    op = rng.choice(["drop", "repeat", "garbage", "cut", "empty", "add-missing", "blank"])
    i = rng.randrange(len(lines)) if lines else 0
    if op == "drop" and lines:
        del lines[i]
    elif op == "repeat" and lines:
        lines[i:i + 1] = [lines[i]] * rng.choice([2, 100, 10_000])
    elif op == "garbage":
        lines.insert(i, rng.choice(["{", "[]", "null", "7", '{"add": null}', '{"x-unknown": {}}', "\x00\xff",
                                    '{"add": {}}', '{"remove": {"path": 1}}', '{"commitInfo": []}']))
    elif op == "cut" and lines:
        lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
    elif op == "empty":
        lines = []
    elif op == "add-missing":
        lines.insert(i, json.dumps({"add": {"path": "part-missing.parquet", "partitionValues": {}, "size": 10,
                                            "modificationTime": 0, "dataChange": True,
                                            "stats": json.dumps({"numRecords": 10}),
                                            "deletionVector": {"storageType": "u", "offset": 1, "sizeInBytes": 36,
                                                               "pathOrInlineDv": "vBn[lx{q8@P<9BNH/isA",
                                                               "cardinality": 2}}}))
    else:
        lines.insert(i, "")
    return f"delta-lines-{op}", "\n".join(lines).encode("utf-8", "replace") + (b"\n" if lines else b"")


# ---------------------------------------------------------------------------- Avro mutations
#: Fields of manifest lists and manifests worth damaging (any other leaf may be picked too).
AVRO_TARGETS = {"record_count", "file_size_in_bytes", "content", "content_offset", "content_size_in_bytes",
                "status", "sequence_number", "file_sequence_number", "min_sequence_number", "snapshot_id",
                "added_snapshot_id", "referenced_data_file", "manifest_path", "manifest_length", "file_path",
                "partition_spec_id", "added_files_count", "existing_files_count", "deleted_files_count",
                "added_rows_count", "existing_rows_count", "deleted_rows_count", "first_row_id", "partition",
                "lower_bound", "upper_bound", "contains_null", "file_format", "equality_ids", "split_offsets",
                "value_counts", "null_value_counts", "lower_bounds", "upper_bounds", "column_sizes"}
BAD_PATHS = ["", "/nonexistent/x.parquet", "s3://nowhere/a.avro", "relative/missing.puffin", "x" * 20_000,
             "file:///nonexistent/m.avro", "\x00", "%zz", "data/../../../x"]


def _avro_leaves(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        out.append(prefix + (k,))
        if isinstance(v, (dict, list)):
            out += _avro_leaves(v, prefix + (k,))
    return out


def _avro_candidates(rng: random.Random, old: Any, key: Any, strings: list[str]) -> list[Any]:
    if isinstance(old, bool):
        return [not old, None]
    if isinstance(old, int) or key in ("content", "status", "content_offset", "content_size_in_bytes",
                                       "first_row_id", "sequence_number", "file_sequence_number"):
        base = old if isinstance(old, int) else 0
        out = [-1, 2 ** 62, -(2 ** 62), 2 ** 31 - 1, -(2 ** 31), 3, 7, 99, 0, base + 1, base - 1, base * 1000,
               2 ** 63 - 1, None]
        rng.shuffle(out)
        return out
    if isinstance(old, str) or key in ("referenced_data_file", "file_path", "manifest_path"):
        out = BAD_PATHS + strings + [None]
        rng.shuffle(out)
        return out
    if isinstance(old, bytes):
        return [b"", b"\xff" * 8, bytes(rng.randrange(256) for _ in range(rng.choice([1, 4, 16, 300]))), None]
    if isinstance(old, list):
        return [[], old * 1000 if old else [1] * 1000, None]
    if isinstance(old, dict):
        return [{}, None, {k: None for k in old}]
    return [None, -1, 2 ** 62, "", b"", [], 7]


def _write_avro(schema: Any, meta: dict, codec: str, records: list) -> bytes:
    import fastavro

    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec, validator=True,
                    metadata={k: v for k, v in meta.items() if not k.startswith("avro.")})
    return out.getvalue()


def m_avro(rng: random.Random, data: bytes, ctx: "CaseContext") -> tuple[str, Optional[bytes]]:
    import fastavro

    try:
        reader = fastavro.reader(io.BytesIO(data))
        schema, meta, codec = reader.writer_schema, dict(reader.metadata), reader.codec
        records = list(reader)
    except Exception:  # noqa: BLE001 - an Avro file the mutator cannot read is damaged byte-wise instead
        return m_bytes(rng, data, ctx)
    op = rng.choice(["field", "field", "field", "field", "fields", "records", "meta"]) if records else "meta"
    if op == "records":
        how = rng.choice(["drop", "repeat", "empty", "shuffle"])
        i = rng.randrange(len(records))
        if how == "drop":
            del records[i]
        elif how == "repeat":
            records[i:i + 1] = [records[i]] * rng.choice([2, 100, 5000])
        elif how == "empty":
            records = []
        else:
            rng.shuffle(records)
        return f"avro-records-{how}", _write_avro(schema, meta, codec, records)
    if op == "meta":
        keys = sorted(k for k in meta if not k.startswith("avro."))
        if not keys:
            return m_bytes(rng, data, ctx)
        key = rng.choice(keys)
        meta[key] = rng.choice(["", "{", "[]", "null", "7", "-1", "99", "deletes", "data", "x" * 100_000,
                                json.dumps({"type": "struct", "fields": 1}), '{"spec-id": 0, "fields": [{}]}',
                                '[{"name": "x", "transform": "bucket[0]", "source-id": 999, "field-id": 1000}]'])
        return f"avro-meta-{key}", _write_avro(schema, meta, codec, records)
    strings = sorted({v for r in records for p in _avro_leaves(r) for v in [_get(r, p)]
                      if isinstance(v, str) and "/" in v})[:20]
    names = []
    for _ in range(1 if op == "field" else rng.choice([2, 3, 5])):
        r = rng.randrange(len(records))
        leaves = _avro_leaves(records[r])
        targets = [p for p in leaves if p[-1] in AVRO_TARGETS] or leaves
        if not targets:
            continue
        path = rng.choice(targets if rng.random() < 0.85 else leaves)
        old = _get(records[r], path)
        fresh = [c for c in _avro_candidates(rng, old, path[-1], strings) if type(c) is not type(old) or c != old]
        for new in fresh[:6]:
            _set(records[r], path, new)
            try:
                out = _write_avro(schema, meta, codec, records)
            except Exception:  # noqa: BLE001 - not valid for the field's Avro type: try the next value
                _set(records[r], path, old)
                continue
            names.append(str(path[-1]))
            break
    if not names:
        return m_bytes(rng, data, ctx)
    return "avro-" + ",".join(names), _write_avro(schema, meta, codec, records)


def _record_type(t: Any) -> Optional[dict]:
    """The record schema of an Avro type (a record, or a union holding one)."""
    if isinstance(t, dict) and t.get("type") == "record":
        return t
    if isinstance(t, list):
        return next((x for x in t if isinstance(x, dict) and x.get("type") == "record"), None)
    return None


def _widen(schema: Any, path: tuple) -> None:
    """Make the field at ``path`` (record field names only) a long where the schema says int, so that a
    value past an int can be written, as a writer with the wrong type would."""
    t = schema
    for i, key in enumerate(path):
        rec = _record_type(t)
        f = next((f for f in (rec or {}).get("fields", []) if f.get("name") == key), None)
        if f is None:
            return
        if i == len(path) - 1:
            typ = f.get("type")
            f["type"] = "long" if typ == "int" else [("long" if x == "int" else x) for x in typ] \
                if isinstance(typ, list) else typ
            return
        t = f.get("type")


AVRO_PATHS = ("manifest_path", "file_path", "referenced_data_file")


def m_avro_values(rng: random.Random, data: bytes, ctx: "CaseContext") -> tuple[str, Optional[bytes]]:
    """One integer field of a manifest list or manifest set to a boundary value (``BOUNDARY_INTS``; its
    field widened to a long when the schema says int), or a control character put in a path field."""
    import copy

    import fastavro

    try:
        reader = fastavro.reader(io.BytesIO(data))
        schema, meta, codec = copy.deepcopy(reader.writer_schema), dict(reader.metadata), reader.codec
        records = list(reader)
    except Exception:  # noqa: BLE001 - an Avro file the mutator cannot read is damaged byte-wise instead
        return m_bytes(rng, data, ctx)
    leaves = [(r, p) for r in range(len(records)) for p in _avro_leaves(records[r])
              if all(isinstance(k, str) for k in p)]
    ints = [(r, p) for r, p in leaves if isinstance(_get(records[r], p), int) and not isinstance(_get(records[r], p), bool)]
    paths = [(r, p) for r, p in leaves if p[-1] in AVRO_PATHS and isinstance(_get(records[r], p), str)
             and _get(records[r], p)]
    op = "control" if paths and (not ints or rng.random() < 0.4) else "boundary"
    chosen = paths if op == "control" else ints
    if not chosen:
        return m_bytes(rng, data, ctx)
    how = rng.choice(["one", "one", "field", "all"])  # one value, one field in every record, or every field
    if how == "one":
        chosen = [rng.choice(chosen)]
    elif how == "field":
        name = rng.choice(sorted({p for _, p in chosen}))
        chosen = [(r, p) for r, p in chosen if p == name]
    for r, p in chosen:
        if op == "control":
            _set(records[r], p, with_control_character(rng, _get(records[r], p)))
        else:
            _widen(schema, p)
            _set(records[r], p, rng.choice(BOUNDARY_INTS))
    try:
        return f"avro-{op}-{p[-1] if how != 'all' else 'all'}", _write_avro(schema, meta, codec, records)
    except Exception:  # noqa: BLE001 - the value does not fit (a long field past int64): damage bytes instead
        return m_bytes(rng, data, ctx)


# ---------------------------------------------------------------------------- other files
def m_bytes(rng: random.Random, data: bytes, ctx: "CaseContext") -> tuple[str, Optional[bytes]]:
    """The file fuzzer's byte-level damage (a splice joins another file of the same table)."""
    fn = rng.choice(fuzz_readers.BYTE_MUTATORS)
    others = [fuzz_readers.Base(rel, "", ctx.read(rel)) for rel in rng.sample(ctx.names, min(2, len(ctx.names)))]
    out = fn(rng, fuzz_readers.Base(ctx.rel, "", data), others or [fuzz_readers.Base("", "", data)])
    return "bytes-" + fn.__name__[2:], out


def m_remove(rng: random.Random, data: bytes, ctx: "CaseContext") -> tuple[str, Optional[bytes]]:
    return "remove", None


def m_version_hint(rng: random.Random, data: bytes, ctx: "CaseContext") -> tuple[str, Optional[bytes]]:
    text = rng.choice(["0", "99", "-1", "abc", "", " 1 \n", "1.5", str(2 ** 64), "9" * 5000, "v1", "1\n2",
                       "\x00", str(int(data.strip()) - 1) if data.strip().isdigit() and len(data.strip()) < 19 else "1"])
    return "version-hint", text.encode()


def _corpus_entry(rel: str, data: bytes) -> Optional[fuzz_readers.Base]:
    """The file fuzzer's view of ``data`` (its fields and blobs), or None when an earlier mutation left
    bytes that view cannot be built from (a footer nested past the recursion limit, say)."""
    try:
        return fuzz_readers.load_base(rel, data)
    except (Exception, RecursionError):  # noqa: BLE001 - a second mutation of damaged bytes is byte-level
        return None


def m_puffin(rng: random.Random, data: bytes, ctx: "CaseContext") -> tuple[str, Optional[bytes]]:
    """The file fuzzer's structure-aware Puffin mutators: footer JSON, decoded DV fields, blob bytes."""
    base = _corpus_entry(ctx.rel, data)
    if base is None or base.kind != "puffin":
        return m_bytes(rng, data, ctx)
    fn = rng.choice([fuzz_readers.m_field, fuzz_readers.m_field, fuzz_readers.m_footer, fuzz_readers.m_blob_bytes])
    return "puffin-" + fn.__name__[2:], fn(rng, base, [base])


def m_parquet(rng: random.Random, data: bytes, ctx: "CaseContext") -> tuple[str, Optional[bytes]]:
    """A checkpoint's Parquet footer and values, through the file fuzzer's field and Thrift mutators."""
    base = _corpus_entry(ctx.rel, data)
    if base is None:
        return m_bytes(rng, data, ctx)
    fn = rng.choice([fuzz_readers.m_field, fuzz_readers.m_thrift])
    return "parquet-" + fn.__name__[2:], fn(rng, base, [base])


def m_checkpoint_rows(rng: random.Random, data: bytes, ctx: "CaseContext") -> tuple[str, Optional[bytes]]:
    """A checkpoint rewritten with pyarrow, one action field (DV descriptor, path, size, version) changed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(io.BytesIO(data)).to_pylist()
        schema = pq.read_schema(io.BytesIO(data))
    except Exception:  # noqa: BLE001
        return m_bytes(rng, data, ctx)
    live = [r for r in rows if r.get("add")]
    if not live:
        return m_bytes(rng, data, ctx)
    row = rng.choice(live)
    add = row["add"]
    key = rng.choice(["dv", "dv", "path", "size", "stats", "drop-row", "repeat-row"])
    if key == "dv" and isinstance(add.get("deletionVector"), dict):
        sub = rng.choice(sorted(DV_VALUES))
        values = [v for v in DV_VALUES[sub] if isinstance(v, (int, str)) and not isinstance(v, bool)
                  and (not isinstance(v, int) or -(2 ** 63) <= v < 2 ** 63)]
        old = add["deletionVector"].get(sub)
        values = [v for v in values if type(v) is type(old)] or [None]
        add["deletionVector"][sub] = rng.choice(values)
        key = f"dv-{sub}"
    elif key == "path":
        add["path"] = rng.choice(BAD_PATHS)
    elif key == "size":
        add["size"] = rng.choice([-1, 0, 2 ** 62, 2 ** 63 - 1])
    elif key == "stats":
        add["stats"] = rng.choice(["{", "", json.dumps({"numRecords": -1}), json.dumps({"numRecords": 2 ** 62})])
    elif key == "drop-row":
        rows.remove(row)
    else:  # "repeat-row", or "dv" on a file without a DV
        key = "repeat-row"
        rows.extend([row] * rng.choice([2, 1000]))
    out = io.BytesIO()
    try:
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), out)
    except Exception:  # noqa: BLE001 - the value does not fit the column: damage bytes instead
        return m_bytes(rng, data, ctx)
    return f"checkpoint-{key}", out.getvalue()


#: Per file kind: (mutator, weight).
MUTATORS: dict[str, list[tuple[Callable, int]]] = {
    "metadata-current": [(m_json, 7), (m_bytes, 2), (m_remove, 1)],
    "metadata": [(m_json, 6), (m_bytes, 3), (m_remove, 1)],
    "version-hint": [(m_version_hint, 6), (m_bytes, 2), (m_remove, 1)],
    "manifest-list": [(m_avro, 8), (m_avro_values, 5), (m_bytes, 2), (m_remove, 1)],
    "manifest": [(m_avro, 8), (m_avro_values, 5), (m_bytes, 2), (m_remove, 1)],
    "puffin-dv": [(m_puffin, 6), (m_bytes, 3), (m_remove, 1)],
    "puffin-stats": [(m_puffin, 6), (m_bytes, 3), (m_remove, 1)],
    "commit": [(m_delta_actions, 7), (m_delta_lines, 3), (m_bytes, 2), (m_remove, 1)],
    "checkpoint": [(m_checkpoint_rows, 5), (m_parquet, 3), (m_bytes, 2), (m_remove, 1)],
    "last-checkpoint": [(m_json, 6), (m_bytes, 2), (m_remove, 1)],
    "delta-dv": [(m_bytes, 8), (m_remove, 1)],
}


# ---------------------------------------------------------------------------- cases
@dataclass
class CaseContext:
    """What a mutator may look at: the base, the file being replaced, the other files of the table."""

    base: TableBase
    rel: str

    @property
    def names(self) -> list[str]:
        return [r for r, _, _ in self.base.files if r != self.rel]

    def read(self, rel: str) -> bytes:
        return (self.base.root / rel).read_bytes()


@dataclass
class Case:
    index: int
    base: TableBase
    rel: str  # the replaced file, relative to the base's root
    mutators: str
    data: Optional[bytes]  # None: the file is removed
    folder: Optional[Path] = None  # the copy, once written

    @property
    def table_dir(self) -> Path:
        assert self.folder is not None
        return self.folder / self.base.table if self.base.table else self.folder


def make_case(bases: list[TableBase], seed: int, index: int) -> Case:
    """Case ``index`` of ``seed`` (deterministic): which base, which file, which damage (nothing written yet)."""
    rng = random.Random(f"tables:{seed}:{index}")
    base = bases[rng.randrange(len(bases))]
    rel, kind, _ = rng.choices(base.files, weights=[w for _, _, w in base.files])[0]
    ctx = CaseContext(base, rel)
    data: Optional[bytes] = ctx.read(rel)
    names = []
    for _ in range(rng.choice([1, 1, 1, 2])):
        if data is None:
            break
        mutators = MUTATORS[kind]
        fn = rng.choices([m for m, _ in mutators], weights=[w for _, w in mutators])[0]
        name, data = fn(rng, data, ctx)
        names.append(name)
    return Case(index, base, rel, "+".join(names), data)


def materialize(case: Case, parent: Optional[str] = None) -> Path:
    """Write the case's copy of its base: every file copied except data files (hard-linked, or linked
    symbolically across file systems), and the damaged file replaced."""
    folder = Path(tempfile.mkdtemp(prefix=f"tablefuzz-{case.index}-", dir=parent))
    src_root = case.base.root
    for dirpath, dirnames, filenames in os.walk(src_root):
        rel_dir = Path(dirpath).relative_to(src_root)
        (folder / rel_dir).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            src, dst = Path(dirpath) / name, folder / rel_dir / name
            if (rel_dir / name).as_posix() == case.rel:
                if case.data is not None:
                    dst.write_bytes(case.data)
                continue
            if name.endswith(".parquet") and "_delta_log" not in rel_dir.parts:
                try:
                    os.link(src, dst)
                except OSError:
                    os.symlink(src, dst)
            else:
                shutil.copyfile(src, dst)
    case.folder = folder
    return folder


# ---------------------------------------------------------------------------- user paths
def _documented_open() -> tuple:
    from puffin_explorer import errors

    return tuple(c for c in (errors.SourceError, getattr(errors, "TableNotFoundError", None)) if c is not None)


class TableRun:
    """Runs the steps of one case: a documented error is noted, a ``PuffinError`` out of a lenient path is an
    ``escape``, anything else a ``crash``; a step that used more than ``step_limit`` seconds of CPU is a
    ``stall`` (the case goes on: the later steps are still tried)."""

    def __init__(self, step_limit: Optional[float] = None) -> None:
        from puffin_explorer.errors import PuffinError

        self.PuffinError = PuffinError
        self.clock = fuzz_pool.StepClock(step_limit)
        self.documented: list[str] = []
        self.failures: list[Outcome] = []

    def group(self, fn: Callable[[], Any]) -> Any:
        """Run a group of steps that depend on each other; the first failure ends the group, not the case."""
        try:
            return fn()
        except Outcome as out:
            self.failures.append(out)
            return None

    def step(self, name: str, fn: Callable[[], Any], documented: tuple = ()) -> Any:
        c0 = time.process_time()
        try:
            return fn()
        except (Stall, MemoryError, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - classifying is the point
            if documented and isinstance(exc, documented):
                self.documented.append(f"{name}: {type(exc).__name__}")
                return None
            kind = "escape" if isinstance(exc, self.PuffinError) else "crash"
            raise Outcome(kind, name, describe(exc)) from exc
        finally:
            stall = self.clock.timed(name, time.process_time() - c0)
            if stall is not None:
                self.failures.append(stall)


def card(run: TableRun, name: str, obj: Any) -> None:
    """Everything a notebook or a terminal asks of a displayed object."""
    if obj is None:
        return
    if hasattr(obj, "_repr_mimebundle_"):
        run.step(f"{name}._repr_mimebundle_", obj._repr_mimebundle_)
    if hasattr(obj, "_repr_html_"):
        run.step(f"{name}._repr_html_", obj._repr_html_)
    if hasattr(obj, "to_text"):
        run.step(f"{name}.to_text", obj.to_text)
    run.step(f"{name}.repr", lambda: repr(obj))


def _frame_rows(frame: Any, limit: int) -> list[dict]:
    if frame is None or not hasattr(frame, "head"):
        return []
    return frame.head(limit).to_dict("records")


def run_warehouse(run: TableRun, root: Path, table: str) -> None:
    """The warehouse holding the damaged table: its listing and card, and that table through it."""
    from puffin_explorer import Warehouse

    wh = run.step("Warehouse", lambda: Warehouse(str(root)), _documented_open())
    if wh is None:
        return
    names = run.step("Warehouse.table_names", wh.table_names) or []
    run.step("Warehouse.summary", wh.summary)
    run.step("Warehouse.to_pandas", wh.to_pandas)
    card(run, "Warehouse", wh)
    if table in names:
        card(run, "Warehouse.table", run.step("Warehouse.table", lambda: wh.table(table), _documented_open()))


def run_iceberg_table(run: TableRun, t: Any) -> None:
    card(run, "Table", t)
    run.step("Table.summary", t.summary)
    card(run, "check", run.step("check", t.check))
    run.step("snapshots", t.snapshots)
    run.step("timeline", t.timeline)
    run.step("files", t.files)
    dvs = run.step("dvs", t.dvs)
    card(run, "delete_debt", run.step("delete_debt", t.delete_debt))
    run.step("deleted_rows_per_file", t.deleted_rows_per_file)
    run.step("statistics_files", t.statistics_files)
    run.step("puffin_files", t.puffin_files)
    ids = run.step("snapshot_ids", lambda: [s.snapshot_id for s in t.metadata.snapshots]) or []
    from puffin_explorer.errors import NotInTableError

    for sid in [None] + list(dict.fromkeys(ids))[:MAX_SNAPSHOTS]:
        # the current snapshot of a table that has none is documented to raise NotInTableError
        none = (NotInTableError,) if sid is None and t.metadata.current_snapshot_id is None else ()
        card(run, f"snapshot({'current' if sid is None else 'id'})",
             run.step("snapshot", lambda: t.snapshot(sid), none))
        card(run, "commit_deletes", run.step("commit_deletes", lambda: t.commit_deletes(sid), none))
    for row in run.step("dvs.rows", lambda: _frame_rows(dvs, MAX_READ_DVS)) or []:
        run.step("read_dv", lambda: t.read_dv(row), (run.PuffinError,))


def run_plan(run: TableRun, table: Any) -> None:
    from puffin_explorer.spark.planner import plan_table

    plan = run.step("plan_table", lambda: plan_table(table))
    if plan is None:
        return
    run.step("plan.describe", plan.describe)
    run.step("plan.data_files", plan.data_files)
    run.step("plan.position_delete_files", plan.position_delete_files)
    run.step("plan.dvs", plan.dvs)
    if plan.iceberg:
        run.step("plan.puffin_files", plan.puffin_files)


class _CliError(Exception):
    """What ended a command-line run in the fuzzed case (recorded where the CLI turns errors into messages)."""


def run_cli(run: TableRun, argv: list[str]) -> None:
    """``puffin-explorer ARGV`` in this process: any exit code, but no traceback and no unexpected error."""
    import puffin_explorer.cli as cli
    from puffin_explorer.cli import UsageError

    seen: list[BaseException] = []
    original = cli.describe

    def recording(exc: BaseException, command: str = "") -> tuple[int, str]:
        seen.append(exc)
        return original(exc, command)

    out, err = io.StringIO(), io.StringIO()
    cli.describe = recording
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            run.step("cli " + " ".join(argv[2:]) if len(argv) > 2 else "cli", lambda: cli.main(argv))
    finally:
        cli.describe = original
    name = "cli " + " ".join(a for a in argv if not a.startswith("/"))
    for exc in seen:
        if isinstance(exc, (Stall, MemoryError)):
            raise exc
        if not isinstance(exc, (run.PuffinError, UsageError, KeyboardInterrupt)):
            raise Outcome("crash", name, describe(exc)) from exc
    if "Traceback (most recent call last)" in err.getvalue():
        raise Outcome("crash", name, "traceback on stderr: " + err.getvalue()[-300:])


def run_iceberg(run: TableRun, case: Case, rng: random.Random) -> None:
    from puffin_explorer import Table
    from puffin_explorer.cli.table import VIEWS

    name = case.base.table.replace("/", ".")
    run.group(lambda: run_warehouse(run, case.folder, name))
    tdir, replaced = case.table_dir, case.folder / case.rel

    def table() -> Any:
        t = run.step("Table.from_folder", lambda: Table.from_folder(str(tdir)), _documented_open())
        if case.rel.endswith(".metadata.json") and case.data is not None:  # an older metadata file, or this one
            other = run.step("Table.from_metadata", lambda: Table.from_metadata(str(replaced)), _documented_open())
            if other is not None and (t is None or other.metadata_location != t.metadata_location):
                card(run, "Table(from_metadata)", other)
                t = other if t is None or rng.random() < 0.5 else t
        if t is not None:
            run_iceberg_table(run, t)
        return t

    opened = run.group(table)
    if opened is not None:
        run.group(lambda: run_plan(run, opened))
    for view in VIEWS:
        run.group(lambda: run_cli(run, ["table", str(tdir), view]))
    run.group(lambda: run_cli(run, ["table", str(case.folder), "--table", name, rng.choice(VIEWS),
                                    "--format", rng.choice(["json", "csv", "text"])]))


def run_delta(run: TableRun, case: Case, rng: random.Random) -> None:
    from puffin_explorer import DeltaTable

    folder = str(case.table_dir)

    def table() -> Any:
        d = run.step("DeltaTable", lambda: DeltaTable(folder), _documented_open())
        if d is None:
            return None
        card(run, "DeltaTable", d)
        run.step("DeltaTable.summary", d.summary)
        run.step("totals", d.totals)
        versions = run.step("versions", d.versions)
        run.step("files", d.files)
        dvs = run.step("dvs", d.dvs)
        card(run, "check", run.step("check", d.check))
        run.step("deleted_rows_per_file", d.deleted_rows_per_file)
        for row in run.step("dvs.rows", lambda: _frame_rows(dvs, MAX_READ_DVS)) or []:
            run.step("read_dv", lambda: d.read_dv(row), (run.PuffinError,))
        listed = run.step("versions.list", lambda: [int(v) for v in versions["version"]]) \
            if versions is not None else None
        if listed:
            v = rng.choice(listed)
            older = run.step("DeltaTable(version)", lambda: DeltaTable(folder, version=v), _documented_open())
            card(run, "DeltaTable(version)", older)
        return d

    opened = run.group(table)
    if opened is not None:
        run.group(lambda: run_plan(run, opened))
    run.group(lambda: run_cli(run, ["table", folder]))


RUNNERS = {"iceberg": run_iceberg, "delta": run_delta}


class _LightTableCharts(fuzz_readers._LightCharts):
    """The file fuzzer's light charts, and no table charts (matplotlib's layout costs a tenth of a second
    a chart; the chart functions still run in one case of ``chart_every``)."""

    def __enter__(self):
        from puffin_explorer.display import table_charts

        super().__enter__()
        self.table_charts = table_charts
        self.table_saved = (table_charts.timeline_svg, table_charts.commit_deletes_svg, table_charts.health_svg)
        table_charts.timeline_svg = table_charts.commit_deletes_svg = table_charts.health_svg = lambda model: ""
        return self

    def __exit__(self, *exc):
        (self.table_charts.timeline_svg, self.table_charts.commit_deletes_svg,
         self.table_charts.health_svg) = self.table_saved
        return super().__exit__(*exc)


def run_case(case: Case, seed: int, chart_every: int = 1, step_limit: Optional[float] = None) -> dict:
    """Run one materialized case in this process; its outcome record.  A step (one user operation: opening the
    table, a card, ``check()``, one command line) that uses more than ``step_limit`` seconds of CPU is a stall.

    Charts are drawn for one case in ``chart_every`` (all by default); the others build them from the model only."""
    if chart_every > 1 and case.index % chart_every:
        with _LightTableCharts():
            return run_case(case, seed, step_limit=step_limit)
    run = TableRun(step_limit)
    rng = random.Random(f"table-paths:{seed}:{case.index}")
    record = {"case": case.index, "base": case.base.name, "file": case.rel, "mutators": case.mutators,
              "size": -1 if case.data is None else len(case.data), "outcome": "ok", "step": "", "detail": ""}
    RUNNERS[case.base.kind](run, case, rng)
    record["slowest_step"] = [run.clock.slowest_step[1], round(run.clock.slowest_step[0], 3)]
    if run.failures:
        first = run.failures[0]
        record.update(outcome=first.kind, step=first.step, detail=first.detail,
                      more=[[f.kind, f.step, f.detail] for f in run.failures[1:]])
    elif run.documented:
        record.update(outcome="documented", detail=run.documented[0])
    return record


# ---------------------------------------------------------------------------- the pool
class TableHarness:
    """The table fuzzer's cases for :func:`fuzz_pool.run_pool`."""

    outcomes = OUTCOMES

    def __init__(self, seed: int, chart_every: int = 1, step_limit: Optional[float] = None) -> None:
        self.bases = load_bases()
        self.seed, self.chart_every, self.step_limit = seed, chart_every, step_limit
        # Every case folder lives in here, so the folder of a worker killed mid-case goes at the end too.
        self.folder = tempfile.mkdtemp(prefix="tablefuzz-run-")

    def prepare(self, index: int) -> Case:
        case = make_case(self.bases, self.seed, index)
        materialize(case, self.folder)
        return case

    def run(self, case: Case, index: int) -> dict:
        return run_case(case, self.seed, self.chart_every, self.step_limit)

    def release(self, case: Case) -> None:
        if case.folder is not None:
            shutil.rmtree(case.folder, ignore_errors=True)

    def name(self, index: int) -> tuple[str, str]:
        case = make_case(self.bases, self.seed, index)
        return case.base.name, f"{case.rel}: {case.mutators}"

    def save(self, folder: str, rec: dict) -> None:
        os.makedirs(folder, exist_ok=True)
        case = make_case(self.bases, self.seed, rec["case"])
        stem = os.path.join(folder, f"{rec['outcome']}-{self.seed}-{rec['case']}")
        if case.data is not None:
            Path(stem + "." + case.rel.rsplit("/", 1)[-1]).write_bytes(case.data)
        with open(stem + ".json", "w") as fh:
            json.dump(dict(rec, base=case.base.name, file=case.rel, mutators=case.mutators), fh, indent=1,
                      default=str)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def warm(self) -> None:
        """In each worker before its first case: pyarrow's allocator reserves its arena (1 GiB of address
        space, not of memory) on its first allocation and DuckDB starts its threads on its first connection."""
        import pyarrow as pa

        pa.array(range(16))
        try:
            import duckdb
        except ImportError:
            return
        con = duckdb.connect()
        try:
            con.execute("select 1").fetchall()
        finally:
            con.close()

    def preload(self) -> None:
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401

        import puffin_explorer.cli.table  # noqa: F401
        import puffin_explorer.display  # noqa: F401
        from puffin_explorer.display import table_charts, table_view  # noqa: F401
        from puffin_explorer import DeltaTable, Table, Warehouse  # noqa: F401
        from puffin_explorer.spark import planner  # noqa: F401

        # matplotlib and its fonts, loaded by a case's first chart: once here, not in the step a case is timed by
        import io

        from puffin_explorer.display._figure import NotebookFigure

        figure = NotebookFigure(figsize=(1, 1))
        figure.add_subplot().set_title("warm")
        figure.savefig(io.BytesIO(), format="svg")


#: Default CPU seconds of one operation of a table case: a whole card with its charts and doctor takes up to 2 s
#: on a slow 2-core machine, so a stall is work several times past that, not a slower core.
TIME_LIMIT = 5.0

def run_pool(cases: int, seed: int = 1, workers: int = 2, time_limit: float = 2.0, mem_limit: int = 2 * GIB,
             start: int = 0, save: Optional[str] = None,
             progress: Optional[Callable[[fuzz_pool.Report], None]] = None,
             chart_every: int = 1, step_limit: Optional[float] = None) -> fuzz_pool.Report:
    """Run table cases ``start .. start+cases-1`` on ``workers`` processes; return the tally.

    ``time_limit`` is the CPU of a whole case (every path, a few dozen operations); ``step_limit``, when given,
    that of each operation in it."""
    return fuzz_pool.run_pool(TableHarness(seed, chart_every, step_limit), cases, workers, time_limit, mem_limit,
                              start, save, progress)


def replay(seed: int, index: int, keep: bool = False) -> int:
    """Case ``index`` in this process: its failures with their tracebacks; ``keep`` keeps its folder."""
    bases = load_bases()
    case = make_case(bases, seed, index)
    folder = materialize(case)
    print(f"case {index}: {case.base.name} {case.rel} {case.mutators} "
          f"({'removed' if case.data is None else f'{len(case.data):,} bytes'})")
    print(f"table: {case.table_dir}")
    run = TableRun()
    t0 = time.process_time()
    RUNNERS[case.base.kind](run, case, random.Random(f"table-paths:{seed}:{index}"))
    for out in run.failures:
        print(f"\n{out.kind} in {out.step}: {out.detail}")
        if out.__cause__ is not None:
            traceback.print_exception(out.__cause__)
    print(f"{len(run.failures)} failures; documented: {run.documented[:3]} ({time.process_time() - t0:.2f} s CPU; "
          f"slowest step {run.clock.slowest_step[1]}: {run.clock.slowest_step[0]:.2f} s)")
    if keep:
        print(f"kept; remove the folder with: rm -r {folder}")
    else:
        shutil.rmtree(folder, ignore_errors=True)
    return 1 if run.failures else 0


_CASE_FOLDER = re.compile(r"(?:/[^\s'\"]*/)?tablefuzz-\d+-[A-Za-z0-9_]+")
_NUMBER = re.compile(r"(?<![\w-])-?\d[\d,_.]*(?![\w-])")


def message_shape(detail: str) -> str:
    """A failure's message with case folders, numbers and long runs of one character made generic."""
    text = _CASE_FOLDER.sub("<case>", detail)
    text = re.sub(r"(.)\1{20,}", r"\1…", text)
    return _NUMBER.sub("N", text)[:220]


def failure_classes(failures: list[dict]) -> list[dict]:
    """Failing records (and the later failures of their cases) grouped by outcome, exception type and the
    innermost frame of this project; most frequent first."""
    classes: dict[tuple, dict] = {}
    for rec in failures:
        entries = [[rec["outcome"], rec.get("step", ""), rec.get("detail", "")]] + rec.get("more", [])
        for kind, step, detail in entries:
            head = detail.split(": ")[0]
            exc_type, _, where = head.partition(" at ")
            if kind == "stall":
                exc_type, where = "CPU limit", detail.partition("interrupted at ")[2].rstrip(")")
            key = (kind, exc_type, where)
            c = classes.setdefault(key, {"outcome": kind, "type": exc_type, "where": where, "count": 0,
                                         "cases": [], "steps": {}, "bases": {}, "mutators": {},
                                         "shape": message_shape(detail.partition(": ")[2] or detail)})
            c["count"] += 1
            c["steps"][step] = c["steps"].get(step, 0) + 1
            if c["cases"] and c["cases"][-1] == rec["case"]:
                continue
            c["cases"].append(rec["case"])
            for attr, value in (("bases", rec.get("base", "")),
                                ("mutators", f"{rec.get('file', '').rsplit('/', 1)[-1]}: {rec.get('mutators', '')}")):
                c[attr][value] = c[attr].get(value, 0) + 1
    return sorted(classes.values(), key=lambda c: (-len(c["cases"]), c["outcome"], c["where"]))


def classes_markdown(rep: fuzz_pool.Report, seed: int, title: str = "Table fuzzer: failure classes") -> str:
    """The deduplicated failure classes of a run as Markdown, each with a command that replays one case."""
    def top(d: dict, n: int = 3) -> str:
        return "; ".join(f"`{k}` ×{v}" for k, v in sorted(d.items(), key=lambda kv: -kv[1])[:n])

    classes = failure_classes(rep.failures)
    lines = [f"# {title}", "",
             f"{rep.cases:,} cases, seed {seed}, {rep.seconds:.0f} s, {rep.cpu / max(1, rep.cases):.2f} s of CPU "
             "a case: " +
             ", ".join(f"{k} {v:,}" for k, v in rep.counts.items()) + ".", "",
             f"{len(classes)} classes (outcome, exception type, innermost `puffin_explorer` frame). A case counts "
             "in every class it hit: each group of paths (warehouse, table, planner, each command line) runs on "
             "after another group failed.", ""]
    for i, c in enumerate(classes, 1):
        case = c["cases"][0]
        lines += [f"## {i}. {c['outcome']}: {c['type']} at {c['where'] or '?'}", "",
                  f"- cases: {len(c['cases'])} ({c['count']} hits); first cases: "
                  + ", ".join(str(x) for x in c["cases"][:6]),
                  f"- message: `{c['shape']}`",
                  f"- steps: {top(c['steps'], 4)}",
                  f"- bases: {top(c['bases'])}",
                  f"- damaged file and mutators: {top(c['mutators'])}",
                  f"- replay: `python tests/fuzz/fuzz_tables.py --seed {seed} --replay-case {case}`", ""]
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    fuzz_pool.add_pool_arguments(ap, cases=500, time_limit=TIME_LIMIT)
    ap.add_argument("--chart-every", type=int, default=1,
                    help="draw charts in one case of N (the others build them from the model without drawing)")
    ap.add_argument("--classes", help="write the failure classes (deduplicated, with replay commands) as "
                                      "Markdown here, every 100 cases and at the end")
    ap.add_argument("--keep", action="store_true", help="with --replay-case: keep the case's folder")
    args = ap.parse_args(argv)
    if args.replay_case is not None:
        return replay(args.seed, args.replay_case, args.keep)
    written = [0]

    def write_classes(rep: fuzz_pool.Report) -> None:
        if args.classes and (rep.cases - written[0] >= 100 or rep.cases >= args.cases or rep.interrupted):
            written[0] = rep.cases
            Path(args.classes).write_text(classes_markdown(rep, args.seed))

    return fuzz_pool.run_and_report(
        args, lambda progress: run_pool(args.cases, args.seed, args.workers, fuzz_pool.case_limit(args),
                                        int(args.memory * GIB), args.start, args.save, progress,
                                        args.chart_every, step_limit=args.time_limit), "tables", write_classes)


if __name__ == "__main__":
    raise SystemExit(main())
