"""Derive, from a Spark-written DV table (``generate_dv_table``), an Iceberg v3 table of any size.

    from scale_table import ensure_scaled_table
    meta = ensure_scaled_table("/tmp/pe-bench/bench/dv_10000/metadata/v3.metadata.json",
                               1_000_000, "/tmp/pe-bench/scale/dv_1000000")

Data file ``i`` of the new table is a clone of the base table's data file ``i % n`` (n the base
size): its manifest entry is the base entry with a new path, partition ``file_no = i`` and that
column's bounds set to ``i``; the file itself is a hard link to the base's Parquet file (the same
bytes under a distinct name).  Its DV is the base DV's bytes, re-serialised into new Puffin files
(``dvs_per_puffin`` blobs each, written with this project's ``PuffinWriter``, every blob carrying
``referenced-data-file`` and ``cardinality`` as Iceberg writes them); the delete entries point at
them with their own ``content_offset`` / ``content_size_in_bytes`` / ``referenced_data_file``.

Manifests are written with fastavro using the base manifests' own Avro schemas (field ids kept)
and key-value metadata, ``entries_per_manifest`` entries each, streamed so that memory does not
grow with the table.  The metadata file holds one snapshot (an ``overwrite`` adding every data
and delete file, summary totals as Iceberg computes them) whose manifest list assigns row ids
(``first_row_id`` per data manifest; ``next-row-id`` = rows in the table).

The build is cached: a marker file names the metadata file once everything is written, and a
lock file keeps two processes from building the same table at once.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import struct
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

DONE_MARKER = "_puffin_explorer_complete"
FILES_PER_DIR = 1000


def _read_avro(path: str):
    import fastavro

    with open(path, "rb") as fh:
        reader = fastavro.reader(fh)
        return dict(reader.metadata), list(reader)


class _AvroTemplate:
    """One kind of Avro file of the base table (schema, codec, key-value metadata) to write again."""

    def __init__(self, meta: dict):
        import fastavro

        self.meta = meta
        self.schema = fastavro.parse_schema(json.loads(meta["avro.schema"]))
        self.codec = meta.get("avro.codec", "null")

    def write(self, path: str, records, **overrides: str) -> int:
        import fastavro

        kv = {k: v for k, v in self.meta.items() if not k.startswith("avro.")}
        kv.update(overrides)
        with open(path, "wb") as fh:
            fastavro.writer(fh, self.schema, records, codec=self.codec, metadata=kv)
        return os.path.getsize(path)


def _local(path: str) -> str:
    """A local path from an Iceberg location (``file:/x``, ``file:///x`` or ``/x``)."""
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    return path


@contextmanager
def _lock(path: str):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class _Base:
    """The base table's current snapshot: data entries, DV entries and DV bytes, paired per data file."""

    def __init__(self, metadata_location: str):
        with open(metadata_location) as fh:
            self.metadata = json.load(fh)
        md = self.metadata
        if int(md.get("format-version", 0)) < 3:
            raise ValueError(f"{metadata_location}: a format v3 table is needed")
        snap = next(s for s in md["snapshots"] if s["snapshot-id"] == md["current-snapshot-id"])
        self.snapshot = snap
        list_meta, manifests = _read_avro(_local(snap["manifest-list"]))
        self.list_template = _AvroTemplate(list_meta)
        self.list_records = {0: None, 1: None}
        data, deletes = [], []
        self.templates: dict[int, _AvroTemplate] = {}
        for m in manifests:
            content = int(m.get("content") or 0)
            self.list_records.setdefault(content, None)
            if self.list_records[content] is None:
                self.list_records[content] = m
            meta, entries = _read_avro(_local(m["manifest_path"]))
            self.templates.setdefault(content, _AvroTemplate(meta))
            live = [e for e in entries if e["status"] != 2]
            (data if content == 0 else deletes).extend(live)
        if not data or not deletes or self.list_records[1] is None:
            raise ValueError(f"{metadata_location}: the base table needs live data files and DVs")
        by_ref = {}
        for e in deletes:
            df = e["data_file"]
            if df.get("file_format") != "PUFFIN" or not df.get("referenced_data_file"):
                raise ValueError(f"{metadata_location}: every delete file must be a DV, not {df.get('file_path')}")
            by_ref[df["referenced_data_file"]] = e
        data.sort(key=lambda e: e["data_file"]["file_path"])
        missing = [e["data_file"]["file_path"] for e in data if e["data_file"]["file_path"] not in by_ref]
        if missing:
            raise ValueError(f"{metadata_location}: {len(missing)} data files have no DV (e.g. {missing[0]})")
        self.data = data
        self.dvs = [by_ref[e["data_file"]["file_path"]] for e in data]
        self.blobs: list[bytes] = []
        self.blob_properties: list[dict] = []
        self.puffin_properties: dict = {}
        footers: dict[str, dict[int, dict]] = {}
        for e in self.dvs:
            df = e["data_file"]
            path = _local(df["file_path"])
            if path not in footers:
                footer = _footer(path)
                footers[path] = {b["offset"]: b for b in footer["blobs"]}
                self.puffin_properties = footer.get("properties", {})
            blob = footers[path][df["content_offset"]]
            with open(path, "rb") as fh:
                fh.seek(df["content_offset"])
                self.blobs.append(fh.read(df["content_size_in_bytes"]))
            self.blob_properties.append(dict(blob.get("properties", {})))
        self.partition_field = _partition_source(md)
        self.rows = sum(int(e["data_file"]["record_count"]) for e in data)


def _footer(path: str) -> dict:
    """The footer JSON of an uncompressed-footer Puffin file."""
    with open(path, "rb") as fh:
        fh.seek(-12, os.SEEK_END)
        size, flags = struct.unpack("<iI", fh.read(8))
        if flags & 1:
            raise ValueError(f"{path}: compressed footers are not handled here")
        fh.seek(-12 - size, os.SEEK_END)
        return json.loads(fh.read(size))


def _partition_source(md: dict):
    """(partition field name, source field id) of an identity int partition on one column, else None."""
    spec = next(s for s in md["partition-specs"] if s["spec-id"] == md.get("default-spec-id", 0))
    fields = spec.get("fields", [])
    if len(fields) != 1 or fields[0].get("transform") != "identity":
        return None
    schema = next(s for s in md["schemas"] if s["schema-id"] == md.get("current-schema-id", 0))
    col = next((f for f in schema["fields"] if f["id"] == fields[0]["source-id"]), None)
    if col is None or col["type"] != "int":
        return None
    return fields[0]["name"], col["id"]


def _with_bound(bounds, field_id: int, value: bytes):
    if bounds is None:
        return bounds
    if isinstance(bounds, dict):
        return {**bounds, field_id: value} if field_id in bounds else bounds
    return [{"key": b["key"], "value": value} if b["key"] == field_id else b for b in bounds]


def _file_no_summary(lo: int, hi: int) -> list[dict]:
    return [{"contains_null": False, "contains_nan": False,
             "lower_bound": struct.pack("<i", lo), "upper_bound": struct.pack("<i", hi)}]


class _Clone:
    """What the build's worker processes share (inherited by fork): the base table and the new table's names."""

    def __init__(self, base: "_Base", dest: str, dvs_per_puffin: int, entries_per_manifest: int, n_files: int):
        self.base = base
        self.dest = dest
        self.data_dir, self.meta_dir = os.path.join(dest, "data"), os.path.join(dest, "metadata")
        self.dvs_per_puffin, self.entries_per_manifest, self.n_files = dvs_per_puffin, entries_per_manifest, n_files
        self.scheme = "file:" if base.data[0]["data_file"]["file_path"].startswith("file:") else ""
        self.snapshot_id = int(base.snapshot["snapshot-id"])
        self.part = base.partition_field
        self.names = [os.path.basename(_local(e["data_file"]["file_path"])) for e in base.data]
        sizes = [len(b) for b in base.blobs]
        self.blob_start = [0]
        for size in sizes:
            self.blob_start.append(self.blob_start[-1] + size)
        self.n_puffins = -(-n_files // dvs_per_puffin)
        self.puffin_paths = [os.path.join(self.data_dir, f"{p:05d}-{uuid.uuid4()}-deletes.puffin")
                             for p in range(self.n_puffins)]
        self.puffin_sizes: list[int] = []

    def data_path(self, i: int) -> str:
        return os.path.join(self.data_dir, f"{i // FILES_PER_DIR:05d}", f"{i:07d}-{self.names[i % len(self.names)]}")

    def _blob_bytes_before(self, i: int) -> int:
        """Bytes of the DV blobs of files 0..i-1 laid end to end (file i's DV is the base DV i % n)."""
        whole, part = divmod(i, len(self.names))
        return whole * self.blob_start[-1] + self.blob_start[part]

    def dv_offset(self, i: int) -> int:
        first = (i // self.dvs_per_puffin) * self.dvs_per_puffin
        return 4 + self._blob_bytes_before(i) - self._blob_bytes_before(first)  # 4: the leading magic

    def data_entry(self, i: int) -> dict:
        src = self.base.data[i % len(self.names)]
        df = dict(src["data_file"])
        df["file_path"] = self.scheme + self.data_path(i)
        if self.part is not None:
            df["partition"] = {**df["partition"], self.part[0]: i}
            value = struct.pack("<i", i)
            df["lower_bounds"] = _with_bound(df.get("lower_bounds"), self.part[1], value)
            df["upper_bounds"] = _with_bound(df.get("upper_bounds"), self.part[1], value)
        if "first_row_id" in df:
            df["first_row_id"] = None  # inherited from the manifest list
        return {**src, "status": 1, "snapshot_id": self.snapshot_id, "sequence_number": None,
                "file_sequence_number": None, "data_file": df}

    def dv_entry(self, i: int, data: dict) -> dict:
        j = i % len(self.names)
        src = self.base.dvs[j]
        p = i // self.dvs_per_puffin
        df = dict(src["data_file"])
        df.update(file_path=self.scheme + self.puffin_paths[p], file_size_in_bytes=self.puffin_sizes[p],
                  content_offset=self.dv_offset(i), content_size_in_bytes=len(self.base.blobs[j]),
                  referenced_data_file=data["data_file"]["file_path"])
        if self.part is not None:
            df["partition"] = {**df["partition"], self.part[0]: i}
        return {**src, "status": 1, "snapshot_id": self.snapshot_id, "sequence_number": None,
                "file_sequence_number": None, "data_file": df}


_CLONE: _Clone | None = None  # set before the worker processes fork


def _write_puffin(p: int) -> int:
    """Puffin file ``p`` (the DVs of its data files, the base's DV bytes) and its data files' hard links."""
    from puffin_explorer.format.dv_shape import BLOB_TYPE as DV_TYPE
    from puffin_explorer.format.dv_shape import ROW_POSITION_FIELD_ID
    from puffin_explorer.format.writer import PuffinWriter

    c = _CLONE
    lo, hi = p * c.dvs_per_puffin, min(c.n_files, (p + 1) * c.dvs_per_puffin)
    writer = PuffinWriter(properties=c.base.puffin_properties)
    for i in range(lo, hi):
        j = i % len(c.names)
        local = c.data_path(i)
        os.makedirs(os.path.dirname(local), exist_ok=True)
        source = _local(c.base.data[j]["data_file"]["file_path"])
        try:
            os.link(source, local)
        except OSError as exc:  # another file system: the same bytes, copied
            if exc.errno != errno.EXDEV:
                raise
            shutil.copyfile(source, local)
        props = dict(c.base.blob_properties[j], **{"referenced-data-file": c.scheme + local})
        writer.add_raw_blob(c.base.blobs[j], DV_TYPE, [ROW_POSITION_FIELD_ID], -1, -1, None, props)
    data = writer.to_bytes()
    footer = json.loads(writer.footer_json())
    for i, b in zip(range(lo, hi), footer["blobs"]):
        if b["offset"] != c.dv_offset(i):
            raise AssertionError(f"{c.puffin_paths[p]}: blob at {b['offset']}, expected {c.dv_offset(i)}")
    with open(c.puffin_paths[p], "wb") as fh:
        fh.write(data)
    return len(data)


def _write_manifests(m: int) -> list[dict]:
    """Data manifest ``m`` and its delete manifest (files m*E .. (m+1)*E-1): their manifest-list records."""
    c = _CLONE
    lo, hi = m * c.entries_per_manifest, min(c.n_files, (m + 1) * c.entries_per_manifest)
    data = [c.data_entry(i) for i in range(lo, hi)]
    dvs = [c.dv_entry(i, d) for i, d in zip(range(lo, hi), data)]
    out = []
    for content, entries in ((0, data), (1, dvs)):
        kind = "data" if content == 0 else "deletes"
        path = os.path.join(c.meta_dir, f"{uuid.uuid4()}-m{m}-{kind}.avro")
        length = c.base.templates[content].write(path, entries)
        rec = dict(c.base.list_records[content])
        rows = sum(int(e["data_file"]["record_count"]) for e in entries)
        rec.update(manifest_path=c.scheme + path, manifest_length=length, sequence_number=1,
                   min_sequence_number=1, added_snapshot_id=c.snapshot_id, added_files_count=len(entries),
                   existing_files_count=0, deleted_files_count=0, added_rows_count=rows,
                   existing_rows_count=0, deleted_rows_count=0)
        if c.part and rec.get("partitions") is not None:
            rec["partitions"] = _file_no_summary(lo, hi - 1)
        if "first_row_id" in rec:
            rec["first_row_id"] = None  # set by the caller, which knows the rows before
        out.append({"record": rec, "rows": rows,
                    "bytes": sum(int(e["data_file"]["file_size_in_bytes"]) for e in entries) if content == 0 else 0})
    return out


def build_scaled_table(base_metadata: str, n_files: int, dest: str, dvs_per_puffin: int = 3334,
                       entries_per_manifest: int = 10_000, log=print, processes: int | None = None) -> str:
    """Write the table (``n_files`` data files, one DV each) under ``dest``; return its metadata file.

    Puffin files (with their data files' links), then manifests, are written by ``processes`` worker
    processes (default: one per CPU); every name and offset is computed from the file's number, so
    the table is the same whichever process writes which part."""
    global _CLONE
    if n_files < 1 or dvs_per_puffin < 1 or entries_per_manifest < 1:
        raise ValueError("n_files, dvs_per_puffin and entries_per_manifest must be >= 1")
    import multiprocessing

    started = time.time()
    base = _Base(base_metadata)
    md = base.metadata
    dest = os.path.abspath(dest)
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(os.path.join(dest, "metadata"))
    os.makedirs(os.path.join(dest, "data"))
    c = _CLONE = _Clone(base, dest, dvs_per_puffin, entries_per_manifest, n_files)
    processes = processes or os.cpu_count() or 1
    n_manifests = -(-n_files // entries_per_manifest)

    def run(fn, count: int, what: str) -> list:
        results = []
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(processes) as pool:
            for k, r in enumerate(pool.imap(fn, range(count), chunksize=max(1, min(16, count // (processes * 8))))):
                results.append(r)
                if log and (k + 1) % max(1, count // 10) == 0:
                    log(f"  {k + 1:,} / {count:,} {what} written ({time.time() - started:.0f}s)")
        return results

    try:
        c.puffin_sizes = run(_write_puffin, c.n_puffins, "Puffin files")
        written = run(_write_manifests, n_manifests, "manifest pairs")
    finally:
        _CLONE = None
    deleted = [int(e["data_file"]["record_count"]) for e in base.dvs]
    whole, rest = divmod(n_files, len(deleted))
    totals = {"rows": 0, "data_bytes": 0, "dv_bytes": sum(c.puffin_sizes),
              "deleted": whole * sum(deleted) + sum(deleted[:rest])}
    data_records, delete_records = [], []
    for pair in written:
        data, deletes = pair
        if "first_row_id" in data["record"]:
            data["record"]["first_row_id"] = totals["rows"]
        totals["rows"] += data["rows"]
        totals["data_bytes"] += data["bytes"]
        data_records.append(data["record"])
        delete_records.append(deletes["record"])
    list_records = data_records + delete_records  # data manifests first, as Iceberg lists them
    snapshot_id, seq, meta_dir, scheme, part = c.snapshot_id, 1, c.meta_dir, c.scheme, c.part
    n_puffins = c.n_puffins
    list_name = f"snap-{snapshot_id}-1-{uuid.uuid4()}.avro"
    list_path = os.path.join(meta_dir, list_name)
    list_kv = {"snapshot-id": str(snapshot_id), "sequence-number": str(seq), "parent-snapshot-id": "null"}
    if "first-row-id" in base.list_template.meta:
        list_kv["first-row-id"] = "0"
    base.list_template.write(list_path, list_records, **list_kv)

    now = int(time.time() * 1000)
    total_rows = totals["rows"]
    summary = {
        "operation": "overwrite",
        "added-data-files": str(n_files), "added-delete-files": str(n_files), "added-dvs": str(n_files),
        "added-records": str(total_rows), "added-position-deletes": str(totals["deleted"]),
        "added-files-size": str(totals["data_bytes"] + totals["dv_bytes"]),
        "changed-partition-count": str(n_files if part else 1),
        "total-records": str(total_rows), "total-files-size": str(totals["data_bytes"] + totals["dv_bytes"]),
        "total-data-files": str(n_files), "total-delete-files": str(n_files),
        "total-position-deletes": str(totals["deleted"]), "total-equality-deletes": "0",
    }
    snap = {"sequence-number": seq, "snapshot-id": snapshot_id, "timestamp-ms": now, "summary": summary,
            "manifest-list": scheme + list_path, "schema-id": base.snapshot.get("schema-id", 0)}
    if "first-row-id" in base.snapshot:
        snap["first-row-id"] = 0
        snap["added-rows"] = total_rows
    new_md = dict(md)
    new_md.update({"location": scheme + dest, "last-sequence-number": seq, "last-updated-ms": now,
                   "current-snapshot-id": snapshot_id, "snapshots": [snap], "statistics": [],
                   "partition-statistics": [], "metadata-log": [],
                   "snapshot-log": [{"timestamp-ms": now, "snapshot-id": snapshot_id}],
                   "refs": {"main": {"snapshot-id": snapshot_id, "type": "branch"}}})
    if "next-row-id" in md:
        new_md["next-row-id"] = total_rows
    new_md["table-uuid"] = str(uuid.uuid4())
    location = os.path.join(meta_dir, "v1.metadata.json")
    with open(location, "w") as fh:
        json.dump(new_md, fh, indent=1)
    with open(os.path.join(meta_dir, "version-hint.text"), "w") as fh:
        fh.write("1")
    if log:
        log(f"  built {n_files:,} data files + {n_files:,} DVs in {n_puffins} Puffin files, "
            f"{len(list_records)} manifests, in {time.time() - started:.0f}s: {location}")
    return location


def expected_live_rows(base_metadata: str, n_files: int) -> int:
    """Rows a reader must return from the derived table with its DVs applied (from the base's manifests)."""
    base = _Base(base_metadata)
    live = [int(d["data_file"]["record_count"]) - int(v["data_file"]["record_count"])
            for d, v in zip(base.data, base.dvs)]
    whole, part = divmod(n_files, len(live))
    return whole * sum(live) + sum(live[:part])


def ensure_scaled_table(base_metadata: str, n_files: int, dest: str, dvs_per_puffin: int = 3334,
                        entries_per_manifest: int = 10_000, log=print) -> str:
    """The metadata file of the table under ``dest``, built the first time (cached; one builder at a time)."""
    marker = os.path.join(dest, DONE_MARKER)
    with _lock(os.path.abspath(dest).rstrip("/") + ".lock"):
        if os.path.exists(marker):
            with open(marker) as fh:
                return fh.read().strip()
        location = build_scaled_table(base_metadata, n_files, dest, dvs_per_puffin, entries_per_manifest, log)
        with open(marker, "w") as fh:
            fh.write(location + "\n")
        return location
