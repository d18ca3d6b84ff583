"""Resolve a table reference (catalog name or metadata location) to Iceberg's metadata tables."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Mapping, Optional

if TYPE_CHECKING:  # pragma: no cover - the answers' types
    import pandas as pd


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


def statistics_files(spark, table: str, storage_options: Optional[dict[str, Any]] = None) -> "pd.DataFrame":
    """The table's statistics (Puffin) files from its current metadata, a row each: ``path``, ``size``,
    ``snapshot_id`` (a pandas DataFrame: a few rows read on the driver; ``attrs["table"]`` names the table)."""
    import pandas as pd

    from .._answers import tabular

    meta = json.loads(_read_text(current_metadata_location(spark, table), storage_options))
    entries = [e for e in meta.get("statistics") or [] if e.get("statistics-path")]
    return tabular(pd.DataFrame({"path": pd.array([e["statistics-path"] for e in entries], dtype=object),
                                 "size": pd.array([e.get("file-size-in-bytes") for e in entries], dtype="Int64"),
                                 "snapshot_id": pd.array([e.get("snapshot-id") for e in entries], dtype="Int64")}),
                   table=table)


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


def open_table(table: Any, storage_options: Optional[dict[str, Any]] = None,
               relocate: Optional[Mapping[str, str]] = None):
    """What the Spark functions read ``table`` through: an Iceberg table's :class:`~puffin_explorer.iceberg.source.
    TableSource`, a :class:`~puffin_explorer.DeltaTable`, or None when ``table`` is a catalog name.

    Accepts a Table (its source, shared: what it has read is reused), a TableSource, a DeltaTable, a pyiceberg
    table, a ``*.metadata.json`` location or a table folder (Iceberg, or Delta when it has only a ``_delta_log``).
    ``relocate`` adds prefixes to the table's own mapping (on a copy); ``storage_options`` opens locations.
    """
    from ..delta.table import DeltaTable
    from ..iceberg.paths import PathMapper
    from ..iceberg.source import TableSource
    from ..iceberg.table import Table

    if isinstance(table, DeltaTable):
        if relocate:  # a copy with more prefixes: the caller's table keeps its own
            import copy

            table = copy.copy(table)
            table.mapper = PathMapper(table.mapper.prefixes)
            for old, new in relocate.items():
                table.mapper.add(old, new)
            _widen(table.io, relocate)
        return table
    if isinstance(table, Table):
        table = table.source
    if isinstance(table, TableSource):
        if relocate:
            mapper = PathMapper(table.mapper.prefixes)
            for old, new in relocate.items():
                mapper.add(old, new)
            _widen(table.io, relocate)
            table = table.with_mapper(mapper)
        return table
    if hasattr(table, "metadata_location") and hasattr(table, "io"):  # a pyiceberg table
        return Table.from_pyiceberg(table, relocate=relocate, storage_options=storage_options).source
    if isinstance(table, os.PathLike):
        table = os.fspath(table)
    if not isinstance(table, str):
        raise TypeError(f"a table is a Table, a DeltaTable, a pyiceberg table, a metadata location or a catalog name, "
                        f"not {type(table).__name__}")
    if not is_location(table):
        if relocate:
            raise ValueError(f"relocate= needs a table opened by this package, not the catalog name {table!r}: "
                             "pass Table.from_metadata(..., relocate=...) or a metadata location")
        return None
    name = table.rstrip("/")
    if name.endswith((".metadata.json", ".metadata.json.gz")):
        return Table.from_metadata(name, storage_options=storage_options, relocate=relocate).source
    try:
        return Table.from_folder(name, storage_options=storage_options, relocate=relocate).source
    except Exception:
        # a folder with a Delta log (and no Iceberg metadata: a UniForm table opens as Iceberg)
        if not _has_delta_log(name, storage_options):
            raise
    return DeltaTable(name, storage_options=storage_options, relocate=relocate)


def _widen(io: Any, relocate: Mapping[str, str]) -> None:
    """The relocate targets added to the read scope of a table's I/O (where the files are now may be read)."""
    if io.scope is not None:
        io.limit_to(io.scope.widened(relocate.values()))


def _has_delta_log(folder: str, storage_options: Optional[dict[str, Any]]) -> bool:
    from ..iceberg.paths import TableIO, join

    try:
        return any(kind == "file" for _, kind, _ in TableIO(storage_options).listdir(join(folder, "_delta_log")))
    except Exception:  # no such folder: the Iceberg error above is the one to show
        return False
