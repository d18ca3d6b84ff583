"""Build a demo Iceberg warehouse with embedded Spark and run the tour notebooks on it.

``python -m puffin_explorer.demo`` builds (or reuses) ``./demo-warehouse``, executes
``notebooks/tour.ipynb`` and ``notebooks/warehouse.ipynb`` and writes ``out/tour.html``
and ``out/warehouse.html``.  ``python -m puffin_explorer.demo FOLDER --no-notebooks``
only builds.

Tables (Hadoop catalog, namespace ``shop``):

- ``orders``  v3, partitioned by bucket(4, customer_id): scattered deletes, an UPDATE
  (merge-on-read: DVs plus new data files), a range delete, ``compute_table_stats``.
- ``events``  v3, one data file: a range delete, a dense delete and a scattered
  delete, each commit merging the file's DV into a new one; stats for two columns.
- ``legacy``  v2 with a Parquet position-delete file (no Puffin).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import threading
import time
from typing import Callable, Optional

from .spark.session import DEFAULT_CATALOG, DEFAULT_WAREHOUSE, add_catalog, session

TABLES = ("orders", "events", "legacy")
NAMESPACE = "shop"
COMPLETE_MARKER = ".demo-complete.json"  # written last: the build finished
TOUR_NOTEBOOKS = ("tour.ipynb", "warehouse.ipynb")
DEFAULT_OUT = "out"

_V3 = ("'format-version'='3', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
       "'write.merge.mode'='merge-on-read'")

# Each step: (table, description, SQL).  {t} is the table's full name, {c} the catalog.
STEPS = [
    ("orders", "create (v3, bucket(4, customer_id))",
     f"CREATE TABLE {{t}} (order_id BIGINT, customer_id INT, amount DECIMAL(10,2), status STRING, order_date DATE) "
     f"USING iceberg PARTITIONED BY (bucket(4, customer_id)) TBLPROPERTIES ({_V3})"),
    ("orders", "insert 40,000 orders",
     "INSERT INTO {t} SELECT id, CAST(id % 997 AS INT), CAST((id % 500) + 0.99 AS DECIMAL(10,2)), 'new', "
     "date_add(DATE'2025-01-01', CAST(id % 365 AS INT)) FROM range(40000)"),
    ("orders", "scattered delete: every 13th order", "DELETE FROM {t} WHERE order_id % 13 = 0"),
    ("orders", "update: ship a tenth of the first 20,000 orders",
     "UPDATE {t} SET status = 'shipped' WHERE order_id % 10 = 3 AND order_id < 20000"),
    ("orders", "range delete: orders 30,000..30,999", "DELETE FROM {t} WHERE order_id BETWEEN 30000 AND 30999"),
    ("orders", "compute_table_stats", "CALL {c}.system.compute_table_stats(table => '{n}')"),
    ("events", "create (v3, unpartitioned)",
     f"CREATE TABLE {{t}} (event_id BIGINT, kind STRING, user_id INT, ts TIMESTAMP) USING iceberg "
     f"TBLPROPERTIES ({_V3})"),
    ("events", "insert 200,000 events in one data file",
     "INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, element_at(array('view','click','buy','share'), "
     "CAST(id % 4 + 1 AS INT)), CAST(id % 5000 AS INT), "
     "timestamp_seconds(1735689600 + id) FROM range(200000)"),
    ("events", "range delete: events 50,000..99,999", "DELETE FROM {t} WHERE event_id BETWEEN 50000 AND 99999"),
    ("events", "dense delete: odd events below 20,000", "DELETE FROM {t} WHERE event_id % 2 = 1 AND event_id < 20000"),
    ("events", "scattered delete: every 1000th event from 7", "DELETE FROM {t} WHERE event_id % 1000 = 7"),
    ("events", "compute_table_stats (kind, event_id)",
     "CALL {c}.system.compute_table_stats(table => '{n}', columns => array('kind', 'event_id'))"),
    ("legacy", "create (v2)",
     "CREATE TABLE {t} (id BIGINT, name STRING) USING iceberg TBLPROPERTIES ('format-version'='2', "
     "'write.delete.mode'='merge-on-read')"),
    ("legacy", "insert 20,000 rows in one data file",
     "INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, concat('name-', CAST(id AS STRING)) FROM range(20000)"),
    ("legacy", "delete every 10th row (Parquet position deletes)", "DELETE FROM {t} WHERE id % 10 = 0"),
]


def build_demo_warehouse(folder: str = DEFAULT_WAREHOUSE, spark=None, catalog: str = "demo_build",
                         force: bool = False, log=print) -> dict[str, str]:
    """Create the demo tables under ``folder``; return {table name: metadata location}.

    Uses ``spark`` (or :func:`puffin_explorer.spark.session`) and registers the
    folder as Hadoop catalog ``catalog`` on it.  Existing demo tables are kept
    unless ``force``.
    """
    folder = os.path.abspath(folder)
    existing = [t for t in TABLES if os.path.isdir(os.path.join(folder, NAMESPACE, t, "metadata"))]
    if existing and not force:
        raise FileExistsError(f"{folder} already holds demo tables ({', '.join(existing)}); use force=True / --force")
    marker = os.path.join(folder, COMPLETE_MARKER)
    if os.path.exists(marker):
        os.remove(marker)  # a rebuild that stops half-way must not look finished
    spark = spark or session(folder)
    add_catalog(spark, catalog, folder)
    for table in TABLES:
        spark.sql(f"DROP TABLE IF EXISTS {catalog}.{NAMESPACE}.{table} PURGE")
    started = time.time()
    for i, (table, what, sql) in enumerate(STEPS, 1):
        name = f"{catalog}.{NAMESPACE}.{table}"
        log(f"[{i:2}/{len(STEPS)}] {NAMESPACE}.{table}: {what}")
        spark.sql(sql.format(t=name, c=catalog, n=f"{NAMESPACE}.{table}")).collect()
    log(f"built in {time.time() - started:.0f}s")
    out = _metadata_locations(folder)
    with open(os.path.join(folder, COMPLETE_MARKER), "w") as fh:
        json.dump({"tables": out}, fh, indent=1)
    return out


def _metadata_locations(folder: str) -> dict[str, str]:
    out = {}
    for table in TABLES:
        meta = os.path.join(folder, NAMESPACE, table, "metadata")
        with open(os.path.join(meta, "version-hint.text")) as fh:
            out[f"{NAMESPACE}.{table}"] = os.path.join(meta, f"v{fh.read().strip()}.metadata.json")
    return out


def demo_warehouse_ready(folder: str = DEFAULT_WAREHOUSE) -> bool:
    """True when :func:`build_demo_warehouse` finished building ``folder`` (an interrupted build is not ready)."""
    folder = os.path.abspath(folder)
    return os.path.isfile(os.path.join(folder, COMPLETE_MARKER)) and all(
        os.path.isfile(os.path.join(folder, NAMESPACE, t, "metadata", "version-hint.text")) for t in TABLES)


def run_notebook(notebook: str, warehouse: str, output: Optional[str] = None, timeout: int = 600) -> str:
    """Execute ``notebook`` with ``PUFFIN_EXPLORER_WAREHOUSE`` set to ``warehouse``; return the executed copy's path.

    Inside the notebook, ``puffin_explorer.spark.session()`` then opens that warehouse
    as catalog ``wh``.  The copy goes to ``output`` (default: beside the warehouse).
    """
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(notebook, as_version=4)
    stem = os.path.splitext(os.path.basename(notebook))[0]
    output = output or os.path.join(os.path.dirname(os.path.abspath(warehouse)), f"{stem}-executed.ipynb")
    previous = os.environ.get("PUFFIN_EXPLORER_WAREHOUSE")
    os.environ["PUFFIN_EXPLORER_WAREHOUSE"] = os.path.abspath(warehouse)
    try:
        NotebookClient(nb, timeout=timeout, resources={"metadata": {"path": os.path.dirname(os.path.abspath(notebook))}}
                       ).execute()
    finally:
        if previous is None:
            os.environ.pop("PUFFIN_EXPLORER_WAREHOUSE", None)
        else:
            os.environ["PUFFIN_EXPLORER_WAREHOUSE"] = previous
        nbformat.write(nb, output)
    return output


def notebooks_folder() -> Optional[str]:
    """The ``notebooks/`` folder of a source checkout (beside the package), or ``./notebooks``; None if neither."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for candidate in (os.path.join(here, "notebooks"), os.path.abspath("notebooks")):
        if all(os.path.isfile(os.path.join(candidate, name)) for name in TOUR_NOTEBOOKS):
            return candidate
    return None


