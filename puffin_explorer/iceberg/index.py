"""The entry index: every manifest entry of one snapshot in Arrow columns, validated column-wise.

What the region tree is to a file, this index is to a table.  :func:`build_index` reads the
snapshot's manifest list, fetches its manifests through the table's I/O layer in batches bounded
by count and bytes (``io.read_many``, concurrent on object stores), decodes each into one column
chunk of only the fields asked for (cached per manifest-list record, so snapshots that share
manifests decode them once) and concatenates the chunks.  Every live and DELETED entry is a row;
per-column metrics are columns only with ``metrics=True``.

Columns (``EntryIndex.table``, a ``pyarrow.Table``; one row per manifest entry, manifest-list order):

``content`` (int8, the spec's code), ``kind`` (``data``, ``dv``, ``position-deletes``,
``equality-deletes``), ``status`` (int8: 0 existing, 1 added, 2 deleted), ``file_path``,
``file_format``, ``partition`` (int32: index into ``EntryIndex.partitions``, the distinct
partition records — the grouping key; ``EntryIndex.partition_values()`` gives the records),
``spec_id``, ``record_count``, ``file_size_in_bytes``, ``snapshot_id``, ``sequence_number``,
``file_sequence_number``, ``first_row_id`` (inheritance applied as :mod:`.manifests` describes),
``referenced_data_file`` (DuckDB's ``""`` read as null; ``empty_referenced_data_file`` says so),
``content_offset``, ``content_size_in_bytes``, ``equality_ids``, ``sort_order_id``, ``manifest``
(index into ``EntryIndex.manifests``, the manifest-list records) and ``entry`` (index in its
manifest); with ``metrics=True`` also ``column_sizes``, ``value_counts``, ``null_value_counts``,
``nan_value_counts``, ``lower_bounds``, ``upper_bounds`` (lists of ``{key, value}``) and
``split_offsets``.

Decoder, chosen by measurement (``benchmarks/bench_entry_index.py decoders``): the 20 manifests of a
100,000-data-file + 100,000-DV table (40 MB of Avro, 200,000 entries), one fresh process each, CPU
seconds and peak RSS, on a shared 2-core machine — see :data:`.manifest_decoder.DECODER_FIGURES`, and
:mod:`.manifest_decoder` for how the extension is found and the other decoders weighed.  DuckDB's ``read_avro``
is about four times faster than fastavro and hands back Arrow columns, where fastavro hands back a
dict per entry that the index then walks in Python (another ~10 µs per entry); a reader schema that
drops the metrics saves fastavro little (the metrics of three columns are a small part of an entry)
but a third of its memory.  DuckDB reads a file whole or fails and reads only paths, so intact
manifests (a structural scan checks magic, blocks, sizes and sync markers first) go through DuckDB
from ``DUCKDB_FROM_BYTES`` on, written to a private temporary folder; damaged ones, small tables and
anything DuckDB refuses go through fastavro with a reader schema, record by record, which keeps the
records before the damage.

A manifest that cannot be fetched or is damaged is a finding, never an exception: the entries
read before the damage stay in the index.
"""

from __future__ import annotations

import array
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

from .._arrays import sorted_unique
from .._memory import release_freed_memory
from ..errors import NotFoundError, PuffinError, SourceError
from ..regions import Finding, Severity
from . import manifests as mf, vanished
from .avro import read_records
from .numbers import in_range, out_of_range, show, spec_type
from .paths import basename

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from .source import TableSource

KINDS = ("data", "dv", "position-deletes", "equality-deletes")
TOP_FIELDS = ("status", "snapshot_id", "sequence_number", "file_sequence_number")
FILE_FIELDS = ("content", "file_path", "file_format", "partition", "record_count", "file_size_in_bytes",
               "equality_ids", "sort_order_id", "first_row_id", "referenced_data_file", "content_offset",
               "content_size_in_bytes")
METRIC_FIELDS = ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts", "lower_bounds",
                 "upper_bounds", "split_offsets")
#: Manifests fetched per batch: the bytes of two batches are all that is held at once (DuckDB reads one
#: while the last one's columns become chunks; 32 overlapped more of that than 64 at 1,000,000 entries).
BATCH = 32
#: ... and at most this many manifest bytes (by the manifest list's manifest_length).
BATCH_BYTES = 16 << 20
#: ... and at most this many entries (by the manifest list's file counts): the columns of a batch and of the one
#: being decoded are what the build holds besides the index (32 manifests of 10,000 entries held 0.3 GB more
#: than the finished delete index at a million DVs; 8 of them, 0.1 GB; 4 of them peaked 0.09 GB below 8, in the
#: same 3.4 s of ``dvs()``).
BATCH_ENTRIES = 40_000
#: From this many manifest bytes to decode on, DuckDB's read_avro decodes the intact ones (importing
#: and starting it costs about 0.3 s and 35 MB, more than fastavro needs for a few small manifests).
DUCKDB_FROM_BYTES = 256 << 10
#: DuckDB queries decoding one batch of manifests at once: one per core this process may run on, at most 4.
DECODE_WORKERS = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else
                            (os.cpu_count() or 1)))
#: From this many manifests on, a build in an interactive terminal or notebook shows a progress bar.
PROGRESS_FROM = 200
#: ``EntryIndex.take`` slices runs of consecutive rows when they average at least this many rows, else takes.
ROWS_PER_SLICE = 64
#: Findings of one code listed one by one; the rest are counted in one more finding.
FINDINGS_PER_CODE = 10


def _schema(metrics: bool) -> "pa.Schema":
    import pyarrow as pa

    cols = [("content", pa.int8()), ("kind", pa.string()), ("status", pa.int8()), ("file_path", pa.string()),
            ("file_format", pa.string()), ("partition", pa.int32()), ("spec_id", pa.int32()),
            ("record_count", pa.int64()), ("file_size_in_bytes", pa.int64()), ("snapshot_id", pa.int64()),
            ("sequence_number", pa.int64()), ("file_sequence_number", pa.int64()), ("first_row_id", pa.int64()),
            ("referenced_data_file", pa.string()), ("empty_referenced_data_file", pa.bool_()),
            ("content_offset", pa.int64()), ("content_size_in_bytes", pa.int64()),
            ("equality_ids", pa.list_(pa.int32())), ("sort_order_id", pa.int32()), ("manifest", pa.int32()),
            ("entry", pa.int32())]
    if metrics:
        counts = pa.list_(pa.struct([("key", pa.int32()), ("value", pa.int64())]))
        cols += [("column_sizes", counts), ("value_counts", counts), ("null_value_counts", counts),
                 ("nan_value_counts", counts),
                 ("lower_bounds", pa.list_(pa.struct([("key", pa.int32()), ("value", pa.binary())]))),
                 ("upper_bounds", pa.list_(pa.struct([("key", pa.int32()), ("value", pa.binary())]))),
                 ("split_offsets", pa.list_(pa.int64()))]
    return pa.schema(cols)


def _projection(metrics: bool) -> Callable[[dict], dict]:
    """Reader schema from a manifest's writer schema: the entry fields and data_file fields the index keeps."""
    keep_file = set(FILE_FIELDS) | (set(METRIC_FIELDS) if metrics else set())

    def project(schema: dict) -> dict:
        fields = []
        for f in schema.get("fields", []):
            if f.get("name") == "data_file" and isinstance(f.get("type"), dict):
                t = dict(f["type"])
                t["fields"] = [g for g in t.get("fields", []) if g.get("name") in keep_file]
                fields.append({**f, "type": t})
            elif f.get("name") in TOP_FIELDS:
                fields.append(f)
        return {**schema, "fields": fields}

    return project


def _finding(code: str, severity: Severity, file: str, message: str, offset: Optional[int] = None,
             hint: str = "") -> Finding:
    from .findings import TableFinding

    return TableFinding(code=code, severity=severity, offset=offset, message=message, hint=hint, file=file)


