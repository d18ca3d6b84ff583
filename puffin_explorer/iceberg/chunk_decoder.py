"""One manifest's entries as one column chunk of the index, from fastavro's records or from DuckDB's columns.

The fastavro walker (:func:`.avro.read_records` with a reader schema, :func:`_projection`) reads damaged
manifests, small tables and anything DuckDB refuses, record by record, keeping the records before the
damage; :meth:`ChunkDecoder.chunk` turns its records into columns, a value of the wrong type a finding and a
null.  :meth:`ChunkDecoder.chunk_from_arrow` applies the same inheritance to DuckDB's columns column-wise.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..regions import Severity
from . import manifests as mf
from .avro import read_records
from .entry_checks import short_value
from .index import FILE_FIELDS, METRIC_FIELDS, TOP_FIELDS, _schema
from .numbers import in_range, out_of_range, show, spec_type
from .partition_registry import PartitionRegistry
from .paths import basename


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


class ChunkDecoder:
    """Turns the bytes of one manifest into one column chunk, recording what is wrong with it; partition records
    are coded by the table's ``registry``."""

    def __init__(self, metrics: bool, registry: PartitionRegistry) -> None:
        self.metrics = metrics
        self.schema = _schema(metrics)
        self.project = _projection(metrics)
        self.key = f"entry-index:{int(metrics)}"
        self.registry = registry
        self.findings: list[tuple[str, Severity, str, str, Optional[int]]] = []

    def chunk(self, data: bytes, manifest: dict[str, Any], location: str):
        """The manifest's entries as a ``pyarrow.Table`` (``manifest`` column 0: set when assembled), read by the
        fastavro walker: its records, their values with inheritance applied, those values as columns."""
        self.findings = []
        name = manifest.get("manifest_path") or location
        records, meta = self._walk(data, manifest, name)
        return self._columns(self._entry_values(records, manifest, meta, name), manifest, name)

    def _walk(self, data: bytes, manifest: dict[str, Any], name: str) -> tuple[list, dict]:
        """The records and file metadata the fastavro walker reads; damage is a finding (the records before it
        are kept)."""
        got = read_records(data, self.project, self.key)
        if got.damage is not None:
            claimed = mf.manifest_counts(manifest)
            total = claimed if claimed is not None else got.claimed
            self.findings.append((
                "iceberg.manifest-damaged" if got.records or got.damage.offset else "iceberg.manifest-unreadable",
                Severity.ERROR, name,
                f"{basename(name)}: cannot read Avro from byte {got.damage.offset:,} ({got.damage.reason}): "
                f"{len(got.records):,} of {total:,} records read", got.damage.offset))
        return got.records, got.metadata

    def _entry_values(self, records: list, manifest: dict[str, Any], meta: dict, name: str) -> dict[str, list]:
        """Each field's values, entry by entry, with inheritance applied: the manifest's snapshot id, its sequence
        number for an added entry without one (0 in a v1 manifest), first row ids counted on from its
        ``first_row_id``; the partition records coded."""
        m_seq = manifest.get("sequence_number")
        m_seq = 0 if m_seq is None else m_seq
        m_snapshot = manifest.get("added_snapshot_id")
        next_row_id = manifest.get("first_row_id")
        fmt = meta.get("format-version")
        v1 = fmt == "1" or (fmt is None and records and "sequence_number" not in records[0])
        status, snapshot, seq, fseq, content, frid, part = [], [], [], [], [], [], []
        files: dict[str, list] = {f: [] for f in FILE_FIELDS if f not in ("partition", "content", "first_row_id")}
        metric_cols: dict[str, list] = {f: [] for f in METRIC_FIELDS} if self.metrics else {}
        bad = self._bad(name)
        code_of = self.registry.code_of
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
            part.append(code_of(df.get("partition")))
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
        return {**files, **metric_cols, "status": status, "snapshot_id": snapshot, "sequence_number": seq,
                "file_sequence_number": fseq, "content": content, "first_row_id": frid, "partition": part}

    def _columns(self, values: dict[str, list], manifest: dict[str, Any], name: str):
        """The entries' values as the chunk's columns; a value of another type than its column's is a finding and
        a null (:meth:`_column`)."""
        import pyarrow as pa

        n = len(values["status"])
        column = self._column
        ref = values["referenced_data_file"]
        empty = [x == "" for x in ref]
        ref = [None if x == "" else x for x in ref]
        fmt_col = column(values["file_format"], pa.string(), name, "file_format")
        content_arr = column(values["content"], pa.int8(), name, "content")
        cols = {
            "content": content_arr,
            "kind": _kinds(content_arr, fmt_col),
            "status": column(values["status"], pa.int8(), name, "status"),
            "file_path": column(values["file_path"], pa.string(), name, "file_path"),
            "file_format": fmt_col,
            "partition": pa.array(values["partition"], pa.int32()),
            "spec_id": pa.array([manifest.get("partition_spec_id")] * n, pa.int32()),
            "record_count": column(values["record_count"], pa.int64(), name, "record_count"),
            "file_size_in_bytes": column(values["file_size_in_bytes"], pa.int64(), name, "file_size_in_bytes"),
            "snapshot_id": column(values["snapshot_id"], pa.int64(), name, "snapshot_id"),
            "sequence_number": column(values["sequence_number"], pa.int64(), name, "sequence_number"),
            "file_sequence_number": column(values["file_sequence_number"], pa.int64(), name, "file_sequence_number"),
            "first_row_id": column(values["first_row_id"], pa.int64(), name, "first_row_id"),
            "referenced_data_file": column(ref, pa.string(), name, "referenced_data_file"),
            "empty_referenced_data_file": pa.array(empty, pa.bool_()),
            "content_offset": column(values["content_offset"], pa.int64(), name, "content_offset"),
            "content_size_in_bytes": column(values["content_size_in_bytes"], pa.int64(), name,
                                            "content_size_in_bytes"),
            "equality_ids": column(values["equality_ids"], pa.list_(pa.int32()), name, "equality_ids"),
            "sort_order_id": column(values["sort_order_id"], pa.int32(), name, "sort_order_id"),
            "manifest": pa.array([0] * n, pa.int32()),
            "entry": pa.array(range(n), pa.int32()),
        }
        for f in METRIC_FIELDS if self.metrics else ():
            cols[f] = column(values[f], self.schema.field(f).type, name, f)
        return pa.Table.from_arrays([cols[f.name] for f in self.schema], schema=self.schema)

    def chunk_from_arrow(self, raw, manifest: dict[str, Any], meta: dict[str, str], partition_codes: Any):
        """The manifest's entries from DuckDB's columns: inheritance and kinds applied column-wise
        (``partition_codes``: its rows' codes, from the registry's
        :meth:`~.partition_registry.PartitionRegistry.codes_of` over the whole read; None for
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
            part = pa.array(np.full(n, self.registry.code_of({}), dtype=np.int32))
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

    def _bad(self, name: str):
        def bad(i: int, field_name: str, value: Any) -> None:
            self.findings.append(("iceberg.entry-type", Severity.ERROR, name,
                                  f"{basename(name)} entry {i}: {field_name} is {type(value).__name__} "
                                  f"{short_value(value)}, not the spec's type; read as null", None))
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