def notebook_to_html(notebook: str, warehouse: str, html_path: str, timeout: int = 600,
                     log: Callable[[str], None] = print) -> str:
    """Execute ``notebook`` (in its own folder, ``PUFFIN_EXPLORER_WAREHOUSE`` set to ``warehouse``) and
    write it as one HTML page to ``html_path``; return that path.  Prints a line per code cell.

    If a cell fails or the run is interrupted, the cells run so far are written to
    ``html_path`` with ``.partial`` before the extension, and the exception propagates
    (``KeyboardInterrupt`` for Ctrl-C, whether it stopped this process or the kernel's cell).
    """
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    nb = nbformat.read(notebook, as_version=4)
    name = os.path.basename(notebook)
    total = sum(1 for c in nb.cells if c.cell_type == "code")
    done = [0]

    interrupted = [False]

    def on_sigint(signum, frame):
        # nbclient can swallow a KeyboardInterrupt raised while it waits for the kernel, or turn it
        # into errors of its own: remember that Ctrl-C was pressed.
        interrupted[0] = True
        raise KeyboardInterrupt

    def on_cell_start(cell, cell_index):  # nbclient hook
        if interrupted[0]:
            raise KeyboardInterrupt
        if cell.cell_type == "code":
            done[0] += 1
            first = next((ln for ln in cell.source.splitlines() if ln.strip() and not ln.startswith("#")), "")
            log(f"  {name} [{done[0]:2}/{total}] {first[:70]}")

    def write(path: str) -> None:
        body, _ = HTMLExporter().from_notebook_node(nb)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(body)

    previous = os.environ.get("PUFFIN_EXPLORER_WAREHOUSE")
    os.environ["PUFFIN_EXPLORER_WAREHOUSE"] = os.path.abspath(warehouse)
    # no widget state in the page: the static export then shows the HTML each widget carries
    # (the browser's cards) instead of a widget view that needs JavaScript from the network
    client = NotebookClient(nb, timeout=timeout, on_cell_start=on_cell_start, store_widget_state=False,
                            resources={"metadata": {"path": os.path.dirname(os.path.abspath(notebook))}})
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous_handler = signal.signal(signal.SIGINT, on_sigint) if in_main_thread else None
    try:
        client.execute()
        if interrupted[0]:
            raise KeyboardInterrupt
    except BaseException as exc:
        stem, ext = os.path.splitext(html_path)
        write(f"{stem}.partial{ext}")
        if interrupted[0] or _interrupted_by_user(exc):
            raise KeyboardInterrupt from None
        raise
    finally:
        if previous_handler is not None:
            signal.signal(signal.SIGINT, previous_handler)
        if previous is None:
            os.environ.pop("PUFFIN_EXPLORER_WAREHOUSE", None)
        else:
            os.environ["PUFFIN_EXPLORER_WAREHOUSE"] = previous
    write(html_path)
    return html_path