@dataclass
class EntryIndex:
    """One snapshot's manifest entries as columns (see the module docstring), and what reading them found."""

    snapshot_id: Optional[int]
    table: Any  # pyarrow.Table
    manifests: list[dict[str, Any]]
    partitions: "PartitionRecords"
    findings: list[Finding] = field(default_factory=list)
    metrics: bool = False
    #: the places in ``manifests`` of the manifests whose entries are not all here (gone before they were read,
    #: unreadable, damaged): the counts of the snapshot miss what they hold (their findings say which)
    unread: tuple = ()
    #: the snapshot's manifest list could not be read: none of its files are here
    list_unread: bool = False
    #: what analyses derived from these entries (the index never changes once built), by name
    derived: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return self.table.num_rows

    @property
    def columns(self) -> list[str]:
        return self.table.column_names

    def column(self, name: str):
        """One column as a numpy array (nulls of integer columns as -1 for ``fill`` use; see :meth:`ints`)."""
        return self.table.column(name).to_numpy(zero_copy_only=False)

    def ints(self, name: str, fill: int = 0):
        """An integer column as int64 numpy, nulls replaced by ``fill``."""
        import pyarrow.compute as pc

        return pc.fill_null(self.table.column(name), fill).to_numpy().astype("int64", copy=False)

    def mask(self, kinds: Optional[Iterable[str]] = None, live: bool = True, deletes: Optional[bool] = None):
        """Boolean numpy mask of rows: of these ``kinds``, live only (status not DELETED), and
        ``deletes`` True / False for delete / data manifests only."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        m = np.ones(len(self), dtype=bool)
        if live:
            m &= self.ints("status", 1) != 2
        if kinds is not None:
            m &= pc.is_in(self.table.column("kind"), value_set=pa.array(list(kinds), pa.string())) \
                .to_numpy(zero_copy_only=False)
        if deletes is not None:
            manifest_deletes = np.array([m_.get("content") == 1 for m_ in self.manifests] or [False], dtype=bool)
            m &= manifest_deletes[self.ints("manifest")] == deletes
        return m

    def rows(self, mask=None, columns: Optional[list[str]] = None):
        """A ``pyarrow.Table`` of the rows a boolean mask selects (all when None), of ``columns`` only when given
        (by :meth:`take`: runs of consecutive rows are slices, not copies)."""
        import numpy as np

        if mask is None or np.asarray(mask).all():  # a filter copies even a table it keeps whole
            return self.table if columns is None else self.table.select(columns)
        return self.take(np.flatnonzero(mask), columns)

    def take(self, positions, columns: Optional[list[str]] = None):
        """A ``pyarrow.Table`` of the rows at ascending ``positions``, of ``columns`` only when given: the runs of
        consecutive rows are slices of the index (no copy; a manifest's entries are one run), a take only when
        the rows are scattered (Arrow's take copies every value, the metrics' lists and maps one by one)."""
        return take_runs(self.table if columns is None else self.table.select(columns), positions)

    def partition_values(self, codes) -> list:
        """The partition records of ``codes`` (values of the ``partition`` column)."""
        parts = self.partitions
        codes = list(codes)
        valid = [i for i, c in enumerate(codes) if c is not None and 0 <= c < len(parts)]
        out = [None] * len(codes)
        for i, value in zip(valid, parts.take([codes[i] for i in valid])):
            out[i] = value
        return out

    def manifest_paths(self, codes) -> list[str]:
        paths = [m.get("manifest_path") for m in self.manifests]
        return [paths[c] for c in codes]

    def to_dicts(self, mask=None) -> list[dict[str, Any]]:
        """Rows as the flat dicts :func:`.manifests.read_manifest` returns (the ``entries()`` shape)."""
        return self.dicts_of(self.rows(mask))

    def row(self, position: int) -> dict[str, Any]:
        """One row (by position in the index) as an ``entries()`` dict."""
        return self.dicts_of(self.table.slice(position, 1))[0]

    def dicts_of(self, t) -> list[dict[str, Any]]:
        """Rows of a selection of this index (``rows()``, ``table.slice``, ``take``) as ``entries()`` dicts."""
        import numpy as np
        import pyarrow as pa

        n = t.num_rows
        if not n:
            return []
        names = pa.array([mf.STATUS_NAMES.get(i, str(i)) for i in range(-128, 128)], pa.string())
        status = t.column("status")
        paths = pa.array([m.get("manifest_path") for m in self.manifests], pa.string())
        cols = {}
        for name in t.column_names:
            if name == "status":
                cols["status_code"] = status
                codes = np.asarray(status.to_numpy(zero_copy_only=False), dtype=np.float64)
                codes = np.where(np.isnan(codes), 0, codes).astype(np.int64) + 128
                cols["status"] = names.take(pa.array(codes))
            elif name == "manifest":
                cols["manifest_path"] = paths.take(t.column("manifest"))
            elif name == "entry":
                cols["manifest_entry_index"] = t.column("entry")
            elif name not in ("partition", "empty_referenced_data_file"):
                cols[name] = t.column(name)
        out = pa.table(cols).to_pylist()
        parts = self.partition_values(t.column("partition").to_pylist())
        empty = t.column("empty_referenced_data_file").to_pylist()
        for d, p, e in zip(out, parts, empty):
            d["partition"] = p
            if e:
                d["empty_referenced_data_file"] = True
        return out


#: The column-wise key of a null partition record (registered through :func:`registry_key` instead).
_NULL_RECORD = "\x00null"


def take_runs(table, positions):
    """The rows of a ``pyarrow.Table`` at ascending ``positions``: runs of consecutive rows as slices (no copy)
    when they average :data:`ROWS_PER_SLICE` rows or more, else :func:`take_rows`."""
    import numpy as np
    import pyarrow as pa

    at = np.asarray(positions, dtype=np.int64)
    breaks = np.flatnonzero(np.diff(at) != 1) + 1
    if not len(at) or len(breaks) * ROWS_PER_SLICE > len(at):
        return take_rows(table, at)
    bounds = zip(np.concatenate([[0], breaks]).tolist(), np.concatenate([breaks, [len(at)]]).tolist())
    return pa.concat_tables([table.slice(int(at[a]), b - a) for a, b in bounds])


def take_rows(table, positions):
    """The rows of a ``pyarrow.Table`` at ``positions`` (in that order), taken chunk by chunk.

    Arrow's ``take`` of a chunked string or list column first concatenates its chunks: a few rows of the index
    (one chunk per manifest) cost a copy of every path (270 MB of resident memory and 0.25 s for 1,000 rows of a
    million-file index). Here each chunk gives its own rows and only those are put together."""
    import numpy as np
    import pyarrow as pa

    at = np.asarray(positions, dtype=np.int64)
    if not len(at):  # (Arrow concatenates the chunks even to take no row)
        return table.slice(0, 0)
    batches = table.to_batches()
    if len(batches) <= 1:
        return table.take(pa.array(at, pa.int64()))
    bounds = np.cumsum([0] + [b.num_rows for b in batches])
    if at.min() < 0 or at.max() >= bounds[-1]:
        raise IndexError(f"row positions out of bounds for a table of {int(bounds[-1]):,} rows")
    ascending = bool((np.diff(at) >= 0).all())
    order = None if ascending else np.argsort(at, kind="stable")
    ordered = at if order is None else at[order]
    which = np.searchsorted(bounds, ordered, side="right") - 1
    cuts = np.flatnonzero(np.diff(which)) + 1
    parts = [batches[int(which[a])].take(pa.array(ordered[a:b] - bounds[which[a]]))
             for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), len(ordered)])]
    got = pa.Table.from_batches(parts, schema=table.schema)
    if order is None:
        return got
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return got.combine_chunks().take(pa.array(inverse))


def _record_names(names: Iterable[Any]) -> str:
    return "".join(f"{len(str(n))}:{n}" for n in names) + "|"


def registry_key(value: Any) -> Any:
    """The key of a partition record in the table's registry: for a record of names and None, boolean, integer,
    string or date values, the text :func:`_struct_keys` makes column-wise (each name and value with its length,
    values tagged by kind: no two records share one); for any other record the tuple of its items (their
    ``repr`` when not hashable); for a value that is not a record, ``("", repr)``."""
    import datetime

    if not isinstance(value, dict):
        return ("", repr(value))
    out = [_record_names(value)]
    for v in value.values():
        if v is None:
            out.append("n")
            continue
        if isinstance(v, bool):
            tag, text = "b", "true" if v else "false"
        elif isinstance(v, int):
            tag, text = "i", str(v)
        elif isinstance(v, str):
            tag, text = "s", v
        elif type(v) is datetime.date:
            tag, text = "d", v.isoformat()
        else:
            try:
                key = tuple(value.items())
                hash(key)
                return key
            except TypeError:
                return repr(sorted(value.items(), key=lambda kv: str(kv[0])))
        out.append(f"{tag}{len(text)}:{text}")
    return "".join(out)


def _struct_keys(arr) -> Any:
    """:func:`registry_key` of each record of a struct column, made column-wise; None for a column with a field
    of another kind (or not a struct of fields)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_struct(arr.type) or not arr.type.num_fields:
        return None
    parts: list[Any] = [_record_names(f.name for f in arr.type)]
    for i, f in enumerate(arr.type):
        t = f.type
        tag = "i" if pa.types.is_integer(t) else "s" if pa.types.is_string(t) or pa.types.is_large_string(t) else \
            "b" if pa.types.is_boolean(t) else "d" if pa.types.is_date32(t) else None
        if tag is None:
            return None
        text = pc.struct_field(arr, [i]).cast(pa.string())
        parts.append(pc.fill_null(pc.binary_join_element_wise(tag, pc.utf8_length(text).cast(pa.string()), ":", text,
                                                              ""), "n"))
    key = pc.binary_join_element_wise(*parts, "")
    return pc.if_else(arr.is_null(), _NULL_RECORD, key) if arr.null_count else key


class _Decoder:
    """Turns the bytes of one manifest into one column chunk, recording what is wrong with it."""

    def __init__(self, metrics: bool, cache: "EntryCache") -> None:
        self.metrics = metrics
        self.schema = _schema(metrics)
        self.project = _projection(metrics)
        self.key = f"entry-index:{int(metrics)}"
        self.partitions = cache.partitions
        self._partition_codes = cache.partition_codes
        self._cache = cache
        self.findings: list[tuple[str, Severity, str, str, Optional[int]]] = []

    def _partition_code(self, value: Any) -> int:
        return self._register(registry_key(value), value)

    def _register(self, key: Any, value: Any, shape: Optional[int] = None) -> int:
        """The code of the partition record ``value`` under its registry ``key``, registered if new (``shape``:
        the number of its field names, when the caller knows it)."""
        code = self._partition_codes.get(key)
        if code is None:
            code = len(self.partitions)
            self._partition_codes.add(key, code)
            self.partitions.append(value)
            self._cache.partition_shapes.append(self._cache.shape_of(value) if shape is None else shape)
        return code

    def _register_new(self, keys: Any, records: Any, shape: int) -> int:
        """Register records whose keys (an Arrow string array) are distinct and not registered yet, at once, as
        :meth:`_register` would one by one; records and keys stay Arrow (no Python object per partition).
        Returns the first of their consecutive codes."""
        first = len(self.partitions)
        self.partitions.extend_arrow(records)
        self._cache.partition_shapes.extend(array.array("i", [shape]) * len(keys))
        self._partition_codes.add_arrow(keys, first)
        return first

    def chunk(self, data: bytes, manifest: dict[str, Any], location: str):
        """The manifest's entries as a ``pyarrow.Table`` (``manifest`` column 0: set when assembled)."""
        import pyarrow as pa

        self.findings = []
        name = manifest.get("manifest_path") or location
        got = read_records(data, self.project, self.key)
        if got.damage is not None:
            claimed = mf.manifest_counts(manifest)
            total = claimed if claimed is not None else got.claimed
            self.findings.append((
                "iceberg.manifest-damaged" if got.records or got.damage.offset else "iceberg.manifest-unreadable",
                Severity.ERROR, name,
                f"{basename(name)}: cannot read Avro from byte {got.damage.offset:,} ({got.damage.reason}): "
                f"{len(got.records):,} of {total:,} records read", got.damage.offset))
        records = got.records
        meta = got.metadata
        m_seq = manifest.get("sequence_number")
        m_seq = 0 if m_seq is None else m_seq
        m_snapshot = manifest.get("added_snapshot_id")
        next_row_id = manifest.get("first_row_id")
        fmt = meta.get("format-version")
        v1 = fmt == "1" or (fmt is None and records and "sequence_number" not in records[0])
        n = len(records)
        status, snapshot, seq, fseq, content, frid, part = [], [], [], [], [], [], []
        files: dict[str, list] = {f: [] for f in FILE_FIELDS if f not in ("partition",)}
        metric_cols: dict[str, list] = {f: [] for f in METRIC_FIELDS} if self.metrics else {}
        bad = self._bad(name)
        for i, rec in enumerate(records):
            df = rec.get("data_file")
            if not isinstance(df, dict):
                bad(i, "data_file", df)
                df = {}
            st = rec.get("status")
            status.append(st)
            sid = rec.get("snapshot_id")
            snapshot.append(m_snapshot if sid is None else sid)
            if v1:
                seq.append(0)
                fseq.append(0)
            else:
                s, fs = rec.get("sequence_number"), rec.get("file_sequence_number")
                seq.append(m_seq if s is None and st == 1 else s)
                fseq.append(m_seq if fs is None and st == 1 else fs)
            c = df.get("content", 0)
            c = 0 if c is None else c
            content.append(c)
            for f, col in files.items():
                col.append(df.get(f))
            for f, col in metric_cols.items():
                col.append(df.get(f))
            part.append(self._partition_code(df.get("partition")))
            r = df.get("first_row_id")
            if c == mf.CONTENT_DATA:
                if r is None and next_row_id is not None:
                    try:
                        r = int(next_row_id)
                        next_row_id = r + int(df.get("record_count") or 0)
                    except (TypeError, ValueError):
                        r = None
                frid.append(r)
            else:
                frid.append(None)
        ref = files.pop("referenced_data_file")
        empty = [x == "" for x in ref]
        ref = [None if x == "" else x for x in ref]
        fmt_col = self._column(files.pop("file_format"), pa.string(), name, "file_format")
        content_arr = self._column(content, pa.int8(), name, "content")
        cols = {
            "content": content_arr,
            "kind": _kinds(content_arr, fmt_col),
            "status": self._column(status, pa.int8(), name, "status"),
            "file_path": self._column(files.pop("file_path"), pa.string(), name, "file_path"),
            "file_format": fmt_col,
            "partition": pa.array(part, pa.int32()),
            "spec_id": pa.array([manifest.get("partition_spec_id")] * n, pa.int32()),
            "record_count": self._column(files.pop("record_count"), pa.int64(), name, "record_count"),
            "file_size_in_bytes": self._column(files.pop("file_size_in_bytes"), pa.int64(), name,
                                               "file_size_in_bytes"),
            "snapshot_id": self._column(snapshot, pa.int64(), name, "snapshot_id"),
            "sequence_number": self._column(seq, pa.int64(), name, "sequence_number"),
            "file_sequence_number": self._column(fseq, pa.int64(), name, "file_sequence_number"),
            "first_row_id": self._column(frid, pa.int64(), name, "first_row_id"),
            "referenced_data_file": self._column(ref, pa.string(), name, "referenced_data_file"),
            "empty_referenced_data_file": pa.array(empty, pa.bool_()),
            "content_offset": self._column(files.pop("content_offset"), pa.int64(), name, "content_offset"),
            "content_size_in_bytes": self._column(files.pop("content_size_in_bytes"), pa.int64(), name,
                                                  "content_size_in_bytes"),
            "equality_ids": self._column(files.pop("equality_ids"), pa.list_(pa.int32()), name, "equality_ids"),
            "sort_order_id": self._column(files.pop("sort_order_id"), pa.int32(), name, "sort_order_id"),
            "manifest": pa.array([0] * n, pa.int32()),
            "entry": pa.array(range(n), pa.int32()),
        }
        for f, values in metric_cols.items():
            cols[f] = self._column(values, self.schema.field(f).type, name, f)
        return pa.Table.from_arrays([cols[f.name] for f in self.schema], schema=self.schema)

    def chunk_from_arrow(self, raw, manifest: dict[str, Any], meta: dict[str, str], partition_codes: Any):
        """The manifest's entries from DuckDB's columns: inheritance and kinds applied column-wise
        (``partition_codes``: its rows' codes, from :meth:`_partition_codes_of` over the whole read; None for
        an unpartitioned spec)."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        self.findings = []
        n = raw.num_rows
        sch = self.schema

        def col(name: str):
            c = raw.column(name)
            type_ = sch.field(name).type
            if c.null_count == len(c):  # a field the writer schema lacks (selected as NULL) or all null
                return pa.nulls(len(c), type_)
            return _map_as_list(c, type_) if pa.types.is_map(c.type) else c.cast(type_)

        status = col("status")
        content = pc.fill_null(col("content"), 0)
        v1 = meta.get("format-version") == "1" or (meta.get("format-version") is None and
                                                     raw.column("sequence_number").null_count == n and n > 0)
        m_seq = manifest.get("sequence_number")
        m_seq = 0 if m_seq is None else int(m_seq)
        added = pc.fill_null(pc.equal(status, 1), False)
        if v1:
            seq = fseq = pa.array(np.zeros(n, dtype=np.int64))
        else:
            seq = pc.if_else(pc.and_(added, col("sequence_number").is_null()), m_seq, col("sequence_number"))
            fseq = pc.if_else(pc.and_(added, col("file_sequence_number").is_null()), m_seq,
                              col("file_sequence_number"))
        snapshot = col("snapshot_id")
        if manifest.get("added_snapshot_id") is not None:
            snapshot = pc.fill_null(snapshot, int(manifest["added_snapshot_id"]))
        frid = col("first_row_id")
        is_data = pc.equal(content, 0).to_numpy(zero_copy_only=False)
        start = manifest.get("first_row_id")
        if start is not None:
            inherit = is_data & frid.is_null().to_numpy(zero_copy_only=False)
            counts = np.where(inherit, pc.fill_null(col("record_count"), 0).to_numpy(zero_copy_only=False), 0)
            if abs(float(start) + float(counts.sum(dtype=np.float64))) >= 2.0 ** 62 and \
                    not in_range(int(start) + sum(int(c) for c in counts), "long"):
                raise ValueError("row ids past a long")  # the fastavro walker reports each one
            assigned = int(start) + np.cumsum(counts) - counts
            frid = pc.if_else(pa.array(inherit), pa.array(assigned, pa.int64()), frid)
        frid = pc.if_else(pa.array(is_data), frid, pa.nulls(n, pa.int64()))
        ref = col("referenced_data_file")
        empty = pc.fill_null(pc.equal(ref, ""), False)
        ref = pc.if_else(empty, pa.nulls(n, pa.string()), ref)
        fmt_col = col("file_format")
        if partition_codes is not None:
            part = partition_codes
        else:
            part = pa.array(np.full(n, self._partition_code({}), dtype=np.int32))
        cols = {
            "content": content.cast(pa.int8()), "kind": _kinds(content, fmt_col), "status": status,
            "file_path": col("file_path"), "file_format": fmt_col, "partition": part,
            "spec_id": pa.array([manifest.get("partition_spec_id")] * n, pa.int32()),
            "record_count": col("record_count"), "file_size_in_bytes": col("file_size_in_bytes"),
            "snapshot_id": snapshot, "sequence_number": seq, "file_sequence_number": fseq, "first_row_id": frid,
            "referenced_data_file": ref, "empty_referenced_data_file": empty,
            "content_offset": col("content_offset"), "content_size_in_bytes": col("content_size_in_bytes"),
            "equality_ids": col("equality_ids"), "sort_order_id": col("sort_order_id"),
            "manifest": pa.array(np.zeros(n, dtype=np.int32)), "entry": pa.array(np.arange(n, dtype=np.int32)),
        }
        for f in METRIC_FIELDS if self.metrics else ():
            cols[f] = col(f)
        return pa.Table.from_arrays([cols[f.name] for f in sch], schema=sch)

    def _partition_codes_of(self, column):
        """Registry codes of a partition column (call it once per DuckDB read: a lookup costs a pass over the
        registry's keys).  A record of names and integer, string, boolean or date values gets its
        :func:`registry_key` made column-wise, looked up and registered in Arrow; a null record, and any other
        kind of column, one Python record per distinct value."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        keys = _struct_keys(arr)
        if keys is None:  # another kind of record: dictionary-encoded by text, registered value by value
            texts = pc.cast(arr, pa.string()) if not pa.types.is_struct(arr.type) else \
                pa.array([repr(v) for v in arr.to_pylist()], pa.string())
            enc = texts.dictionary_encode()
            idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            _, first = np.unique(idx, return_index=True)
            found = np.array([self._register(registry_key(value), value)
                              for value in arr.take(pa.array(first)).to_pylist()], dtype=np.int64)
            return pa.array(found.astype(np.int32)[idx], pa.int32())
        enc = keys.dictionary_encode()
        idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        distinct = enc.dictionary
        found = self._partition_codes.lookup_arrow(distinct)
        new = np.flatnonzero(found < 0)
        if new.size:  # records the table has not had yet
            _, first = np.unique(idx, return_index=True)  # the first row of each dictionary entry, in order
            records = arr.take(pa.array(first[new]))
            shape = self._cache.shape_number(tuple(dict.fromkeys(f.name for f in arr.type)))
            if records.null_count:  # a null record is keyed by value: one by one, in order
                texts = distinct.take(pa.array(new)).to_pylist()
                for i, key, value in zip(new.tolist(), texts, records.to_pylist()):
                    found[i] = self._register(key, value, shape) if value is not None else \
                        self._register(registry_key(value), value)
            else:
                found[new] = self._register_new(distinct.take(pa.array(new)), records, shape) + \
                    np.arange(new.size)
        return pa.array(found.astype(np.int32)[idx], pa.int32())

    def _bad(self, name: str):
        def bad(i: int, field_name: str, value: Any) -> None:
            self.findings.append(("iceberg.entry-type", Severity.ERROR, name,
                                  f"{basename(name)} entry {i}: {field_name} is {type(value).__name__} "
                                  f"{_short(value)}, not the spec's type; read as null", None))
        return bad

    def _column(self, values: list, type_, name: str, field_name: str):
        """``values`` as an Arrow array of ``type_``; a value of another type is a finding and a null."""
        import pyarrow as pa

        try:
            return pa.array(values, type_)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            pass
        good = []
        kind = spec_type(field_name)
        for i, v in enumerate(values):
            if out_of_range(v, kind):  # the spec's type first: 2**53 + 1 in an int is a range finding
                self._out_of_range(name, i, field_name, v, kind)
                good.append(None)
                continue
            try:
                pa.array([v], type_)
                good.append(v)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
                self._bad(name)(i, field_name, v)
                good.append(None)
        return pa.array(good, type_)

    def _out_of_range(self, name: str, i: int, field_name: str, value: int, kind: str) -> None:
        self.findings.append(("iceberg.manifest-number-range", Severity.ERROR, name,
                              f"{basename(name)} entry {i}: {field_name} is {show(value)}, outside the range of "
                              f"{'an int' if kind == 'int' else 'a long'}; read as absent", None))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kinds(content, file_format):
    """The ``kind`` column from content codes and file formats (vectorised)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    c = pc.fill_null(content, -1).to_numpy().astype(np.int64)
    puffin = pc.equal(pc.utf8_lower(pc.fill_null(file_format, "")), "puffin").to_numpy(zero_copy_only=False)
    out = np.full(len(c), "", dtype=object)
    out[c == 0] = "data"
    out[(c == 1) & puffin] = "dv"
    out[(c == 1) & ~puffin] = "position-deletes"
    out[c == 2] = "equality-deletes"
    other = ~np.isin(c, (0, 1, 2))
    if other.any():
        out[other] = [f"content-{v}" if v >= 0 else "content-None" for v in c[other]]
    return pa.array(out, pa.string())


def _show_progress(progress: Optional[bool], manifests: int) -> bool:
    """A bar when asked for, or from PROGRESS_FROM manifests on in a terminal or a notebook kernel."""
    from ..progress import wanted

    return wanted(progress, manifests, PROGRESS_FROM)


def _progress_bar(total: int, label: str):
    from ..progress import bar

    return bar(total, label, "manifest")


class _DuckDB:
    """DuckDB's ``read_avro`` over manifests whose container structure is intact, straight to Arrow.

    The bytes come from the table's I/O layer and are written to a private temporary folder (DuckDB
    reads paths), which exists only while reads are running (a Spark worker's reader outlives many reads, and
    its process may end without running exit handlers); files of one writer schema are read in one query.  Any DuckDB error sends those
    manifests to the fastavro path, which says what is wrong record by record.  The connection reads that
    folder and nothing else (``allowed_directories``, no external access, the configuration locked): the folder's
    path is chosen once, and made again there (private to this user) when a read starts after it was removed.
    """

    def __init__(self) -> None:
        import os
        import tempfile
        from concurrent.futures import ThreadPoolExecutor

        import duckdb

        from .._engine import locked_duckdb
        from .manifest_decoder import load_avro

        self.scratch = tempfile.mkdtemp(prefix="puffin-explorer-manifests-")  # its name, kept for the connection
        os.rmdir(self.scratch)
        # one thread: rows come back in file order; its scratch files are read once (no file cache)
        self.con = locked_duckdb([self.scratch], setup=["SET enable_external_file_cache = false", load_avro])
        self.error = duckdb.Error
        self.folder: Optional[str] = None  # made by start(), removed when no read is running
        self.written = 0
        self.pool = ThreadPoolExecutor(DECODE_WORKERS, thread_name_prefix="puffin-explorer-avro")
        self.running: list[_Read] = []

    def close(self) -> None:
        """Interrupt the reads still running, wait for their threads, and remove the scratch folder."""
        import shutil

        for read in self.running:
            read.interrupt()
        self.pool.shutdown(wait=True, cancel_futures=True)
        for read in self.running:
            read.close()
        self.con.close()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def start(self, datas: list[bytes], writer: dict, metrics: bool) -> "_Read":
        """Start reading the projected columns of these manifests (one writer schema) in the background:
        up to :data:`DECODE_WORKERS` queries at once, each over a consecutive share of the manifests
        (DuckDB decodes without holding the GIL, so the caller goes on turning the last batch into chunks)."""
        import os

        if self.folder is None:
            os.mkdir(self.scratch, 0o700)  # raises when something else is there now: fastavro decodes then
            self.folder = self.scratch
        paths = []
        for data in datas:
            path = os.path.join(self.folder, f"{self.written}.avro")
            self.written += 1
            with open(path, "wb") as fh:
                fh.write(data)
            paths.append(path)
        sql = _read_avro_sql(writer, metrics)
        step = -(-len(paths) // min(len(paths), DECODE_WORKERS))
        shares = [paths[i:i + step] for i in range(0, len(paths), step)]
        cursors = [self.con.cursor() for _ in shares]
        futures = [self.pool.submit(lambda c, s: _arrow_table(c.execute(sql, [s])), cur, share)
                   for cur, share in zip(cursors, shares)]
        read = _Read(paths, cursors, futures)
        self.running.append(read)
        return read

    def collect(self, read: "_Read"):
        """The paths and the columns of a started read, with a ``filename`` column; rows in the order of the
        manifests, each manifest's contiguous.  Ctrl-C (or any error) interrupts its other queries."""
        import os
        from concurrent.futures import wait

        import pyarrow as pa

        try:
            tables = [f.result() for f in read.futures]
        except BaseException:
            read.interrupt()
            wait(read.futures)  # interrupted queries end at once; their cursors and files go after
            raise
        finally:
            if read in self.running:
                self.running.remove(read)
            read.close()
            if not self.running and self.folder is not None:
                try:
                    os.rmdir(self.folder)  # its files went with their reads
                    self.folder = None
                except OSError:
                    pass
        return read.paths, pa.concat_tables(tables) if len(tables) > 1 else tables[0]


@dataclass
class _Read:
    """One started DuckDB read: its scratch files, cursors and queries."""

    paths: list[str]
    cursors: list[Any]
    futures: list[Any]

    def interrupt(self) -> None:
        for cur in self.cursors:
            try:
                cur.interrupt()
            except Exception:  # noqa: BLE001 - already finished
                pass

    def close(self) -> None:
        import os

        for f in self.futures:
            f.cancel()
        for cur in self.cursors:
            try:
                cur.close()
            except Exception:  # noqa: BLE001 - closed, or its query still ends on interrupt
                pass
        for path in self.paths:
            try:
                os.remove(path)
            except OSError:
                pass


def _read_avro_sql(writer: dict, metrics: bool) -> str:
    """DuckDB's query of the index's columns from manifests of the Avro ``writer`` schema."""
    top = {f.get("name"): f for f in writer.get("fields", [])}
    df_type = (top.get("data_file") or {}).get("type")
    sub = {f.get("name"): f for f in df_type.get("fields", [])} if isinstance(df_type, dict) else {}
    select = ["filename"]
    for name in TOP_FIELDS:
        select.append(f'"{name}"' if name in top else f'NULL AS "{name}"')
    wanted = FILE_FIELDS + (METRIC_FIELDS if metrics else ())
    for name in wanted:
        if name == "partition":
            ptype = (sub.get("partition") or {}).get("type")
            if isinstance(ptype, dict) and ptype.get("type") == "record" and not ptype.get("fields"):
                continue  # an unpartitioned spec's empty record: DuckDB has no empty struct
        select.append(f'data_file."{name}" AS "{name}"' if name in sub else f'NULL AS "{name}"')
    return f"SELECT {', '.join(select)} FROM read_avro(?, filename=true)"


#: Address space DuckDB needs free to start: under a lower ``ulimit -v`` its connect aborts the process
#: (a C++ ``terminate``, not an exception); measured: 64 MiB over a bare interpreter aborts, 128 MiB starts.
DUCKDB_HEADROOM = 512 << 20


def _address_space_headroom() -> Optional[int]:
    """Bytes this process may still map under its address-space limit (``ulimit -v``), or None without one."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/statm") as fh:
            used = int(fh.read().split()[0]) * resource.getpagesize()
        return soft - used
    except (ImportError, OSError, ValueError, IndexError):
        return None


def _arrow_table(cursor):
    """An executed DuckDB cursor's result as a ``pyarrow.Table``: ``to_arrow_table()`` from DuckDB 1.4 on, ``arrow()``
    before (1.3 has no ``to_arrow_table``; without this every read fell back to fastavro there)."""
    return cursor.to_arrow_table() if hasattr(cursor, "to_arrow_table") else cursor.arrow()


def _duckdb() -> Optional[_DuckDB]:
    """A DuckDB manifest reader, or None where it cannot run (fastavro decodes then; :func:`slow_reason` says why)."""
    if slow_reason() is not None:
        return None
    try:
        return _DuckDB()
    except Exception:  # noqa: BLE001 - it loaded once in this process and not now: fastavro decodes
        return None


def slow_reason() -> Optional[str]:
    """Why this process decodes manifests with fastavro rather than DuckDB, with the remedy; None when it need not."""
    from .manifest_decoder import decoder

    headroom = _address_space_headroom()
    if headroom is not None and headroom < DUCKDB_HEADROOM:  # DuckDB would abort the process rather than raise
        return (f"the process's address-space limit (ulimit -v) leaves {headroom >> 20:,} MiB, and DuckDB needs "
                f"{DUCKDB_HEADROOM >> 20:,} MiB to start; raise the limit")
    found = decoder()
    return None if found.fast else f"{found.reason}; to decode them fast: {found.remedy}"


def decoder_label() -> str:
    """``"duckdb-avro"``, or ``"fastavro: "`` and :func:`slow_reason`'s why: the decoder ``pes.plan`` names."""
    reason = slow_reason()
    return "duckdb-avro" if reason is None else f"fastavro: {reason}"


#: The info finding of an index whose manifests were decoded the slow way (:func:`slow_reason` says why).
SLOW_DECODE = "iceberg.manifests-decoded-slowly"


def _slow_finding(source: "TableSource", slow: tuple[int, int]) -> list[tuple]:
    """The one info finding of a build that decoded at least ``SLOW_FINDING_FROM_BYTES`` of manifests slowly."""
    from .manifest_decoder import SLOW_FINDING_FROM_BYTES

    count, size = slow
    reason = slow_reason()
    if not count or size < SLOW_FINDING_FROM_BYTES or reason is None:
        return []
    return [(SLOW_DECODE, Severity.INFO, source.metadata_location,
             f"{count:,} manifests ({size / (1 << 20):,.1f} MiB) were decoded by fastavro, about four times slower "
             f"than DuckDB's read_avro: {reason}", None)]


def _map_as_list(column, type_):
    """A DuckDB map column as the index's list of {key, value} structs."""
    import pyarrow as pa

    chunks = []
    for arr in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
        if pa.types.is_map(arr.type):
            arr = pa.concat_arrays([arr])  # a slice's offsets start past 0: copy to plain offsets
            entries = pa.StructArray.from_arrays([arr.keys, arr.items], names=["key", "value"])
            arr = pa.ListArray.from_arrays(arr.offsets, entries, mask=arr.is_null())
        chunks.append(arr.cast(type_) if len(arr) else pa.array([], type_))
    return pa.chunked_array(chunks, type_) if chunks else pa.chunked_array([], type_)


class PartitionRecords:
    """The registry's distinct partition records, by code: a read-only sequence.  Records registered from an Arrow
    column stay Arrow (``columns``: (first code, struct array) pieces, which also let a label of every partition
    be made column-wise, :func:`.columns.partition_labels`) and become Python dicts only when read; a record
    registered by value is kept as that value.  Reading many codes at once: :meth:`take`."""

    def __init__(self) -> None:
        self._starts: list[int] = []  # the first code of each piece
        self._pieces: list[Any] = []  # a list of values, or a struct array
        self._length = 0

    @property
    def columns(self) -> list[tuple[int, Any]]:
        return [(start, piece) for start, piece in zip(self._starts, self._pieces) if not isinstance(piece, list)]

    def append(self, value: Any) -> None:
        if not self._pieces or not isinstance(self._pieces[-1], list):
            self._starts.append(self._length)
            self._pieces.append([])
        self._pieces[-1].append(value)
        self._length += 1

    def extend_arrow(self, records: Any) -> None:
        """Register the records of a struct array under the next codes, kept as Arrow."""
        self._starts.append(self._length)
        self._pieces.append(records)
        self._length += len(records)

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, code: Any) -> Any:
        if isinstance(code, slice):
            return self.take(range(*code.indices(self._length)))
        code = int(code)
        return self.take([code + self._length if code < 0 else code])[0]

    def __iter__(self):
        for piece in self._pieces:
            yield from piece if isinstance(piece, list) else piece.to_pylist()

    def __eq__(self, other: Any) -> bool:
        return list(self) == list(other) if isinstance(other, (list, PartitionRecords)) else NotImplemented

    def __repr__(self) -> str:
        return f"PartitionRecords({len(self)} records)"

    def take_arrow(self, codes: Any) -> Any:
        """The records of ``codes`` (valid codes, any order, repeats allowed) as one Arrow struct array, when
        every code is a record registered column-wise and those pieces share one type; else None."""
        import numpy as np
        import pyarrow as pa

        codes = np.asarray(codes, dtype=np.int64)
        if not len(codes) or codes.min() < 0 or codes.max() >= self._length:
            return None
        piece_of = np.searchsorted(np.asarray(self._starts, dtype=np.int64), codes, side="right") - 1
        used = sorted_unique(piece_of).tolist()
        pieces = [self._pieces[k] for k in used]
        if any(isinstance(p, list) for p in pieces) or len({p.type for p in pieces}) != 1 or \
                not pa.types.is_struct(pieces[0].type):
            return None
        if len(used) == 1:
            return pieces[0].take(pa.array(codes - self._starts[used[0]]))
        whole = pa.concat_arrays(pieces)  # the pieces used, one after the other: codes renumbered into it
        shift = np.zeros(len(self._pieces), dtype=np.int64)
        at = 0
        for k, p in zip(used, pieces):
            shift[k] = at - self._starts[k]
            at += len(p)
        return whole.take(pa.array(codes + shift[piece_of]))

    def take(self, codes: Any) -> list:
        """The records of ``codes`` (valid codes, any order, repeats allowed), one Python value per code, made
        column-wise from each Arrow piece."""
        import numpy as np
        import pyarrow as pa

        codes = np.asarray(codes, dtype=np.int64)
        out: list[Any] = [None] * len(codes)
        if not len(codes):
            return out
        if codes.min() < 0 or codes.max() >= self._length:
            raise IndexError(f"partition codes outside 0..{self._length - 1}")
        piece_of = np.searchsorted(np.asarray(self._starts, dtype=np.int64), codes, side="right") - 1
        for k in sorted_unique(piece_of).tolist():
            where = np.flatnonzero(piece_of == k)
            piece, at = self._pieces[k], codes[where] - self._starts[k]
            values = [piece[i] for i in at.tolist()] if isinstance(piece, list) else \
                piece.take(pa.array(at)).to_pylist()
            for w, v in zip(where.tolist(), values):
                out[w] = v
        return out


