"""Write Iceberg v3 metadata for a Delta table with DVs, the way Delta UniForm (IcebergCompatV3) does.

No public UniForm sample exists, so this writer builds one from any Delta table
this project can read: a ``metadata/v1.metadata.json``, a manifest list and two
manifests (fastavro), all beside the Delta log.  Data files keep their Parquet
files; each DV entry is ``file_format`` PUFFIN with ``file_path`` the Delta
``deletion_vector_<uuid>.bin`` file, ``content_offset`` the descriptor's
``offset`` and ``content_size_in_bytes`` its ``sizeInBytes + 8`` (the size field
and the CRC around magic + bitmap): the bytes there are a ``deletion-vector-v1``
blob, but the file has no Puffin magic and no footer.
"""

from __future__ import annotations

import io
import json
import os
import uuid
from typing import Optional

SNAPSHOT_ID = 4242424242424242
_TYPES = {"integer": "int", "long": "long", "string": "string", "double": "double", "float": "float",
          "boolean": "boolean", "date": "date", "timestamp": "timestamptz", "binary": "binary", "short": "int",
          "byte": "int"}


def _map(key_id: int, value_id: int, value_type: str, name: str) -> dict:
    return ["null", {"type": "array", "logicalType": "map", "items": {
        "type": "record", "name": name, "fields": [
            {"name": "key", "type": "int", "field-id": key_id},
            {"name": "value", "type": value_type, "field-id": value_id}]}}]


DATA_FILE = {"type": "record", "name": "r2", "fields": [
    {"name": "content", "type": "int", "field-id": 134},
    {"name": "file_path", "type": "string", "field-id": 100},
    {"name": "file_format", "type": "string", "field-id": 101},
    {"name": "partition", "type": {"type": "record", "name": "r102", "fields": []}, "field-id": 102},
    {"name": "record_count", "type": "long", "field-id": 103},
    {"name": "file_size_in_bytes", "type": "long", "field-id": 104},
    {"name": "value_counts", "type": _map(119, 120, "long", "k119_v120"), "default": None, "field-id": 109},
    {"name": "null_value_counts", "type": _map(121, 122, "long", "k121_v122"), "default": None, "field-id": 110},
    {"name": "first_row_id", "type": ["null", "long"], "default": None, "field-id": 142},
    {"name": "referenced_data_file", "type": ["null", "string"], "default": None, "field-id": 143},
    {"name": "content_offset", "type": ["null", "long"], "default": None, "field-id": 144},
    {"name": "content_size_in_bytes", "type": ["null", "long"], "default": None, "field-id": 145},
]}
MANIFEST_ENTRY = {"type": "record", "name": "manifest_entry", "fields": [
    {"name": "status", "type": "int", "field-id": 0},
    {"name": "snapshot_id", "type": ["null", "long"], "default": None, "field-id": 1},
    {"name": "sequence_number", "type": ["null", "long"], "default": None, "field-id": 3},
    {"name": "file_sequence_number", "type": ["null", "long"], "default": None, "field-id": 4},
    {"name": "data_file", "type": DATA_FILE, "field-id": 2},
]}
MANIFEST_FILE = {"type": "record", "name": "manifest_file", "fields": [
    {"name": "manifest_path", "type": "string", "field-id": 500},
    {"name": "manifest_length", "type": "long", "field-id": 501},
    {"name": "partition_spec_id", "type": "int", "field-id": 502},
    {"name": "content", "type": "int", "field-id": 517},
    {"name": "sequence_number", "type": "long", "field-id": 515},
    {"name": "min_sequence_number", "type": "long", "field-id": 516},
    {"name": "added_snapshot_id", "type": "long", "field-id": 503},
    {"name": "added_files_count", "type": "int", "field-id": 504},
    {"name": "existing_files_count", "type": "int", "field-id": 505},
    {"name": "deleted_files_count", "type": "int", "field-id": 506},
    {"name": "added_rows_count", "type": "long", "field-id": 512},
    {"name": "existing_rows_count", "type": "long", "field-id": 513},
    {"name": "deleted_rows_count", "type": "long", "field-id": 514},
    {"name": "first_row_id", "type": ["null", "long"], "default": None, "field-id": 520},
]}


def _avro(path: str, schema: dict, records: list, meta: dict) -> int:
    import fastavro

    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, metadata=meta)
    with open(path, "wb") as fh:
        fh.write(buf.getvalue())
    return len(buf.getvalue())


