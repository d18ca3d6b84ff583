"""``Warehouse.browse()``: namespaces -> tables -> snapshots -> files -> detail, from core ipywidgets only."""

from __future__ import annotations

from typing import Any, Callable, Optional

from .._repr import register_maker
from .._text import plural
from ..iceberg.warehouse import Warehouse
from . import table_views as views

MAX_FILE_OPTIONS = 500  # a select list longer than this is slow in the browser and useless to scroll
KINDS = ["all", "data", "dv", "position-deletes", "equality-deletes", "stats"]


class WarehouseBrowser:
    """Drive it from Python (set ``.namespace.value``, ``.table.value`` ...) or click through it.

    ``detail.value``, ``timeline.value`` and ``chart.value`` hold the HTML shown; ``doctor.value`` the
    doctor over every table (``Warehouse.health()`` without the storage listing) and ``table_health.value``
    the selected table's (``list_storage`` adds the listing: orphan files).  ``now`` dates retention.
    ``spark`` (a SparkSession) adds the deleted rows of a selected data file;
    ``spark_table`` maps a table name to the identifier Spark knows it by (by
    default Spark loads the table from its folder).
    """

    def __init__(self, warehouse, spark: Any = None,
                 spark_table: Optional[Callable[[str], str]] = None, max_files: int = MAX_FILE_OPTIONS,
                 now: Any = None) -> None:
        import ipywidgets as w

        self.max_files = max_files
        self.warehouse = warehouse
        self.spark = spark
        self.spark_table = spark_table
        self.now = now
        self.doctor_frame = None  # Warehouse.health() as the doctor section shows it
        self._files = None
        self._busy = False
        self.namespace = w.Dropdown(description="namespace", options=warehouse.namespaces() or [""])
        self.table = w.Select(description="table", rows=5)
        self.snapshot = w.Select(description="snapshot", rows=6, layout=w.Layout(width="100%"))
        self.kind = w.ToggleButtons(description="files", options=KINDS, value="all")
        self.search = w.Text(description="filter", placeholder="part of the file path")
        self.file = w.Select(description="file", rows=10, layout=w.Layout(width="100%"))
        self.status = w.HTML()
        self.timeline = w.HTML()
        self.chart = w.HTML()
        self.per_file = w.HTML()
        self.detail = w.HTML()
        self.doctor = w.HTML()
        self.table_health = w.HTML()
        self.list_storage = w.Checkbox(description="list storage (orphan files)", value=False)
        self.refresh_button = w.Button(description="refresh", icon="refresh",
                                       tooltip="read the newest metadata of every table (writers may have committed)")
        self.widget = w.VBox([
            w.Accordion(children=[self.doctor], titles=("doctor: every table",), selected_index=0),
            w.HBox([self.namespace, self.table, self.refresh_button]), self.status,
            w.Accordion(children=[w.VBox([self.list_storage, self.table_health])], titles=("doctor: this table",)),
            w.Accordion(children=[self.timeline], titles=("snapshot timeline",)), self.snapshot,
            w.Accordion(children=[w.VBox([self.chart, self.per_file])], titles=("deleted rows per data file",),
                        selected_index=0),
            self.kind, self.search, self.file, self.detail,
        ])
        self.namespace.observe(self._on_namespace, names="value")
        self.table.observe(self._on_table, names="value")
        self.snapshot.observe(self._on_snapshot, names="value")
        self.kind.observe(self._on_filter, names="value")
        self.search.observe(self._on_filter, names="value")
        self.file.observe(self._on_file, names="value")
        self.list_storage.observe(self._on_health, names="value")
        self.refresh_button.on_click(lambda _button: self.refresh())
        self._on_doctor()
        self._on_namespace()

    # ---- state -----------------------------------------------------------------------
    @property
    def current_table(self):
        return self.warehouse.table(self.table.value) if self.table.value else None

    @property
    def files(self):
        """The files of the selected snapshot (all kinds), as the list is built from."""
        return self._files

    def _show_error(self, where: str, exc: Exception) -> None:
        self.status.value = f"<p><b>{views.esc(where)}</b>: {views.esc(type(exc).__name__)}: {views.esc(exc)}</p>"

    # ---- events ----------------------------------------------------------------------
    def _quietly(self, widget, **values) -> None:
        """Set a widget's options/value without running the handlers (a Select picks a value itself)."""
        self._busy = True
        try:
            for name, value in values.items():
                setattr(widget, name, value)
        finally:
            self._busy = False

    def _on_doctor(self) -> None:
        try:
            self.doctor_frame = self.warehouse.health(now=self.now, list_files=False)
            self.doctor.value = views.warehouse_health_html(self.doctor_frame)
        except Exception as exc:
            self.doctor.value = f"<p><b>doctor</b>: {views.esc(type(exc).__name__)}: {views.esc(exc)}</p>"

    def _on_health(self, change=None) -> None:
        try:
            t = self.current_table
            self.table_health.value = "" if t is None else views.table_health_html(
                t, now=self.now, list_files=bool(self.list_storage.value))
        except Exception as exc:
            self.table_health.value = (f"<p><b>doctor of {views.esc(self.table.value)}</b>: "
                                       f"{views.esc(type(exc).__name__)}: {views.esc(exc)}</p>")

    def _on_namespace(self, change=None) -> None:
        if self._busy:
            return
        ns = self.namespace.value
        names = [n for n in self.warehouse.table_names() if n.rsplit(".", 1)[0] == ns or (not ns and "." not in n)]
        self._quietly(self.table, options=names, value=names[0] if names else None)
        self._on_table()

    def _on_table(self, change=None) -> None:
        if self._busy:
            return
        t = None
        try:
            t = self.current_table
        except Exception as exc:
            self._show_error(f"cannot open {self.table.value}", exc)
        self._on_health()
        if t is None:
            self._quietly(self.snapshot, options=[])
            self._files = None
            self._on_filter()
            return
        self.status.value = (f"<p>{views.esc(t.name)} · format v{t.metadata.format_version} · "
                             f"{views.esc(t.metadata_location)}"
                             + "".join(f"<br><i>{views.esc(f.code)}: {views.esc(f.message)}</i>" for f in t.findings) + "</p>")
        snaps = t.snapshots()
        self.timeline.value = views.snapshots_html(t)
        try:  # each snapshot's deleted rows as the card counts them (not its summary's total)
            deleted = t.timeline().set_index("snapshot_id")["deleted_rows"].to_dict()
        except Exception:  # noqa: BLE001 - the labels then say what the commits added only
            deleted = {}
        options = [(views.snapshot_label(r, deleted.get(int(r["snapshot_id"]))), int(r["snapshot_id"]))
                   for _, r in snaps.iloc[::-1].iterrows()]
        self._quietly(self.snapshot, options=options, value=t.metadata.current_snapshot_id)
        self._on_snapshot()

    def _on_snapshot(self, change=None) -> None:
        if self._busy:
            return
        t, sid = self.current_table, self.snapshot.value
        if t is None or sid is None:
            self._files = None
            self.chart.value = self.per_file.value = ""
            self._on_filter()
            return
        try:
            self._files = views.files_frame(t, sid)
            per_file = t.deleted_rows_per_file(sid)
            fig = views.deleted_rows_figure(t, sid, per_file)
            self.chart.value = views.figure_svg(fig)
            shown = per_file[["file_path", "record_count", "deleted_rows", "deleted_share", "dvs",
                              "position_delete_files"]].sort_values("deleted_share", ascending=False)
            shown = shown.assign(deleted_share=shown.deleted_share.map("{:.1%}".format))
            self.per_file.value = views.frame_html(shown, title="per data file")
        except Exception as exc:
            self._files = None
            self._show_error(f"cannot read snapshot {sid}", exc)
        self._on_filter()

    def _on_filter(self, change=None) -> None:
        if self._busy:
            return
        df = self._files
        if df is None:
            self._quietly(self.file, options=[])
            return
        if self.kind.value != "all":
            df = df[df.kind == self.kind.value]
        if self.search.value:
            df = df[df.file_path.str.contains(self.search.value, regex=False)]
        shown = df.head(self.max_files)
        self._quietly(self.file, options=[(views.file_label(r), i) for i, r in shown.iterrows()], value=None)
        more = f" (the first {self.max_files:,} are listed: filter to narrow)" if len(df) > self.max_files else ""
        self.detail.value = f"<p><i>{plural(len(df), 'file')}{more}; select one</i></p>"

    def _on_file(self, change=None) -> None:
        if self._busy or self.file.value is None or self._files is None:
            return
        row = self._files.loc[self.file.value]
        name = self.table.value
        spark_id = self.spark_table(name) if callable(self.spark_table) else None  # else the Table itself
        self.detail.value = views.file_detail_html(self.current_table, row, self.snapshot.value,
                                                   self.spark, spark_id)

    def refresh(self) -> "WarehouseBrowser":
        """Read the warehouse again (the refresh button): the tables it now holds and each one's newest
        metadata, the doctor, and the selected table at its new current snapshot. The namespace, table
        and file kind stay selected while they exist; nothing read before is shown again."""
        namespace, table = self.namespace.value, self.table.value
        self.warehouse.refresh()
        self._on_doctor()
        namespaces = self.warehouse.namespaces() or [""]
        self._quietly(self.namespace, options=namespaces,
                      value=namespace if namespace in namespaces else namespaces[0])
        names = [n for n in self.warehouse.table_names()
                 if n.rsplit(".", 1)[0] == self.namespace.value or (not self.namespace.value and "." not in n)]
        self._quietly(self.table, options=names, value=table if table in names else (names[0] if names else None))
        self._on_table()
        return self

    # ---- selection helpers for scripts and tests -------------------------------------
    def select(self, table: Optional[str] = None, snapshot_id: Optional[int] = None,
               kind: Optional[str] = None, file: Optional[str] = None) -> "WarehouseBrowser":
        """Select by name: a table, a snapshot id, a file kind, a file (a unique part of its path)."""
        if table is not None:
            ns = table.rsplit(".", 1)[0] if "." in table else ""
            if self.namespace.value != ns:
                self.namespace.value = ns
            self.table.value = table
        if snapshot_id is not None:
            self.snapshot.value = int(snapshot_id)
        if kind is not None:
            self.kind.value = kind
        if file is not None:
            matches = [v for label, v in self.file.options
                       if file in str(self._files.loc[v, "file_path"]) or file in label]
            if len(matches) != 1:
                raise KeyError(f"{plural(len(matches), 'file', sep='')} match {file!r}")
            self.file.value = matches[0]
        return self

    def static_html(self) -> str:
        """The browser's current state as plain HTML: the warehouse card, the doctor's row per table, then
        the selected table's card (its health section at the top).

        It travels in the display bundle beside the widget, so a static export (nbconvert HTML,
        GitHub, a notebook opened without a kernel) shows the cards instead of an empty cell.
        """
        from ..display import RenderOptions, render_html

        opts = RenderOptions(now=self.now)  # the cards date retention as the doctor rows do
        parts = [render_html(self.warehouse, opts), f'<div class="pe-root">{self.doctor.value}</div>']
        try:
            t = self.current_table
        except Exception as exc:  # the card of a table that cannot be opened is its error
            t = None
            parts.append(f"<p><b>{views.esc(self.table.value)}</b>: {views.esc(type(exc).__name__)}: "
                         f"{views.esc(exc)}</p>")
        if t is not None:
            parts.append(render_html(t, opts))
        return "".join(parts)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)

    def _repr_mimebundle_(self, **kwargs):
        bundle = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        bundle["text/html"] = self.static_html()
        name = self.table.value or "no table"
        bundle["text/plain"] = f"WarehouseBrowser({self.warehouse.root!r}, table={name!r})"
        return bundle


register_maker("browser", Warehouse, WarehouseBrowser)  # Warehouse.browse() (the facade does not import widgets)