def _interrupted_by_user(exc: BaseException) -> bool:
    """Ctrl-C anywhere in the chain: in this process, or in the kernel (a cell failing with KeyboardInterrupt)."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, KeyboardInterrupt) or getattr(exc, "ename", None) == "KeyboardInterrupt":
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def _build(args) -> Optional[dict[str, str]]:
    """Build the warehouse (or reuse a finished one); None when it failed (the error is printed)."""
    from .spark.session import SparkSetupError

    folder = os.path.abspath(args.folder)
    if demo_warehouse_ready(folder) and not args.force:
        print(f"reusing the demo warehouse in {folder} (--force rebuilds it)")
        return _metadata_locations(folder)
    spark = started = None
    try:
        print(f"building the demo warehouse in {folder} with an embedded Spark ...")
        try:
            from pyspark.sql import SparkSession

            active = SparkSession.getActiveSession()
        except ImportError:
            active = None  # session() says what to install
        spark = session(args.folder, args.catalog, master=args.master)
        started = spark if active is None else None
        spark.sparkContext.setLogLevel("ERROR")
        return build_demo_warehouse(args.folder, spark, catalog=args.catalog, force=args.force)
    except FileExistsError as exc:
        print(f"error: {exc} (an earlier build did not finish)", file=sys.stderr)
    except SparkSetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
    finally:
        if started is not None and args.notebooks:
            started.stop()  # the notebooks start their own; free the cores and memory
    return None


def _interrupted(pages: list[str], partial: str) -> int:
    print("\ninterrupted; written so far: " + ", ".join(pages + ([partial] if os.path.exists(partial) else [])),
          file=sys.stderr)
    return 130


def run(args) -> int:
    """Build (or reuse) the warehouse and run the notebooks as ``args`` say; returns the exit code."""
    args.notebooks = args.notebooks and not args.notebook
    try:
        tables = _build(args)
    except KeyboardInterrupt:
        print("\ninterrupted: the warehouse is incomplete; run again with --force", file=sys.stderr)
        return 130
    if tables is None:
        return 2
    if args.notebook:
        try:
            print(f"running {args.notebook} against the warehouse ...")
            print(f"executed notebook: {run_notebook(args.notebook, args.folder)}")
        except Exception as exc:  # a failing cell: say which, keep the partial output written
            print(f"error: the notebook failed: {str(exc).strip().splitlines()[-1][:500]}", file=sys.stderr)
            return 1
    pages: list[str] = []
    if args.notebooks:
        try:
            import nbclient  # noqa: F401
            import nbconvert  # noqa: F401
        except ImportError as exc:
            print(f"error: running the tour notebooks needs nbclient, nbconvert and ipykernel ({exc}): "
                  "pip install 'puffin-explorer[dev]', or pass --no-notebooks", file=sys.stderr)
            return 2
        folder = notebooks_folder()
        if folder is None:
            print("error: notebooks/tour.ipynb and notebooks/warehouse.ipynb not found (run from a source checkout, "
                  "or pass --no-notebooks)", file=sys.stderr)
            return 2
        for name in TOUR_NOTEBOOKS:
            html_path = os.path.join(os.path.abspath(args.out), os.path.splitext(name)[0] + ".html")
            print(f"running notebooks/{name} ...")
            partial = "{}.partial{}".format(*os.path.splitext(html_path))
            try:
                pages.append(notebook_to_html(os.path.join(folder, name), args.folder, html_path))
            except KeyboardInterrupt:
                return _interrupted(pages, partial)
            except Exception as exc:  # a failing cell: say which, keep the partial page written
                lines = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip().splitlines() or [type(exc).__name__]
                print(f"error: {name} failed: {lines[-1][:500]}\n  the cells run so far: {partial}", file=sys.stderr)
                return 1
            print(f"  wrote {html_path}")
    print(f"\ndemo warehouse: {os.path.abspath(args.folder)}")
    for name, location in tables.items():
        print(f"  {args.catalog}.{name:<14} {location}")
    print("\nfrom puffin_explorer import spark as pes\n"
          f"spark = pes.session({os.path.abspath(args.folder)!r}, catalog={args.catalog!r})\n"
          f"pes.check(spark, '{args.catalog}.shop.orders').show()")
    if pages:
        print("\nopen the tour:")
        for page in pages:
            print(f"  file://{page}")
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", nargs="?", default=DEFAULT_WAREHOUSE,
                        help=f"where to build the warehouse (default ./{DEFAULT_WAREHOUSE}); a finished one is reused")
    parser.add_argument("--catalog", default=DEFAULT_CATALOG, help="Spark catalog name for it (default wh)")
    parser.add_argument("--master", default="local[*]", help="Spark master for an embedded session")
    parser.add_argument("--force", action="store_true", help="drop and rebuild existing demo tables")
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"folder for the HTML pages (default ./{DEFAULT_OUT})")
    parser.add_argument("--no-notebooks", dest="notebooks", action="store_false",
                        help="only build the warehouse; do not run the tour notebooks")
    parser.add_argument("--notebook", help="instead of the tour, execute this notebook with PUFFIN_EXPLORER_WAREHOUSE "
                                           "set to the warehouse (the executed copy, NAME-executed.ipynb, is "
                                           "written beside it)")


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m puffin_explorer.demo", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
