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


def build_scaled_table(base_metadata: str, n_files: int, dest: str, dvs_per_puffin: int = 3334,
                       entries_per_manifest: int = 10_000, log=print) -> str:
    """Write the table (``n_files`` data files, one DV each) under ``dest``; return its metadata file."""
    if n_files < 1 or dvs_per_puffin < 1 or entries_per_manifest < 1:
        raise ValueError("n_files, dvs_per_puffin and entries_per_manifest must be >= 1")
    from puffin_explorer.format.dv import BLOB_TYPE as DV_TYPE
    from puffin_explorer.format.dv import ROW_POSITION_FIELD_ID
    from puffin_explorer.format.writer import PuffinWriter

    started = time.time()
    base = _Base(base_metadata)
    n_base = len(base.data)
    md = base.metadata
    dest = os.path.abspath(dest)
    shutil.rmtree(dest, ignore_errors=True)
    data_dir, meta_dir = os.path.join(dest, "data"), os.path.join(dest, "metadata")
    os.makedirs(meta_dir)
    scheme = "file:" if base.data[0]["data_file"]["file_path"].startswith("file:") else ""
    snapshot_id = int(base.snapshot["snapshot-id"])
    seq = 1
    part = base.partition_field

    def clone_data(i: int) -> dict:
        src = base.data[i % n_base]
        df = dict(src["data_file"])
        name = os.path.basename(_local(df["file_path"]))
        sub = os.path.join(data_dir, f"{i // FILES_PER_DIR:05d}")
        if i % FILES_PER_DIR == 0:
            os.makedirs(sub, exist_ok=True)
        local = os.path.join(sub, f"{i:07d}-{name}")
        try:
            os.link(_local(df["file_path"]), local)
        except OSError as exc:  # another file system: the same bytes, copied
            if exc.errno != errno.EXDEV:
                raise
            shutil.copyfile(_local(df["file_path"]), local)
        df["file_path"] = scheme + local
        if part is not None:
            df["partition"] = {**df["partition"], part[0]: i}
            value = struct.pack("<i", i)
            df["lower_bounds"] = _with_bound(df.get("lower_bounds"), part[1], value)
            df["upper_bounds"] = _with_bound(df.get("upper_bounds"), part[1], value)
        if "first_row_id" in df:
            df["first_row_id"] = None  # inherited from the manifest list
        return {**src, "status": 1, "snapshot_id": snapshot_id, "sequence_number": None,
                "file_sequence_number": None, "data_file": df}

    list_records: list[dict] = []
    totals = {"data_bytes": 0, "dv_bytes": 0, "rows": 0, "deleted": 0}
    pending = {0: [], 1: []}

    def flush(content: int) -> None:
        entries = pending[content]
        if not entries:
            return
        kind = "data" if content == 0 else "deletes"
        path = os.path.join(meta_dir, f"{uuid.uuid4()}-m{len(list_records)}-{kind}.avro")
        length = base.templates[content].write(path, entries)
        rec = dict(base.list_records[content])
        keys = [e["data_file"]["partition"].get(part[0]) for e in entries] if part else []
        rows = sum(int(e["data_file"]["record_count"]) for e in entries)
        rec.update(manifest_path=scheme + path, manifest_length=length, sequence_number=seq,
                   min_sequence_number=seq, added_snapshot_id=snapshot_id, added_files_count=len(entries),
                   existing_files_count=0, deleted_files_count=0, added_rows_count=rows,
                   existing_rows_count=0, deleted_rows_count=0)
        if part and rec.get("partitions") is not None:
            rec["partitions"] = _file_no_summary(min(keys), max(keys))
        if "first_row_id" in rec:
            rec["first_row_id"] = totals["rows"] if content == 0 else None
        if content == 0:
            totals["rows"] += rows
        list_records.append(rec)
        pending[content] = []

    n_puffins = -(-n_files // dvs_per_puffin)
    for p in range(n_puffins):
        lo, hi = p * dvs_per_puffin, min(n_files, (p + 1) * dvs_per_puffin)
        writer = PuffinWriter(properties=base.puffin_properties)
        puffin_path = os.path.join(data_dir, f"{p:05d}-{uuid.uuid4()}-deletes.puffin")
        clones = []
        offset = 4  # after the leading magic
        for i in range(lo, hi):
            d = clone_data(i)
            j = i % n_base
            blob = base.blobs[j]
            props = dict(base.blob_properties[j], **{"referenced-data-file": d["data_file"]["file_path"]})
            writer.add_raw_blob(blob, DV_TYPE, [ROW_POSITION_FIELD_ID], -1, -1, None, props)
            clones.append((d, j, offset, len(blob)))
            offset += len(blob)
        data = writer.to_bytes()
        with open(puffin_path, "wb") as fh:
            fh.write(data)
        footer = json.loads(writer.footer_json())
        for (d, j, off, size), b in zip(clones, footer["blobs"]):
            if b["offset"] != off or b["length"] != size:
                raise AssertionError(f"footer blob at {b['offset']}+{b['length']}, expected {off}+{size}")
            src = base.dvs[j]
            df = dict(src["data_file"])
            df.update(file_path=scheme + puffin_path, file_size_in_bytes=len(data), content_offset=off,
                      content_size_in_bytes=size, referenced_data_file=d["data_file"]["file_path"])
            if part is not None:
                df["partition"] = {**df["partition"], part[0]: d["data_file"]["partition"][part[0]]}
            dv = {**src, "status": 1, "snapshot_id": snapshot_id, "sequence_number": None,
                  "file_sequence_number": None, "data_file": df}
            totals["data_bytes"] += int(d["data_file"]["file_size_in_bytes"])
            totals["deleted"] += int(df["record_count"])
            pending[0].append(d)
            pending[1].append(dv)
            for content in (0, 1):
                if len(pending[content]) >= entries_per_manifest:
                    flush(content)
        totals["dv_bytes"] += len(data)
        if log and (p + 1) % max(1, n_puffins // 10) == 0:
            log(f"  {hi:,} / {n_files:,} files cloned ({time.time() - started:.0f}s)")
    flush(0)
    flush(1)
    list_records.sort(key=lambda r: int(r.get("content") or 0))  # data manifests first, as Iceberg lists them
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
