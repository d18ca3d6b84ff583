"""Derive, from a table built by ``generate_dv_table`` (Spark + Iceberg), the same table with its
delete manifest split into many manifests, and every location rewritten under a new prefix.

    from derive_many_manifests import derive
    meta = derive("/tmp/pe-bench/bench/dv_10000/metadata/v3.metadata.json", "/tmp/pe-bench/m1000",
                  manifests=1000)                      # local
    meta = derive(..., "/tmp/pe-bench/m1000-s3", manifests=1000,
                  prefix="s3://bucket/m1000")          # metadata that names s3:// locations

Manifests are rewritten with fastavro using each file's own Avro schema (field ids kept) and
key-value metadata, so PyIceberg and this project read them as Iceberg wrote them.  Only the current
snapshot is kept.  The Puffin and data files are not copied: their paths are rewritten, so the
caller puts them under ``prefix`` (or leaves them where they are for a local run).
"""

from __future__ import annotations

import json
import os
import uuid


def _read_avro(path: str):
    import fastavro

    with open(path, "rb") as fh:
        reader = fastavro.reader(fh)
        meta = dict(reader.metadata)
        return meta, list(reader)


def _write_avro(path: str, meta: dict, records: list) -> int:
    import fastavro

    schema = json.loads(meta["avro.schema"])
    with open(path, "wb") as fh:
        fastavro.writer(fh, schema, records, codec=meta.get("avro.codec", "null"),
                        metadata={k: v for k, v in meta.items() if not k.startswith("avro.")})
    return os.path.getsize(path)


def _move(value: str, old: str, new: str) -> str:
    for scheme in ("file:", ""):
        if value.startswith(scheme + old):
            return new + value[len(scheme + old):]
    return value


def derive(src_metadata: str, dest_root: str, manifests: int = 1000, prefix: str = "") -> str:
    """Write the derived table under ``dest_root`` (``metadata/`` only); return its metadata file.

    ``prefix`` is the table location the metadata names (default: ``dest_root``, and then the data
    and Puffin files keep their paths); with a ``prefix`` the data and Puffin files are named under
    it, where the source table had them.
    """
    done = os.path.join(dest_root, "metadata", "v1.metadata.json")
    if os.path.exists(done):
        return done
    with open(src_metadata) as fh:
        meta = json.load(fh)
    old_root = meta["location"].rstrip("/")
    if old_root.startswith("file:"):
        old_root = old_root[len("file:"):]
    data_prefix = prefix.rstrip("/") if prefix else old_root
    prefix = (prefix or dest_root).rstrip("/")
    snap = next(s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"])
    out_dir = os.path.join(dest_root, "metadata")
    os.makedirs(out_dir, exist_ok=True)
    ml_meta, ml_records = _read_avro(_move(snap["manifest-list"], old_root, old_root))
    new_list = []
    for m in ml_records:
        m_meta, entries = _read_avro(_move(m["manifest_path"], old_root, old_root))
        for e in entries:
            df = e["data_file"]
            df["file_path"] = _move(df["file_path"], old_root, data_prefix)
            if df.get("referenced_data_file"):
                df["referenced_data_file"] = _move(df["referenced_data_file"], old_root, data_prefix)
        parts = manifests if m.get("content") == 1 else 1
        size = -(-len(entries) // parts)
        for i in range(parts):
            chunk = entries[i * size:(i + 1) * size]
            if not chunk:
                continue
            name = f"{uuid.uuid4()}-m{i}.avro"
            length = _write_avro(os.path.join(out_dir, name), m_meta, chunk)
            rec = dict(m)
            rec.update(manifest_path=f"{prefix}/metadata/{name}", manifest_length=length,
                       added_files_count=sum(1 for e in chunk if e["status"] == 1),
                       existing_files_count=sum(1 for e in chunk if e["status"] == 0),
                       deleted_files_count=sum(1 for e in chunk if e["status"] == 2),
                       added_rows_count=sum(e["data_file"]["record_count"] for e in chunk if e["status"] == 1),
                       existing_rows_count=sum(e["data_file"]["record_count"] for e in chunk if e["status"] == 0),
                       deleted_rows_count=sum(e["data_file"]["record_count"] for e in chunk if e["status"] == 2))
            new_list.append(rec)
    list_name = f"snap-{snap['snapshot-id']}-1-{uuid.uuid4()}.avro"
    _write_avro(os.path.join(out_dir, list_name), ml_meta, new_list)
    snap = dict(snap, **{"manifest-list": f"{prefix}/metadata/{list_name}"})
    snap.pop("parent-snapshot-id", None)
    meta.update({"location": prefix, "snapshots": [snap], "statistics": [], "partition-statistics": [],
                 "snapshot-log": [{"timestamp-ms": snap["timestamp-ms"], "snapshot-id": snap["snapshot-id"]}],
                 "metadata-log": [],
                 "refs": {"main": {"snapshot-id": snap["snapshot-id"], "type": "branch"}}})
    tmp = done + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(meta, fh)
    with open(os.path.join(out_dir, "version-hint.text"), "w") as fh:
        fh.write("1")
    os.replace(tmp, done)
    return done