class PartitionKeys:
    """The registry keys of a table's partition codes.  Keys of records registered column-wise stay Arrow
    (pieces of consecutive codes, looked up column-wise: no Python string per partition); keys of records
    registered by value are a dict, which takes the Arrow pieces' keys too the first time a text key misses."""

    def __init__(self) -> None:
        self.by_value: dict[Any, int] = {}
        self.pieces: list[tuple[int, Any]] = []  # (first code, Arrow string array of keys)
        self._ranges: list[tuple[Any, Any]] = []  # each piece's smallest and largest key: a lookup skips the others
        self._synced = 0  # pieces[:_synced] are in by_value too
        self._texts_by_value = 0  # text keys registered by value: a column's lookup asks the dict for them

    def __len__(self) -> int:
        return len(self.by_value) + sum(len(keys) for _, keys in self.pieces[self._synced:])

    def get(self, key: Any) -> Optional[int]:
        code = self.by_value.get(key)
        if code is None and isinstance(key, str) and self._synced < len(self.pieces):
            for first, keys in self.pieces[self._synced:]:  # once: a by-value lookup of a column-wise table
                self.by_value.update(zip(keys.to_pylist(), range(first, first + len(keys))))
            self._synced = len(self.pieces)
            code = self.by_value.get(key)
        return code

    def add(self, key: Any, code: int) -> None:
        self.by_value[key] = code
        self._texts_by_value += isinstance(key, str)

    def add_arrow(self, keys: Any, first: int) -> None:
        """Register distinct, new text keys (an Arrow string array) as the codes ``first``, ``first + 1``, …"""
        import pyarrow as pa
        import pyarrow.compute as pc

        keys = keys.cast(pa.string())
        bounds = pc.min_max(keys)
        self.pieces.append((first, keys))
        self._ranges.append((bounds["min"].as_py(), bounds["max"].as_py()))

    def lookup_arrow(self, keys: Any):
        """The codes of distinct text keys (an Arrow string array) as a numpy array, -1 for a key not registered:
        one ``index_in`` of the registry's Arrow keys against them, then the dict for keys registered by value."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        found = np.full(len(keys), -1, dtype=np.int64)
        bounds = pc.min_max(keys) if len(keys) else None
        lo, hi = (bounds["min"].as_py(), bounds["max"].as_py()) if bounds is not None else (None, None)
        # only the pieces whose range of keys meets these keys' (manifests of a growing table rarely share one)
        pieces = [p for p, (a, b) in zip(self.pieces, self._ranges)
                  if a is None or not (b < lo or a > hi)] if lo is not None else []
        if pieces:
            registered = pa.chunked_array([k for _, k in pieces], pa.string())
            at = pc.fill_null(pc.index_in(registered, value_set=keys), -1).to_numpy()
            hit = np.flatnonzero(at >= 0)
            starts = np.cumsum([0] + [len(k) for _, k in pieces])
            piece = np.searchsorted(starts, hit, side="right") - 1
            firsts = np.array([first for first, _ in pieces], dtype=np.int64)
            found[at[hit]] = firsts[piece] + (hit - starts[piece])
        if self._texts_by_value:
            missing = np.flatnonzero(found < 0)
            for i, key in zip(missing.tolist(), keys.take(pa.array(missing)).to_pylist()):
                code = self.by_value.get(key)
                if code is not None:
                    found[i] = code
        return found


class EntryCache:
    """What a table has decoded: one column chunk per manifest (per manifest-list record, since
    inheritance depends on it, and per ``metrics``), the assembled indexes, and one registry of
    distinct partition records so that partition codes mean the same in every index of the table."""

    def __init__(self) -> None:
        self.partitions = PartitionRecords()
        self.partition_codes = PartitionKeys()
        self.chunks: dict[tuple, tuple[Any, list]] = {}
        self.indexes: dict[tuple, EntryIndex] = {}
        self.decoders: dict[bool, _Decoder] = {}
        self.partitions_checked: dict[tuple[int, int], list] = {}  # (spec id, partition code) -> its findings
        self.partitions_clean: dict[int, bytearray] = {}  # spec id -> a byte per partition code: 1 checked, clean
        # the field names of each partition record, numbered: a spec's names are checked once per set of names
        self.partition_shapes = array.array("i")  # partition code -> number of its names; -1: not a record
        self.shapes: list[tuple] = []
        self._shape_numbers: dict[tuple, int] = {}

    def shape_of(self, value: Any) -> int:
        """The number of the field names of partition record ``value`` (-1: not a record)."""
        if value is None:
            return self.shape_number(())
        return self.shape_number(tuple(value)) if isinstance(value, dict) else -1

    def shape_number(self, names: tuple) -> int:
        number = self._shape_numbers.get(names)
        if number is None:
            number = self._shape_numbers[names] = len(self.shapes)
            self.shapes.append(names)
        return number

    def decoder(self, metrics: bool) -> _Decoder:
        if metrics not in self.decoders:
            self.decoders[metrics] = _Decoder(metrics, self)
        return self.decoders[metrics]

    @staticmethod
    def manifest_key(manifest: dict[str, Any]) -> tuple:
        return (manifest.get("manifest_path"), manifest.get("sequence_number"), manifest.get("first_row_id"),
                manifest.get("added_snapshot_id"), manifest.get("partition_spec_id"))

    def cached(self, manifest: dict[str, Any], metrics: bool) -> Optional[tuple[Any, list]]:
        """A decoded chunk of the manifest: with metrics if asked for, else with or without."""
        key = self.manifest_key(manifest)
        got = self.chunks.get((key, metrics))
        if got is None and not metrics:
            got = self.chunks.get((key, True))
            if got is not None:
                got = (got[0].select(_schema(False).names), got[1])
        return got

    def clear(self) -> None:
        self.chunks.clear()
        self.indexes.clear()

    def mark(self) -> tuple[set, set]:
        """What is cached now, for :meth:`forget_since`."""
        return set(self.indexes), set(self.chunks)

    def forget_since(self, mark: tuple[set, set]) -> None:
        """Let go of the indexes and decoded manifests cached after ``mark`` (the partition registry stays: its
        codes may be held elsewhere)."""
        for key in set(self.indexes) - mark[0]:
            del self.indexes[key]
        for key in set(self.chunks) - mark[1]:
            del self.chunks[key]


def entry_cache(source: "TableSource") -> EntryCache:
    """The source's decoded manifests and built indexes (one :class:`EntryCache` per source, made on first use)."""
    if source.caches.entries is None:
        source.caches.entries = EntryCache()
    return source.caches.entries


