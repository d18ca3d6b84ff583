"""Resolve a table reference (catalog name or metadata location) to Iceberg's metadata tables."""

from __future__ import annotations

import json
import os
from typing import Any, Optional


def is_location(table: str) -> bool:
    """A path or URL (a table folder or a ``*.metadata.json``) rather than a catalog name."""
    return "/" in table or "\\" in table or "://" in table


def metadata_table(spark, table: str, name: str):
    """Iceberg's metadata table ``name`` (``files``, ``delete_files``, ``position_deletes`` ...) of ``table``."""
    if is_location(table):
        return spark.read.format("iceberg").load(f"{table}#{name}")
    return spark.table(f"{table}.{name}")


def read_table(spark, table: str, snapshot_id: Optional[int] = None):
    """The table's rows (at ``snapshot_id`` if given) as a DataFrame."""
    reader = spark.read.format("iceberg")
    if snapshot_id is not None:
        reader = reader.option("snapshot-id", str(snapshot_id))
    return reader.load(table)


def current_metadata_location(spark, table: str) -> str:
    """Where the table's current ``metadata.json`` is (one tiny metadata-table query)."""
    if is_location(table):
        if table.endswith(".metadata.json"):
            return table
        hint = _read_text(os.path.join(table, "metadata", "version-hint.text")).strip()
        return os.path.join(table, "metadata", f"v{hint}.metadata.json")
    from pyspark.sql import functions as F

    row = (metadata_table(spark, table, "metadata_log_entries")
           .orderBy(F.col("timestamp").desc()).select("file").first())
    if row is None:
        raise ValueError(f"{table} has no metadata log entries")
    return row["file"]


def statistics_files(spark, table: str, storage_options: Optional[dict[str, Any]] = None) -> list[dict]:
    """The table's statistics (Puffin) files from its current metadata: path, size, snapshot."""
    meta = json.loads(_read_text(current_metadata_location(spark, table), storage_options))
    out = []
    for entry in meta.get("statistics") or []:
        path = entry.get("statistics-path")
        if path:
            out.append({"path": path, "size": entry.get("file-size-in-bytes"),
                        "snapshot_id": entry.get("snapshot-id")})
    return out


def fsspec_location(path: str) -> str:
    """A location as Iceberg/Hadoop writes it, spelled for fsspec (``file:/x`` → ``/x``, ``s3a://`` → ``s3://``)."""
    if path.startswith("file:"):
        rest = path[len("file:"):]
        return "/" + rest.lstrip("/") if rest.startswith("/") else rest
    for scheme in ("s3a://", "s3n://"):
        if path.startswith(scheme):
            return "s3://" + path[len(scheme):]
    return path


def _read_text(location: str, storage_options: Optional[dict[str, Any]] = None) -> str:
    from ..io import FileIO

    return FileIO(storage_options).read_text(fsspec_location(location))
