"""DuckDB with its iceberg extension, as a second engine to cross-check live row counts.

The extension files come from the ``duckdb-extension-avro`` / ``duckdb-extension-iceberg``
wheels and are loaded by path (no download).  DuckDB's ``iceberg_scan`` reads the
paths written in the metadata; ``allow_moved_paths`` remaps data files but not
delete files, so a moved table is given to DuckDB as a copy of its metadata with
every path rewritten (data, delete and Puffin files stay where they are).
"""

from __future__ import annotations

import glob
import io
import json
import os
from typing import Mapping, Optional

import importlib


def _extension(module_name: str, name: str) -> str:
    mod = importlib.import_module(module_name)
    found = glob.glob(os.path.join(os.path.dirname(mod.__file__), "extensions", "*", f"{name}.duckdb_extension"))
    if not found:
        raise RuntimeError(f"{module_name} ships no {name}.duckdb_extension")
    return found[0]


def extension_version() -> tuple[int, ...]:
    """The installed ``duckdb-extension-iceberg`` release, as numbers."""
    from importlib.metadata import version

    return tuple(int(part) for part in version("duckdb-extension-iceberg").split(".")[:3] if part.isdigit())


def skip_before(release: tuple[int, ...], why: str) -> None:
    """Skip the calling test when the installed iceberg extension is older than ``release``, saying ``why``."""
    import pytest

    found = extension_version()
    if found < release:
        pytest.skip(f"DuckDB's iceberg extension {'.'.join(map(str, found))} is older than "
                    f"{'.'.join(map(str, release))}: {why}")


def connect():
    """A DuckDB connection with the avro and iceberg extensions loaded; skips the calling test where the iceberg
    extension reads no Iceberg v3 (every table these tests give DuckDB is v3)."""
    import duckdb

    skip_before((1, 3, 2), '1.3.2 is the first that reads Iceberg v3 tables (1.3.1: "Iceberg version > 2 is not '
                           'supported yet")')
    con = duckdb.connect()
    con.execute(f"LOAD '{_extension('duckdb_extension_avro', 'avro')}'")
    con.execute(f"LOAD '{_extension('duckdb_extension_iceberg', 'iceberg')}'")
    return con


def live_rows(con, metadata_json: str, snapshot_id: Optional[int] = None) -> int:
    """``count(*)`` of ``iceberg_scan`` at the current (or the given) snapshot."""
    extra = f", snapshot_from_id={int(snapshot_id)}" if snapshot_id is not None else ""
    return int(con.execute(f"select count(*) from iceberg_scan('{metadata_json}'{extra})").fetchone()[0])


def _rewrite(value, fn):
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, bytes):
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            return value
        new = fn(text)
        return new.encode("utf-8") if new != text else value
    if isinstance(value, dict):
        return {k: _rewrite(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_rewrite(v, fn) for v in value]
    return value


def relocated_copy(metadata_json: str, relocate: Mapping[str, str], dest: str) -> str:
    """A copy of a table's metadata (metadata.json, manifest lists, manifests) under ``dest/metadata`` whose
    paths point where the files are now; returns the copied metadata.json."""
    import fastavro

    meta = json.loads(open(metadata_json, "rb").read())
    old_root = meta["location"].rstrip("/")
    out_dir = os.path.join(dest, "metadata")
    os.makedirs(out_dir, exist_ok=True)

    def moved(path: str) -> str:
        if path.startswith(old_root + "/metadata/"):
            return os.path.join(out_dir, path.rsplit("/", 1)[-1])
        for old, new in sorted(relocate.items(), key=lambda kv: -len(kv[0])):
            if path.startswith(old.rstrip("/") + "/"):
                return new.rstrip("/") + path[len(old.rstrip("/")):]
        return path

    def local(path: str) -> str:  # where to read a metadata file from now
        for old, new in sorted(relocate.items(), key=lambda kv: -len(kv[0])):
            if path.startswith(old.rstrip("/") + "/"):
                return new.rstrip("/") + path[len(old.rstrip("/")):]
        return path

    def copy_avro(path: str, records_fn=None) -> int:
        with open(local(path), "rb") as fh:
            reader = fastavro.reader(fh)
            schema, md = reader.writer_schema, dict(reader.metadata)
            records = [_rewrite(r, moved) for r in reader]
        if records_fn:
            records = records_fn(records)
        md = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in md.items() if not k.startswith("avro.")}
        buf = io.BytesIO()
        fastavro.writer(buf, fastavro.parse_schema(schema), records, metadata=md)
        with open(moved(path), "wb") as fh:
            fh.write(buf.getvalue())
        return len(buf.getvalue())

    def copy_position_deletes(records):
        """Parquet position-delete files name data files by path: copy them with the paths rewritten."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        for r in records:
            df = r["data_file"]
            if df.get("content") == 1 and str(df.get("file_format")).upper() == "PARQUET":
                t = pq.read_table(df["file_path"])
                paths = pa.array([moved(x) for x in t.column("file_path").to_pylist()], pa.string())
                t = t.set_column(t.schema.get_field_index("file_path"), t.schema.field("file_path"), paths)
                target = os.path.join(dest, "deletes", df["file_path"].rsplit("/", 1)[-1])
                os.makedirs(os.path.dirname(target), exist_ok=True)
                pq.write_table(t, target)
                df["file_path"], df["file_size_in_bytes"] = target, os.path.getsize(target)
        return records

    lengths: dict[str, int] = {}
    for snap in meta.get("snapshots", []):
        with open(local(snap["manifest-list"]), "rb") as fh:
            for m in fastavro.reader(fh):
                if m["manifest_path"] not in lengths:
                    lengths[m["manifest_path"]] = copy_avro(m["manifest_path"], copy_position_deletes)

        def fix_lengths(records):
            for r in records:
                r["manifest_length"] = os.path.getsize(r["manifest_path"])
            return records

        copy_avro(snap["manifest-list"], fix_lengths)
    new_meta = _rewrite(meta, moved)
    new_meta["location"] = dest
    out = os.path.join(out_dir, os.path.basename(metadata_json))
    with open(out, "w") as fh:
        json.dump(new_meta, fh)
    return out