def built_index(source: "TableSource", snapshot_id: Optional[int], content: str = "deletes") -> Optional[EntryIndex]:
    """An index of the snapshot's ``content`` manifests (or of all of them) that is already built, else None."""
    if snapshot_id is None and source.metadata.current_snapshot_id is None:
        return None
    sid = source.snapshot(snapshot_id).snapshot_id
    indexes = entry_cache(source).indexes
    for key in ((sid, content, False), (sid, None, False), (sid, content, True), (sid, None, True)):
        got = indexes.get(key)
        if got is not None:
            return got
    return None


def deletes_index(source: "TableSource", snapshot_id: Optional[int] = None) -> EntryIndex:
    """The index that answers questions about delete files: the full one if built, else the delete manifests'."""
    return built_index(source, snapshot_id, "deletes") or build_index(source, snapshot_id, content="deletes")


def manifest_chunk(source: "TableSource", manifest: dict[str, Any], metrics: bool = False,
                   data: Optional[bytes] = None) -> tuple[Any, list]:
    """One manifest's entries as a column chunk and the findings of reading it (cached on the source)."""
    cache: EntryCache = entry_cache(source)
    got = cache.cached(manifest, metrics)
    if got is None:
        loc = source.locate(manifest.get("manifest_path") or "")
        if data is None:
            fetched, failed = _fetch(source, [loc])
            data = fetched.get(loc)
            if data is None:
                got = (_schema(metrics).empty_table(), failed)
        if got is None:
            got = decode_manifest(data, manifest, loc, metrics, source.metadata.partition_specs, cache)
            got = (got[0], got[1] + list(_outside_scope(source, got[0], manifest)))
        cache.chunks[(cache.manifest_key(manifest), metrics)] = got
    return got