def write_iceberg_table(root: str, schema_fields: list[dict], data_files: list[dict], delete_files: list[dict],
                        next_row_id: Optional[int] = None, delete_manifest_first_row_id: Optional[int] = None,
                        properties: Optional[dict] = None) -> str:
    """Write one snapshot of an Iceberg v3 table under ``root/metadata`` and return its metadata.json path.

    ``data_files``: dicts with ``file_path``, ``record_count``, ``file_size_in_bytes``;
    ``delete_files``: dicts with ``file_path``, ``file_format`` (PUFFIN or PARQUET), ``record_count``,
    ``file_size_in_bytes`` and, for DVs, ``referenced_data_file``, ``content_offset``, ``content_size_in_bytes``.
    """
    root = os.path.abspath(root)
    meta_dir = os.path.join(root, "metadata")
    os.makedirs(meta_dir, exist_ok=True)
    schema = {"type": "struct", "schema-id": 0, "fields": schema_fields}
    common = {"schema": json.dumps(schema), "schema-id": "0", "partition-spec": "[]", "partition-spec-id": "0",
              "format-version": "3"}

    def entry(content: int, f: dict) -> dict:
        return {"status": 1, "snapshot_id": None, "sequence_number": None, "file_sequence_number": None,
                "data_file": {"content": content, "file_path": f["file_path"],
                              "file_format": f.get("file_format", "PARQUET"), "partition": {},
                              "record_count": int(f["record_count"]),
                              "file_size_in_bytes": int(f["file_size_in_bytes"]), "value_counts": None,
                              "null_value_counts": None, "first_row_id": None,
                              "referenced_data_file": f.get("referenced_data_file"),
                              "content_offset": f.get("content_offset"),
                              "content_size_in_bytes": f.get("content_size_in_bytes")}}

    data_entries = [entry(0, f) for f in data_files]
    dv_entries = [entry(1, f) for f in delete_files]
    tag = uuid.uuid5(uuid.NAMESPACE_URL, root).hex[:8]
    data_m = os.path.join(meta_dir, f"{tag}-data-m0.avro")
    dels_m = os.path.join(meta_dir, f"{tag}-deletes-m0.avro")
    records = sum(int(f["record_count"]) for f in data_files)
    data_len = _avro(data_m, MANIFEST_ENTRY, data_entries, {**common, "content": "data"})
    manifests = []

    def manifest_file(path, length, content, entries, rows, first_row_id):
        return {"manifest_path": path, "manifest_length": length, "partition_spec_id": 0, "content": content,
                "sequence_number": 1, "min_sequence_number": 1, "added_snapshot_id": SNAPSHOT_ID,
                "added_files_count": len(entries), "existing_files_count": 0, "deleted_files_count": 0,
                "added_rows_count": rows, "existing_rows_count": 0, "deleted_rows_count": 0,
                "first_row_id": first_row_id}

    manifests.append(manifest_file(data_m, data_len, 0, data_entries, records, 0))
    if dv_entries:
        dels_len = _avro(dels_m, MANIFEST_ENTRY, dv_entries, {**common, "content": "deletes"})
        manifests.append(manifest_file(dels_m, dels_len, 1, dv_entries, 0, delete_manifest_first_row_id))
    mlist = os.path.join(meta_dir, f"snap-{SNAPSHOT_ID}-1-{tag}.avro")
    _avro(mlist, MANIFEST_FILE, manifests,
          {"snapshot-id": str(SNAPSHOT_ID), "sequence-number": "1", "format-version": "3", "first-row-id": "0"})
    deleted = sum(int(f["record_count"]) for f in delete_files)
    dvs = sum(1 for f in delete_files if str(f.get("file_format", "")).upper() == "PUFFIN")
    snapshot = {"snapshot-id": SNAPSHOT_ID, "sequence-number": 1, "timestamp-ms": 1700000002000,
                "manifest-list": mlist, "schema-id": 0, "first-row-id": 0, "added-rows": records,
                "summary": {"operation": "append", "added-data-files": str(len(data_entries)),
                            "added-records": str(records), "added-delete-files": str(len(dv_entries)),
                            "added-dvs": str(dvs), "added-position-deletes": str(deleted),
                            "total-data-files": str(len(data_entries)), "total-delete-files": str(len(dv_entries)),
                            "total-records": str(records), "total-position-deletes": str(deleted),
                            "total-equality-deletes": "0"}}
    metadata = {"format-version": 3, "table-uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, root)), "location": root,
                "last-sequence-number": 1, "last-updated-ms": 1700000002000,
                "last-column-id": max(f["id"] for f in schema_fields),
                "current-schema-id": 0, "schemas": [schema], "default-spec-id": 0,
                "partition-specs": [{"spec-id": 0, "fields": []}], "last-partition-id": 999,
                "default-sort-order-id": 0, "sort-orders": [{"order-id": 0, "fields": []}],
                "properties": dict(properties or {}), "current-snapshot-id": SNAPSHOT_ID,
                "snapshots": [snapshot], "snapshot-log": [{"snapshot-id": SNAPSHOT_ID, "timestamp-ms": 1700000002000}],
                "metadata-log": [], "refs": {"main": {"snapshot-id": SNAPSHOT_ID, "type": "branch"}},
                "next-row-id": records if next_row_id is None else next_row_id}
    path = os.path.join(meta_dir, "v1.metadata.json")
    with open(path, "w") as fh:
        json.dump(metadata, fh, indent=1)
    with open(os.path.join(meta_dir, "version-hint.text"), "w") as fh:
        fh.write("1")
    return path


def write_uniform_metadata(delta_root: str, offset_shift: Optional[dict] = None) -> str:
    """Write Iceberg v3 metadata for the Delta table at ``delta_root`` (latest version); returns the
    metadata.json path.  ``offset_shift`` ({data file name: bytes}) moves DV entries off their DV, for tests."""
    from puffin_explorer import DeltaTable

    t = DeltaTable(delta_root)
    delta_schema = json.loads(t.metadata["schemaString"])
    fields = [{"id": i + 1, "name": f["name"], "required": not f.get("nullable", True),
               "type": _TYPES.get(f["type"], "string")} for i, f in enumerate(delta_schema["fields"])]
    data = [{"file_path": f.location, "record_count": int(f.num_records), "file_size_in_bytes": int(f.size_in_bytes)}
            for f in t.files().itertuples()]
    dvs = [{"file_path": d.dv_file, "file_format": "PUFFIN", "record_count": int(d.cardinality),
            "file_size_in_bytes": os.path.getsize(d.dv_file), "referenced_data_file": d.location,
            "content_offset": int(d.offset) + (offset_shift or {}).get(d.data_file, 0),
            "content_size_in_bytes": int(d.size_in_bytes) + 8} for d in t.dvs().itertuples()]
    return write_iceberg_table(delta_root, fields, data, dvs, properties={"delta.enableIcebergCompatV3": "true"})
