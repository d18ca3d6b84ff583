"""Shared helpers for the warehouse tests: the fixture warehouse and ways to damage copies of it."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path
from typing import Callable

FIXTURES = Path(__file__).resolve().parents[1] / "resources" / "fixtures"
WAREHOUSE = FIXTURES / "warehouse"
WRITTEN_ROOT = "/data/warehouse"

ORDERS_SNAPSHOT = 6590999396394158857
EVENTS_SNAPSHOT = 15511898047522140
LEGACY_SNAPSHOT = 967745326372800446
ORDERS_DV_PUFFIN = "orders/data/00000-21-5bda5967-7808-4966-bb27-4f1a594d8228-00001-deletes.puffin"
ORDERS_DELETE_MANIFEST = "orders/metadata/da354e0d-4a95-484a-b518-c198966d2374-m2.avro"
ORDERS_MANIFEST_LIST = "orders/metadata/snap-6590999396394158857-1-da354e0d-4a95-484a-b518-c198966d2374.avro"
ORDERS_CURRENT_METADATA = "orders/metadata/v7.metadata.json"
ORDERS_STATS = "orders/metadata/6590999396394158857-92be345f-60f4-4aca-92b0-3d2dd0ad9bb8.stats"


def read_delete_files_csv(name: str) -> list[tuple]:
    """Spark's ``delete_files`` rows from the fixture CSV as comparable tuples."""
    with open(WAREHOUSE / name, newline="") as fh:
        return sorted(
            (r["file_path"], r["referenced_data_file"], int(r["content_offset"]),
             int(r["content_size_in_bytes"]), int(r["record_count"]))
            for r in csv.DictReader(fh))


def copy_warehouse(dest: Path) -> Path:
    """A writable copy of the fixture warehouse (the metadata still says ``/data/warehouse``)."""
    target = dest / "warehouse"
    shutil.copytree(WAREHOUSE, target)
    return target


def copy_fixture_table(fixtures: Path, name: str, tmp_path: Path) -> Path:
    """A writable copy (``tmp_path/t``) of the fixture table ``fixtures/name`` (the fixtures are read-only)."""
    dst = tmp_path / "t"
    shutil.copytree(fixtures / name, dst)
    for p in dst.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return dst


def rewrite_avro(path: Path, change: Callable[[list[dict]], list[dict]]) -> int:
    """Rewrite an Iceberg Avro file with fastavro, keeping its schema, codec and key-value metadata.

    Returns the new file length.
    """
    import fastavro

    with open(path, "rb") as fh:
        reader = fastavro.reader(fh)
        schema = reader.writer_schema
        codec = reader.codec
        meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
        records = list(reader)
    records = change(records)
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec, metadata=meta)
    path.write_bytes(buf.getvalue())
    return len(buf.getvalue())


def rewrite_orders_delete_manifest(shop: Path, change: Callable[[list[dict]], None]) -> None:
    """Change the current delete manifest of shop.orders and fix its length in the manifest list."""

    def apply(records: list[dict]) -> list[dict]:
        change(records)
        return records

    new_length = rewrite_avro(shop / ORDERS_DELETE_MANIFEST, apply)

    def fix_length(records: list[dict]) -> list[dict]:
        for r in records:
            if r["manifest_path"].endswith(Path(ORDERS_DELETE_MANIFEST).name):
                r["manifest_length"] = new_length
        return records

    rewrite_avro(shop / ORDERS_MANIFEST_LIST, fix_length)


def edit_json(path: Path, change: Callable[[dict], None]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def leave_orphans(table: Path, now_ms: int, top_level: bool = False) -> dict[str, Path]:
    """Files no snapshot references, under a copied table: an old data file (1,234 B), an old stray manifest
    (10 B), a hidden ``.crc`` file (12 B), a data file written an hour before ``now_ms`` (99 B) and, with
    ``top_level``, an old file beside the folders (7 B).  Every file but the young one is dated ten days before
    ``now_ms``, so the table's own files are as old as the orphans."""
    made = {"old": (table / "data/left-behind.parquet", b"x" * 1234),
            "young": (table / "data/being-written.parquet", b"y" * 99),
            "stray_meta": (table / "metadata/stray-m0.avro", b"z" * 10),
            "crc": (table / "data/.left-behind.parquet.crc", b"c" * 12)}  # hidden from remove_orphan_files
    if top_level:
        made["top_level"] = (table / "stray-at-the-top.txt", b"t" * 7)
    for path, data in made.values():
        path.write_bytes(data)
    young = made["young"][0]
    ten_days = (now_ms - 10 * 86_400_000) / 1000
    for p in table.rglob("*"):
        if p.is_file() and p != young:
            os.utime(p, (ten_days, ten_days))
    os.utime(young, (now_ms / 1000 - 3600, now_ms / 1000 - 3600))
    return {name: path for name, (path, _) in made.items()}