def decode_manifest(data: bytes, manifest: dict[str, Any], location: str, metrics: bool = False,
                    partition_specs: Optional[dict] = None, cache: Optional["EntryCache"] = None,
                    duck: Optional[_DuckDB] = None) -> tuple[Any, list[tuple]]:
    """One manifest's bytes as a column chunk and the raw findings of decoding and checking it.

    Plain arguments (no :class:`Table`), so a Spark executor runs the same decode and checks as the
    driver: ``manifest`` is its manifest-list record (inheritance), ``partition_specs`` the table's
    specs by id, ``cache`` the :class:`EntryCache` whose partition registry the ``partition`` codes
    index (a fresh one when None), ``duck`` a DuckDB reader (:func:`_duckdb`) for an intact
    manifest, as the driver's index reads one (the fastavro walker decodes the others).  Findings are
    ``(code, severity, file, message, offset)`` tuples.
    """
    cache = cache if cache is not None else EntryCache()
    decoder = cache.decoder(metrics)
    chunk = None
    if duck is not None:
        batch = _start_batch([(manifest, location)], {location: data}, metrics, duck)
        if batch.reads:
            members, partitioned, read = batch.reads[0]
            try:
                chunk = _collect_chunks(decoder, duck, members, partitioned, read)[0][1]
            except Exception:  # noqa: BLE001 - DuckDB or a cast refused: the fastavro walker explains
                chunk = None
    if chunk is None:
        chunk = decoder.chunk(data, manifest, location)
    return chunk, list(decoder.findings) + check_chunk(chunk, manifest, partition_specs or {}, cache)


def manifest_entries(source: "TableSource", manifest: dict[str, Any], data: Optional[bytes] = None) -> list[dict[str, Any]]:
    """Entries of one manifest (all statuses) as dicts, inheritance applied."""
    chunk, _ = manifest_chunk(source, manifest, data=data)
    return EntryIndex(None, chunk, [manifest], entry_cache(source).partitions).dicts_of(chunk)


