"""A warehouse: a Hadoop-style folder of tables (local or any fsspec URL), or a pyiceberg catalog."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional

from .._answers import tabular
from .._repr import RichRepr
from ..errors import NotInTableError, PuffinError, TableNotFoundError
from .overview import summary_number
from .paths import TableIO, join, normalize
from .source import current_metadata_location, table_scope
from .table import Table

if TYPE_CHECKING:  # pragma: no cover - the answers' types
    import pandas as pd


class Warehouse(RichRepr):
    """Tables under a root folder laid out as ``<root>/<namespace...>/<table>/metadata/``.

    ``Warehouse(pyiceberg_catalog)`` lists and loads tables through that catalog instead.
    ``relocate`` maps old location prefixes to new ones for every table; a
    table whose ``location`` differs from where it was found is mapped automatically.
    Damaged table metadata is read as far as it goes, its problems in each table's
    ``findings``; ``strict=True`` raises a table's first error finding when it is opened.
    Only the warehouse's read scope is read: its storage (the same bucket, or host and port), or for a
    local folder the folder, plus the ``relocate`` targets and the ``allow`` prefixes.
    """

    def __init__(self, root: Any, storage_options: Optional[dict[str, Any]] = None,
                 relocate: Optional[Mapping[str, str]] = None, max_depth: int = 4, strict: bool = False,
                 allow: Iterable[str] = ()) -> None:
        self.relocate = dict(relocate or {})
        self.allow = [allow] if isinstance(allow, str) else list(allow or ())
        self.strict = strict
        self.max_depth = max_depth
        self._tables: dict[str, Table] = {}
        self._catalog = None
        if not isinstance(root, str) and hasattr(root, "list_namespaces") and hasattr(root, "load_table"):
            self._catalog = root
            self.root = getattr(root, "name", "catalog")
            self.io = TableIO(storage_options)
        else:
            self.root = normalize(str(root))
            self.io = TableIO(storage_options)
            self.io.limit_to(table_scope(self.root, self.root, self.relocate, self.allow))
        self._index: Optional[dict[str, str]] = None  # table name -> table folder
        self._cards: dict[str, Any] = {}

    @property
    def storage_options(self) -> dict[str, Any]:
        """The fsspec options every table of the warehouse is read with."""
        return self.io.storage_options

    # ---- discovery -----------------------------------------------------------------------
    def _discover(self) -> dict[str, str]:
        if self._index is not None:
            return self._index
        index: dict[str, str] = {}
        if self._catalog is not None:
            for ns in self._catalog.list_namespaces():
                for ident in self._catalog.list_tables(ns):
                    index[".".join(ident)] = ""
            self._index = index
            return index

        def walk(folder: str, parts: list[str], depth: int) -> None:
            entries = self.io.listdir(folder)
            names = {n for n, kind, _ in entries if kind == "directory"}
            if "metadata" in names and parts:
                meta_files = {n for n, kind, _ in self.io.listdir(join(folder, "metadata")) if kind == "file"}
                if "version-hint.text" in meta_files or any(n.endswith(".metadata.json") for n in meta_files):
                    index[".".join(parts)] = folder
                    return
            if depth >= self.max_depth:
                return
            for name in sorted(names):
                if name.startswith((".", "_")):
                    continue
                walk(join(folder, name), parts + [name], depth + 1)

        if not self.io.listdir(self.root) and not self.io.exists(self.root):
            raise TableNotFoundError(f"warehouse root {self.root} does not exist", location=self.root)
        walk(self.root, [], 0)
        self._index = index
        return index

    def refresh(self) -> None:
        """Forget what was listed and loaded."""
        self._index = None
        self._tables.clear()
        self._cards.clear()

    def table_names(self) -> list[str]:
        """Full names (``namespace.table``) of every table, sorted."""
        return sorted(self._discover())

    def namespaces(self) -> list[str]:
        """Namespaces that hold at least one table."""
        return sorted({name.rsplit(".", 1)[0] for name in self._discover() if "." in name})

    def table(self, name: str) -> Table:
        """One table by full name, e.g. ``"shop.orders"``."""
        if name in self._tables:
            return self._tables[name]
        index = self._discover()
        if name not in index:
            raise NotInTableError(f"no table {name!r} in {self.root} (tables: {', '.join(sorted(index)) or 'none'})")
        if self._catalog is not None:
            t = Table.from_pyiceberg(self._catalog.load_table(name), relocate=self.relocate,
                                     storage_options=self.io.storage_options or None, allow=self.allow)
        else:
            loc = current_metadata_location(self.io, index[name])
            t = Table.from_metadata(loc, relocate=self.relocate, name=name, io=self.io, allow=self.allow)
        if self.strict:
            t.raise_first_error()
        self._tables[name] = t
        return t

    def tables(self) -> "pd.DataFrame":
        """One row per table: name, namespace, format version, current snapshot, location written and read."""
        import pandas as pd

        rows = []
        for name in self.table_names():
            t = self.table(name)
            snap = t.metadata.snapshot()
            rows.append({
                "table": name,
                "namespace": name.rsplit(".", 1)[0] if "." in name else "",
                "format_version": t.metadata.format_version,
                "current_snapshot_id": snap.snapshot_id if snap else None,
                "snapshots": len(t.metadata.snapshots),
                "total_records": summary_number(snap.summary, "total-records") if snap else None,
                "total_data_files": summary_number(snap.summary, "total-data-files") if snap else None,
                "total_delete_files": summary_number(snap.summary, "total-delete-files") if snap else None,
                "location_written": t.metadata.location,
                "metadata_location": t.metadata_location,
            })
        return tabular(pd.DataFrame.from_records(rows), warehouse=self.root)

    def summary(self) -> "pd.DataFrame":
        """The warehouse card's data: one row per table (format version, snapshots, records, deleted and
        live rows, deleted share, data files, delete files by kind, statistics files, last commit, health).

        Reads each table's metadata file and current manifest list only. A table that cannot be
        opened is a row with ``health`` ``error`` and the reason in ``problem``.
        """
        import pandas as pd

        from .columns import int_columns
        from .overview import SUMMARY_COLUMNS, failed_row

        key = "summary"
        if key not in self._cards:
            rows = []
            for name in self.table_names():
                try:
                    rows.append(self.table(name).summary())
                except (PuffinError, OSError, ValueError, KeyError) as exc:
                    rows.append(failed_row(name, exc))
            df = pd.DataFrame.from_records(rows, columns=SUMMARY_COLUMNS)
            int_columns(df, rows, ("format_version", "snapshots", "current_snapshot_id", "records", "deleted_rows",
                        "live_rows", "data_files", "delete_files", "dvs", "position_delete_files",
                        "equality_delete_files", "stats_files"))
            self._cards[key] = df
        return tabular(self._cards[key].copy(), warehouse=self.root)

    def health(self, now: Any = None, older_than: Any = None, catalog: str = "spark_catalog",
               list_files: bool = True) -> "pd.DataFrame":
        """The table doctor over every table: one row per table (worst status, top problem, headline
        metrics); each table's :class:`~.health.TableHealth` is in ``.attrs["health"]``.
        ``list_files=False`` skips the storage listing (no orphan check; metadata and manifests only)."""
        from .health import warehouse_health

        return tabular(warehouse_health(self, now=now, older_than=older_than, catalog=catalog, list_files=list_files),
                       warehouse=self.root)

    def to_pandas(self) -> "pd.DataFrame":
        """:meth:`summary`: the warehouse card's data as a DataFrame."""
        return self.summary()

    def browse(self, spark: Any = None, spark_table: Any = None, now: Any = None) -> Any:
        """An ipywidgets browser: namespaces -> tables -> snapshots -> files -> details, and the doctor
        (every table's status, the selected table's findings; ``now`` dates retention, default the clock).

        With ``spark`` (a SparkSession) a selected data file also shows its deleted
        rows; ``spark_table(name)`` gives the identifier Spark knows a table by.
        """
        from .._repr import make_view  # the browser lives in the widgets layer, which registers it

        return make_view("browser", self, spark=spark, spark_table=spark_table, now=now)

    def __repr__(self) -> str:
        return f"Warehouse({self.root!r})"