def validate_chunk(source: "TableSource", chunk, manifest: dict[str, Any]) -> list[tuple]:
    """The findings of one manifest's entries (checked once, when decoded), with a ``source.outside-scope``
    finding for each entry whose file is outside the table's read scope."""
    return check_chunk(chunk, manifest, source.metadata.partition_specs, entry_cache(source)) + \
        list(_outside_scope(source, chunk, manifest))


def _outside_scope(source: "TableSource", chunk, manifest: dict[str, Any]) -> Iterable[tuple]:
    """``source.outside-scope`` for each entry whose ``file_path``, relocated, is outside the read scope: one
    column-wise test of the chunk (:meth:`~puffin_explorer.io.scope.ReadScope.refused`); only the refused rows
    are made findings (at most ``FINDINGS_PER_CODE``, then a count).  The I/O layer refuses to read them."""
    import numpy as np

    from ..io.scope import OUTSIDE_SCOPE
    from .paths import located_column

    scope = source.scope
    if scope is None or not chunk.num_rows or "file_path" not in chunk.column_names:
        return
    refused = scope.refused(located_column(source.mapper, chunk.column("file_path")))
    rows = np.flatnonzero(refused)
    if not len(rows):
        return
    path = manifest.get("manifest_path") or ""
    entries = chunk.column("entry").to_numpy(zero_copy_only=False) if "entry" in chunk.column_names else rows
    written = chunk.column("file_path")
    for r in rows[:FINDINGS_PER_CODE].tolist():
        loc = source.locate(written[r].as_py())
        yield (OUTSIDE_SCOPE, Severity.ERROR, path,
               f"{basename(path)} entry {int(entries[r])}: {scope.error(loc)}", None)
    for _ in range(len(rows) - FINDINGS_PER_CODE):  # counted by _capped
        yield OUTSIDE_SCOPE, Severity.ERROR, "", "", None


def check_chunk(chunk, manifest: dict[str, Any], partition_specs: dict, cache: "EntryCache") -> list[tuple]:
    """The findings of one manifest's entries, given the table's partition specs and entry cache."""
    return list(_validate(EntryIndex(None, chunk, [manifest], cache.partitions), partition_specs, cache))


def of_content(manifests: list[dict[str, Any]], content: Optional[str]) -> list[dict[str, Any]]:
    """The records of a manifest list of one ``content`` kind (``"data"``, ``"deletes"``), or all for None."""
    if content is None:
        return list(manifests)
    return [m for m in manifests if ("deletes" if m.get("content") == 1 else "data") == content]


def listed_once(manifests: list[dict[str, Any]]) -> tuple[list[int], list[dict]]:
    """Which manifests of a manifest list a reader reads: the positions of each manifest
    (:meth:`EntryCache.manifest_key`) once, where first listed, and the records the list names again (a finding of
    the index). The driver's index, the Spark index and a commit's view all read this way."""
    keep: list[int] = []
    again: list[dict] = []
    seen: set = set()
    for i, m in enumerate(manifests):
        key = EntryCache.manifest_key(m)
        if key in seen:
            again.append(m)
            continue
        seen.add(key)
        keep.append(i)
    return keep, again


#: Finding codes of a manifest whose entries were not all read (a vanished one only when it was not read before).
MISSING_ENTRIES = frozenset({"iceberg.manifest-damaged", "iceberg.manifest-unreadable", vanished.CODE})


#: What :func:`build_index` and :func:`stream_metrics` hand a metric sink: ``(ordinal, chunk)`` per decoded manifest,
#: the ordinal its place in the index's ``manifests`` (its ``manifest`` column), the chunk its entries with metrics.
MetricSink = Callable[[list], None]


def build_index(source: "TableSource", snapshot_id: Optional[int] = None, content: Optional[str] = None,
                metrics: bool = False, progress: Optional[bool] = None, strict: bool = False,
                keep: bool = True, metric_sink: Optional[MetricSink] = None) -> EntryIndex:
    """Read a snapshot's manifests (current by default) into an :class:`EntryIndex`, or only its
    ``content`` ``"data"`` or ``"deletes"`` manifests; cached on the source per (snapshot, content, metrics).

    Manifests not decoded yet are fetched ``BATCH`` at a time through ``table.io.read_many`` and each
    is decoded into a column chunk as soon as its batch is in.  ``progress`` True / False shows or
    hides a bar; None shows it from ``PROGRESS_FROM`` manifests on in a terminal or notebook kernel.
    Ctrl-C stops the build, closes the bar and re-raises (the manifests decoded so far stay cached).
    ``strict`` raises the first error finding as a :class:`PuffinError`. ``keep=False`` builds an index
    that is not kept on the source (the decoded manifests still are): one answer about a past snapshot.
    ``metric_sink`` (with ``metrics=False``): the manifests decoded now are decoded with their metrics, handed to it
    a batch at a time and cached without them, so the metrics are summed without ever being kept; a manifest
    decoded before is not handed over (:func:`stream_metrics` reads it again).
    """
    import pyarrow as pa

    from .._memory import choose_arrow_pool

    choose_arrow_pool()  # before the first index's columns are allocated
    cache: EntryCache = entry_cache(source)
    if snapshot_id is None and source.metadata.current_snapshot_id is None:  # a new table: no files yet
        return EntryIndex(None, _schema(metrics).empty_table(), [], cache.partitions, metrics=metrics)
    snap = source.snapshot(snapshot_id)
    key = (snap.snapshot_id, content, metrics)
    index = cache.indexes.get(key) or (None if metrics else cache.indexes.get((snap.snapshot_id, content, True)))
    if index is not None:
        _raise_if_strict(index, strict)
        return index
    try:
        listed = source.manifest_records(snap.snapshot_id)
    except PuffinError as exc:  # no manifest list, or not one: an empty index that says why
        where = source.locate(snap.manifest_list) if snap.manifest_list else source.metadata_location
        index = EntryIndex(snap.snapshot_id, _schema(metrics).empty_table(), [], cache.partitions, metrics=metrics)
        index.findings = [vanished.manifest_list_finding(source, snap.snapshot_id, snap.manifest_list)
                          if isinstance(exc, NotFoundError) and snap.manifest_list
                          and not vanished.looks_moved(source, snap.manifest_list) else
                          _finding("iceberg.manifest-unreadable", Severity.ERROR, where,
                                   f"the manifest list of snapshot {snap.snapshot_id} cannot be read, so none of "
                                   f"its files are listed: {exc}", getattr(exc, "offset", None))]
        index.list_unread = True
        _raise_if_strict(index, strict)
        return index  # not cached: a later call reads the list again
    listed_found = [(f.code, f.severity, getattr(f, "file", ""), f.message, f.offset)
                    for f in source.manifest_list_findings(snap.snapshot_id)]
    manifests = of_content(listed, content)
    once, listed_twice = listed_once(manifests)  # a manifest the list names more than once: decoded once, and said
    todo = [manifests[i] for i in once if cache.cached(manifests[i], metrics) is None]
    sink = metric_sink if not metrics else None
    ordinals = {cache.manifest_key(manifests[i]): i for i in once} if sink is not None else {}
    bar = _progress_bar(len(todo), f"{source.name}: manifests") if todo and _show_progress(
        progress, len(todo)) else None

    def unread(m: dict, failed: list) -> None:
        cache.chunks[(cache.manifest_key(m), metrics)] = _without_metrics(cache, m, metrics, failed)

    def decoded(batch: list) -> None:
        if sink is not None:
            _hand_over(cache, batch, ordinals, sink, keep_plain=True)
        if bar is not None:
            bar.update(len(batch))

    try:
        slow = _decode_batches(source, todo, metrics or sink is not None, unread, decoded)
    finally:
        if bar is not None:
            bar.close()
    tables, raw, unread_at = [], list(listed_found) + _slow_finding(source, slow), []
    for i in once:  # a manifest listed again: its entries once (a count in a manifest list never multiplies rows)
        m = manifests[i]
        chunk, found = cache.cached(m, metrics)
        # entries missing: damaged or unreadable, or gone before they were read (gone after: they are all here)
        if any(f[0] in MISSING_ENTRIES and not (f[0] == vanished.CODE and chunk.num_rows) for f in found):
            unread_at.append(i)
        raw += [vanished.manifest_raw(source, snap.snapshot_id, m, f, bool(chunk.num_rows))
                if f[0] == vanished.CODE else f for f in found]
        if chunk.num_rows:
            tables.append(chunk.set_column(chunk.schema.get_field_index("manifest"), "manifest",
                                           pa.array([i] * chunk.num_rows, pa.int32())))
    tbl = pa.concat_tables(tables) if tables else _schema(metrics).empty_table()
    index = EntryIndex(snap.snapshot_id, tbl, manifests, cache.partitions, metrics=metrics, unread=tuple(unread_at))
    if listed_twice:
        where = source.locate(snap.manifest_list) if snap.manifest_list else source.metadata_location
        names = sorted({basename(str(m.get("manifest_path") or "")) for m in listed_twice})
        raw.append(("iceberg.manifest-listed-twice", Severity.ERROR, where,
                    f"snapshot {snap.snapshot_id}'s manifest list names {len(listed_twice):,} manifests again "
                    f"({', '.join(names[:3])}{', …' if len(names) > 3 else ''}); readers read their files "
                    "once per listing; this index holds their entries once", None))
    index.findings = vanished.as_noted(source, snap.snapshot_id, _capped(raw))
    if keep:
        cache.indexes[key] = index
    if todo:
        release_freed_memory()  # what decoding built and dropped (DuckDB's columns, casts) goes back
    _raise_if_strict(index, strict)
    return index


def _hand_over(cache: "EntryCache", batch: list[dict[str, Any]], ordinals: dict, sink: MetricSink,
               keep_plain: bool) -> None:
    """The chunks a batch was decoded into with metrics, handed to ``sink`` as ``(ordinal, chunk)`` and dropped;
    cached without their metrics when ``keep_plain`` (the index's own chunks)."""
    handed = []
    plain = len(_schema(False))
    for m in batch:
        key = cache.manifest_key(m)
        got = cache.chunks.pop((key, True), None)
        if got is None:  # not read: what stands for it is cached without metrics already
            continue
        chunk, found = got
        if keep_plain:
            cache.chunks[(key, False)] = (chunk.select(list(range(plain))), found)
        handed.append((ordinals[key], chunk))
    if handed:
        sink(handed)


def stream_metrics(source: "TableSource", index: EntryIndex, sink: MetricSink, skip: Iterable[int] = (),
                   progress: Optional[bool] = None) -> list[tuple]:
    """Hand ``sink`` the metric columns of every manifest of ``index`` (an index without metrics) but those in
    ``skip``: each decoded again with its metrics a batch at a time (or taken from a chunk with metrics cached
    already) and never kept, so that summing a table's column metrics holds one batch of them at a time.
    Returns raw findings for each manifest whose metrics could not be read (one gone is noted on the source as
    :mod:`.vanished` notes it), or whose entries read again are not the index's (the table changed under the
    reader: other files, or another number of them): its files count as files without metrics."""
    import numpy as np

    cache: EntryCache = entry_cache(source)
    ordinal_of_row = index.ints("manifest", -1)
    counts = np.bincount(ordinal_of_row[ordinal_of_row >= 0], minlength=len(index.manifests))
    first = np.zeros(len(index.manifests), dtype=np.int64)  # a manifest's entries are one run of the index
    seen, at = np.unique(ordinal_of_row, return_index=True)
    first[seen[seen >= 0]] = at[seen >= 0]
    skip = set(skip)
    wanted = [i for i in range(len(index.manifests)) if counts[i] and i not in skip]
    ordinals = {cache.manifest_key(index.manifests[i]): i for i in wanted}
    findings: list[tuple] = []

    def checked(handed: list) -> None:
        fits = []
        for i, chunk in handed:
            before = index.table.column("file_path").slice(int(first[i]), int(counts[i]))
            if chunk.num_rows == counts[i] and chunk.column("file_path").equals(before):
                fits.append((i, chunk))
                continue
            loc = source.locate(index.manifests[i].get("manifest_path") or "")
            differs = f"{chunk.num_rows:,} entries, not the {int(counts[i]):,} read before" \
                if chunk.num_rows != counts[i] else "other files than it held when read before"
            findings.append(("iceberg.manifest-unreadable", Severity.ERROR, loc,
                             f"{basename(loc)}: read again for its column metrics it holds {differs}; its files' "
                             "metrics are left out", None))
        if fits:
            sink(fits)

    held = [(i, cache.chunks[(cache.manifest_key(index.manifests[i]), True)][0]) for i in wanted
            if (cache.manifest_key(index.manifests[i]), True) in cache.chunks]
    for start in range(0, len(held), BATCH):
        checked(held[start:start + BATCH])
    have = {i for i, _ in held}
    todo = [index.manifests[i] for i in wanted if i not in have]
    bar = _progress_bar(len(todo), f"{source.name}: column metrics") if todo and _show_progress(
        progress, len(todo)) else None

    def unread(m: dict, failed: list) -> None:  # gone since the index read it: noted as such, counts whole
        findings.extend(vanished.manifest_raw(source, index.snapshot_id, m, f, True) if f[0] == vanished.CODE
                        else f for f in failed)

    def decoded(batch: list) -> None:
        _hand_over(cache, batch, ordinals, checked, keep_plain=False)
        if bar is not None:
            bar.update(len(batch))

    try:
        _decode_batches(source, todo, True, unread, decoded)  # slowly or not: the index's build said so
    finally:
        for m in todo:  # interrupted: no metric chunk stays cached (a finished run handed every one over)
            cache.chunks.pop((cache.manifest_key(m), True), None)
        if bar is not None:
            bar.close()
        release_freed_memory()
    return findings


def _decode_batches(source: "TableSource", todo: list[dict[str, Any]], metrics: bool,
                    unread: Callable[[dict, list], None], decoded: Callable[[list], None]) -> tuple[int, int]:
    """Fetch and decode manifests ``BATCH`` at a time into cached chunks, DuckDB reading the next batch while the
    last one becomes chunks (``_start_batch`` / ``_finish_batch``): ``unread(manifest, findings)`` for each one
    that cannot be fetched, ``decoded(batch)`` once a batch's chunks are cached.  Returns the manifests and bytes
    that went to fastavro because DuckDB could not run (the ones it was not asked to read, small tables' first
    bytes, are not counted: that is the chosen path, not the slow one)."""
    duck: Any = None
    read_bytes = 0  # DuckDB is chosen by the bytes read, never by a manifest_length the list claims
    slow = [0, 0]
    pending: Optional[tuple[_Batch, list]] = None  # started, not yet chunked: DuckDB reads it meanwhile
    try:
        for batch in _batches(todo):
            locs = [source.locate(m.get("manifest_path") or "") for m in batch]
            fetched, failed = _fetch(source, locs)
            ok = [(m, loc) for m, loc in zip(batch, locs) if loc in fetched]
            for m, loc in zip(batch, locs):
                if loc not in fetched:
                    unread(m, [f for f in failed if f[2] == loc])
            read_bytes += sum(len(fetched[loc]) for _, loc in ok)
            if duck is None and read_bytes >= DUCKDB_FROM_BYTES:
                duck = _duckdb() or False
            if duck is False:
                slow[0] += len(ok)
                slow[1] += sum(len(fetched[loc]) for _, loc in ok)
            started = (_start_batch(ok, fetched, metrics, duck or None), batch)
            del fetched
            if pending is not None:
                _finish_batch(source, pending[0], duck or None)
                decoded(pending[1])
            pending = started
        if pending is not None:
            last, pending = pending, None
            _finish_batch(source, last[0], duck or None)
            decoded(last[1])
    finally:
        if duck:
            duck.close()
    return slow[0], slow[1]


def _length(manifest: dict[str, Any]) -> int:
    try:
        return max(0, int(manifest.get("manifest_length") or 0)) or (1 << 20)
    except (TypeError, ValueError):
        return 1 << 20


def _entries(manifest: dict[str, Any]) -> int:
    """The entries the manifest list says a manifest holds (0 when it does not say, or says nonsense)."""
    try:
        return max(0, mf.manifest_counts(manifest) or 0)
    except (TypeError, ValueError):
        return 0


def _batches(manifests: list[dict[str, Any]]) -> Iterable[list[dict[str, Any]]]:
    """Consecutive groups of at most ``BATCH`` manifests, about ``BATCH_BYTES`` bytes and ``BATCH_ENTRIES``
    entries (as the manifest list counts them)."""
    batch: list[dict[str, Any]] = []
    size = entries = 0
    for m in manifests:
        if batch and (len(batch) >= BATCH or size + _length(m) > BATCH_BYTES or
                      entries + _entries(m) > BATCH_ENTRIES):
            yield batch
            batch, size, entries = [], 0, 0
        batch.append(m)
        size += _length(m)
        entries += _entries(m)
    if batch:
        yield batch


@dataclass
class _Batch:
    """A fetched batch of manifests on its way to cached chunks: the ones for fastavro, and DuckDB's reads
    (one per writer schema) started."""

    fetched: dict[str, bytes]
    walked: list[tuple[dict, str]]
    reads: list[tuple[list[tuple[dict, str, dict, int]], bool, Any]]
    metrics: bool


def _start_batch(items: list[tuple[dict, str]], fetched: dict[str, bytes], metrics: bool,
                 duck: Optional[_DuckDB]) -> _Batch:
    """Start decoding a fetched batch: intact manifests are read by DuckDB in the background (one query
    per writer schema and share); the others wait for :func:`_finish_batch` and the fastavro walker."""
    import json

    from .avro import scan

    groups: dict[str, list[tuple[dict, str, dict, int]]] = {}
    walked = []
    for m, loc in items:
        if duck is not None:
            meta, claimed, damage = scan(fetched[loc])
            if damage is None and meta.get("avro.schema") and meta.get("avro.codec", "null") in ("null", "deflate"):
                groups.setdefault(meta["avro.schema"], []).append((m, loc, meta, claimed))
                continue
        walked.append((m, loc))
    reads = []
    for text, members in groups.items():
        try:
            writer = json.loads(text)
            df_type = next((f.get("type") for f in writer.get("fields", []) if f.get("name") == "data_file"), None)
            ptype = next((f.get("type") for f in (df_type or {}).get("fields", []) if f.get("name") == "partition"),
                         None) if isinstance(df_type, dict) else None
            partitioned = not (isinstance(ptype, dict) and ptype.get("type") == "record" and not ptype.get("fields"))
            read = duck.start([fetched[loc] for _, loc, _, _ in members], writer, metrics)
        except Exception:  # noqa: BLE001 - a schema DuckDB cannot be asked for: the fastavro walker explains
            walked += [(m, loc) for m, loc, _, _ in members]
            continue
        reads.append((members, partitioned, read))
    return _Batch(fetched, walked, reads, metrics)


def _finish_batch(source: "TableSource", batch: _Batch, duck: Optional[_DuckDB]) -> None:
    """Turn a started batch into cached chunks, in the order :func:`_start_batch` met its manifests' kinds:
    the walked ones first, then each DuckDB read as it completes (any it refuses go to the walker)."""
    cache: EntryCache = entry_cache(source)
    metrics, fetched = batch.metrics, batch.fetched
    for m, loc in batch.walked:
        manifest_chunk(source, m, metrics, fetched[loc])
    decoder = cache.decoder(metrics)
    for members, partitioned, read in batch.reads:
        try:
            chunks = _collect_chunks(decoder, duck, members, partitioned, read)
        except Exception:  # noqa: BLE001 - DuckDB or a cast refused: the fastavro walker explains
            for m, loc, _, _ in members:
                manifest_chunk(source, m, metrics, fetched[loc])
            continue
        for m, chunk in chunks:
            cache.chunks[(cache.manifest_key(m), metrics)] = (chunk, validate_chunk(source, chunk, m))
    release_freed_memory()


def _collect_chunks(decoder: "_Decoder", duck: _DuckDB, members: list[tuple[dict, str, dict, int]],
                    partitioned: bool, read: "_Read") -> list[tuple[dict, Any]]:
    """(manifest, chunk) for each manifest of a started DuckDB read; raises when DuckDB refused or its
    rows do not match what the manifests' blocks claim (the fastavro walker then decodes them)."""
    import numpy as np

    paths, raw = duck.collect(read)
    starts: dict[str, int] = {}
    counts: dict[str, int] = {}
    enc = raw.column("filename").combine_chunks().dictionary_encode() if raw.num_rows else None
    if enc is not None:
        idx = enc.indices.to_numpy(zero_copy_only=False)
        dictionary = enc.dictionary.to_pylist()
        change = np.flatnonzero(np.diff(idx)) + 1
        bounds = np.concatenate([[0], change, [len(idx)]])
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            name = dictionary[idx[a]]
            if name in starts:
                raise ValueError("rows of one manifest are not contiguous")
            starts[name], counts[name] = a, b - a
    for (m, loc, meta, claimed), path in zip(members, paths):
        if counts.get(path, 0) != claimed:
            raise ValueError(f"{loc}: DuckDB read {counts.get(path, 0)} records, the blocks claim {claimed}")
    codes = decoder._partition_codes_of(raw.column("partition")) if partitioned else None
    raw = _owned(raw)
    chunks = []
    for (m, loc, meta, claimed), path in zip(members, paths):
        at, n = starts.get(path, 0), counts.get(path, 0)
        chunks.append((m, decoder.chunk_from_arrow(raw.slice(at, n), m, meta,
                                                   codes.slice(at, n) if codes is not None else None)))
    return chunks


def _owned(raw):
    """DuckDB's result with the columns a chunk keeps copied into Arrow's own memory pool.

    An imported Arrow batch lives as long as any of its buffers: a chunk holding DuckDB's ``file_path`` column
    as read kept that read's whole batch alive (its scratch file names, partition records and the slack of its
    growing buffers; 0.45 GB at a million entries). The copy costs one pass over the kept columns."""
    import pyarrow as pa

    return pa.table({name: raw.column(name).combine_chunks() for name in raw.column_names
                     if name not in ("filename", "partition")})


def _raise_if_strict(index: EntryIndex, strict: bool) -> None:
    if strict:
        for f in index.findings:
            if f.severity == Severity.ERROR:
                raise PuffinError(f"{f.code}: {f.message}", f.offset, f.code)


def _fetch(source: "TableSource", locs: list[str]) -> tuple[dict[str, bytes], list[tuple]]:
    """The bytes of a batch of manifests, and a finding for each one that cannot be read."""
    try:
        return (dict(source.io.read_many(locs)) if len(locs) > 1 else {locs[0]: source.io.read(locs[0])}), []
    except SourceError:
        pass
    out, failed = {}, []
    for loc in dict.fromkeys(locs):
        try:
            out[loc] = source.io.read(loc)
        except SourceError as exc:
            if isinstance(exc, NotFoundError) and not vanished.looks_moved(source, loc):  # named by build_index
                failed.append((vanished.CODE, Severity.ERROR, loc, f"manifest {loc} is gone", None))
                continue
            failed.append(("iceberg.manifest-unreadable", Severity.ERROR, loc, f"{basename(loc)}: {exc}", None))
    return out, failed


def _without_metrics(cache: "EntryCache", manifest: dict[str, Any], metrics: bool, failed: list[tuple]) -> tuple:
    """What stands for a manifest that could not be read: its entries without metrics when they were decoded
    before it vanished (so an index with metrics counts what one without did), else none."""
    import pyarrow as pa

    got = cache.chunks.get((cache.manifest_key(manifest), False)) if metrics else None
    if got is None or not got[0].num_rows or not any(f[0] == vanished.CODE for f in failed):
        return (_schema(metrics).empty_table(), failed)
    chunk, schema = got[0], _schema(True)
    cols = [chunk.column(f.name) if f.name in chunk.column_names else pa.nulls(chunk.num_rows, f.type)
            for f in schema]
    return (pa.Table.from_arrays(cols, schema=schema), failed)


def _capped(raw: list[tuple]) -> list[Finding]:
    """Findings, at most ``FINDINGS_PER_CODE`` per code, then one that counts the rest."""
    out: list[Finding] = []
    seen: dict[str, int] = {}
    for code, sev, file, message, offset in raw:
        seen[code] = seen.get(code, 0) + 1
        if seen[code] <= FINDINGS_PER_CODE:
            out.append(_finding(code, sev, file, message, offset))
    for code, n in seen.items():
        if n > FINDINGS_PER_CODE:
            sev = next(r[1] for r in raw if r[0] == code)
            out.append(_finding(code, sev, "", f"{n - FINDINGS_PER_CODE:,} more {code} findings like the ones above"))
    return out


def _validate(index: EntryIndex, partition_specs: dict, cache: "EntryCache") -> Iterable[tuple]:
    """Column-wise checks of the entries: codes, negative counts and sizes, DV ranges, partitions."""
    import numpy as np

    if not len(index):
        return
    t = index.table
    manifest = index.ints("manifest")
    entry = index.ints("entry")

    def where(rows) -> Iterable[tuple[str, int, int]]:
        for r in rows:
            path = index.manifests[manifest[r]].get("manifest_path") or ""
            yield path, int(entry[r]), int(r)

    def report(code: str, sev: Severity, rows, text: Callable[[int], str]) -> Iterable[tuple]:
        rows = np.flatnonzero(rows)
        for path, e, r in where(rows[:FINDINGS_PER_CODE]):
            yield code, sev, path, f"{basename(path)} entry {e}: {text(r)}", None
        for _ in range(len(rows) - FINDINGS_PER_CODE):  # counted by _capped
            yield code, sev, "", "", None

    status = index.ints("status", 1)
    yield from report("iceberg.entry-unknown-status", Severity.ERROR,
                      t.column("status").is_valid().to_numpy(zero_copy_only=False) & ~np.isin(status, (0, 1, 2)),
                      lambda r: f"status {status[r]} is not 0 (existing), 1 (added) or 2 (deleted)")
    content = index.ints("content", 0)
    yield from report("iceberg.entry-unknown-content", Severity.ERROR, ~np.isin(content, (0, 1, 2)),
                      lambda r: f"content {content[r]} is not 0 (data), 1 (position deletes) or 2 (equality deletes)")
    for name in ("record_count", "file_size_in_bytes", "content_offset", "content_size_in_bytes"):
        values = index.ints(name, 0)
        yield from report("iceberg.entry-negative", Severity.ERROR, values < 0,
                          lambda r, name=name, values=values: f"{name} {values[r]:,} is negative")
    for name in ("file_path", "record_count", "file_size_in_bytes"):
        yield from report("iceberg.entry-type", Severity.ERROR, t.column(name).is_null().to_numpy(zero_copy_only=False),
                          lambda r, name=name: f"required field {name} is missing")
    for name in ("file_path", "referenced_data_file"):
        yield from _control_characters(index, name, report)
    off, size, fsize = index.ints("content_offset", 0), index.ints("content_size_in_bytes", 0), \
        index.ints("file_size_in_bytes", -1)
    has = (t.column("content_offset").is_valid().to_numpy(zero_copy_only=False)
           & t.column("content_size_in_bytes").is_valid().to_numpy(zero_copy_only=False) & (fsize >= 0))
    # negative offsets and sizes are entry-negative above; the rest add up exactly in uint64 (int64 would wrap)
    has &= (off >= 0) & (size >= 0)
    end = np.where(has, off, 0).astype(np.uint64) + np.where(has, size, 0).astype(np.uint64)
    yield from report("iceberg.entry-range-beyond-file", Severity.ERROR, has & (end > fsize.astype(np.uint64)),
                      lambda r: f"content range [{int(off[r]):,}, {int(off[r]) + int(size[r]):,}) ends past "
                                f"file_size_in_bytes {int(fsize[r]):,}")
    yield from _validate_partitions(index, partition_specs, cache, manifest, entry)


def _control_characters(index: EntryIndex, name: str, report: Callable) -> Iterable[tuple]:
    """``iceberg.path-control-character`` for each entry whose path column ``name`` holds a control character
    (column-wise; the I/O layer refuses such a path, so its file is never opened)."""
    import pyarrow.compute as pc

    from ..io.locations import CONTROL_PATTERN, describe

    col = index.table.column(name)
    if not _may_hold_control_bytes(col):
        return
    hit = pc.fill_null(pc.match_substring_regex(col, CONTROL_PATTERN), False).to_numpy(zero_copy_only=False)
    if hit.any():
        values = col.to_pylist() if hit.sum() else []
        yield from report("iceberg.path-control-character", Severity.ERROR, hit,
                          lambda r: f"{name} {values[r]!r} holds the control character {describe(values[r])}; "
                                    "the file is not opened")


def _may_hold_control_bytes(column) -> bool:
    """Whether a string column's value bytes hold a byte of ``CONTROL_PATTERN`` (0x00-0x1f, 0x7f): one pass
    over its buffers, which the regex then only runs after (UTF-8 puts no such byte inside a character)."""
    import numpy as np
    import pyarrow as pa

    for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
        if not len(chunk):
            continue
        if not (pa.types.is_string(chunk.type) or pa.types.is_large_string(chunk.type)):
            return True
        _, offsets, data = chunk.buffers()
        if data is None:
            continue
        ends = np.frombuffer(offsets, np.int64 if pa.types.is_large_string(chunk.type) else np.int32)
        values = np.frombuffer(data, np.uint8)[ends[chunk.offset]:ends[chunk.offset + len(chunk)]]
        if (values < 0x20).any() or (values == 0x7F).any():
            return True
    return False


def _validate_partitions(index: EntryIndex, partition_specs: dict, cache: "EntryCache", manifest,
                         entry) -> Iterable[tuple]:
    """Each distinct (spec, partition record) pair once per table: field names against the spec,
    bucket values in range.  A clean pair costs a byte in ``cache.partitions_clean``; only pairs with
    findings are kept (``cache.partitions_checked``), so a table with a partition per file stays small."""
    import numpy as np

    specs = partition_specs
    seen = cache.partitions_checked
    spec_ids = index.ints("spec_id", -1)
    codes = index.ints("partition", -1)
    for spec_id in sorted_unique(spec_ids).tolist():
        rows = np.flatnonzero(spec_ids == spec_id)
        uniq, first = np.unique(codes[rows], return_index=True)
        spec = specs.get(spec_id)
        if spec is None:
            continue
        clean = cache.partitions_clean.setdefault(spec_id, bytearray())
        if len(clean) < len(index.partitions):
            clean.extend(bytes(len(index.partitions) - len(clean)))
        # views of the registry's arrays, for this chunk's codes only (never a copy of the whole registry per
        # manifest); released before the first yield, so that registering (which resizes them) may go on
        flags = np.frombuffer(clean, dtype=np.uint8)
        todo = (uniq >= 0) & (uniq < len(flags))
        todo[todo] = flags[uniq[todo]] == 0
        names = sorted(str(f.get("name")) for f in spec)
        buckets = []
        for f in spec:
            transform = str(f.get("transform", ""))
            if transform.startswith("bucket[") and transform.endswith("]") and transform[7:-1].isdigit():
                buckets.append((f.get("name"), transform, int(transform[7:-1])))
        # each set of names once (the registry numbers them): a record with the spec's names is clean unless a
        # bucket is to be checked, a value that is no record is skipped; the rest are checked one by one below
        shapes = np.frombuffer(cache.partition_shapes, dtype=np.intc)[uniq[todo]]  # the number of each one's names
        names_ok = {number: sorted(map(str, cache.shapes[number])) == names
                    for number in sorted_unique(shapes[shapes >= 0]).tolist()}
        settled = shapes < 0
        if not buckets:
            for number, ok in names_ok.items():
                if ok:
                    settled |= shapes == number
        flags[uniq[todo][settled]] = 1
        del flags
        todo[np.flatnonzero(todo)[settled]] = False
        records = index.partitions.take(uniq[todo])  # the records checked one by one, made column-wise at once
        for code, r, number, value in zip(uniq[todo].tolist(), rows[first[todo]].tolist(),
                                          shapes[~settled].tolist(), records):
            path = None
            if (spec_id, code) in seen:  # found where it was first seen (again when decoded with metrics)
                path = index.manifests[manifest[r]].get("manifest_path") or ""
                yield from (f for f in seen[(spec_id, code)] if f[2] == path)
                continue
            have, ok = cache.shapes[number], names_ok[number]
            found = []
            if not ok:
                path = index.manifests[manifest[r]].get("manifest_path") or ""
                found.append(("iceberg.entry-partition-mismatch", Severity.WARNING, path,
                              f"{basename(path)} entry {int(entry[r])}: partition fields {list(have)} but spec "
                              f"{spec_id} has {[f.get('name') for f in spec]}", None))
            else:
                for name, transform, n in buckets:
                    v = (value or {}).get(name)
                    if v is not None and (not isinstance(v, int) or not 0 <= v < n):
                        path = path if path is not None else index.manifests[manifest[r]].get("manifest_path") or ""
                        found.append(("iceberg.entry-partition-mismatch", Severity.WARNING, path,
                                      f"{basename(path)} entry {int(entry[r])}: partition {name}={_short(v)} is "
                                      f"outside {transform}", None))
            if found:
                seen[(spec_id, code)] = found
                yield from found
            else:
                clean[code] = 1

