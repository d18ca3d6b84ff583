"""Table analyses at 10,000 / 100,000 / 1,000,000 data files (one DV each): time and peak RSS vs PyIceberg.

    python benchmarks/bench_table_scale.py [--sizes 10000,100000,1000000] [--root /tmp/pe-bench]
        [--ops card,dvs,...] [--repeat 1] [--timeout 900] [--max-rss-mb 12000] [--spark] [--spark-count-once]
        [--peer-driver-memory 12g]

The tables are derived once (cached under ``<root>/scale/``) from the Spark-written table
``bench.dv_<base>`` of ``generate_dv_table.py`` by ``scale_table.py``: every data file and DV of
the base cloned into new manifests and new Puffin files with rewritten footers.  Before any table
larger than the base is built, the first derived table is validated with this project
(``check()``: no error finding), PyIceberg (``inspect.files()`` / ``delete_files()`` row counts)
and DuckDB (``iceberg_scan`` row count with the DVs applied, against the base table's).

Every operation runs in a fresh process (niced), timed from opening the table to its answer
after the imports; its peak RSS is the process's own maximum resident set (imports included).
An operation that runs past ``--timeout`` seconds or above ``--max-rss-mb`` is stopped and
printed as such, with the time and memory it had reached.

    ours:  card (``Table.from_metadata(...)._repr_mimebundle_()``; whether it holds its Health section is
           printed: up to ``ICEBERG_CARD_HEALTH_UP_TO``, 1,000,000 data files), dvs(), delete_debt(),
           deleted_rows_per_file(), timeline(), check(), read_dvs() (every position decoded; read_dvs_columnar: the same as one Arrow table),
           health (``t.health(list_files=False)``: the doctor on the metadata alone) and health_listed (``t.health()``,
           the table location listed too)
    peer:  PyIceberg 0.12 ``inspect.files()`` (beside the card), ``inspect.delete_files()``
           (beside dvs()), and every DV read with ``pyiceberg.table.puffin`` (beside read_dvs())
    --spark: on ``local[2]`` at ``--spark-sizes`` (default 100,000): ``dv_positions(spark, table).count()``
           vs Iceberg's ``position_deletes`` count, ``pes.health(spark, table, list_files=False,
           index_on="executors")`` and ``pes.check(spark, table, compare="record_count")``, with the peak RSS of
           the driver's Python and of its JVM apart (``--spark-ops`` picks some); every session with its own 2g
           driver, and ``--peer-driver-memory`` runs the peer's count once more with that much (at 10,000,000
           files it runs out of heap with 2g).

The ratio column is peer / ours for time (> 1: ours is faster) and for memory.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

from _compiled import byte_compile  # noqa: E402 - benchmarks/ is on the path now

MB = 1024 * 1024
OURS = ["card", "dvs", "delete_debt", "deleted_rows_per_file", "timeline", "check", "read_dvs", "read_dvs_columnar",
        "health", "health_listed"]
PEER = {"card": "pyiceberg_files", "dvs": "pyiceberg_delete_files", "read_dvs": "pyiceberg_read_dvs",
        "read_dvs_columnar": "pyiceberg_read_dvs"}
PEER_LABEL = {"pyiceberg_files": "inspect.files()", "pyiceberg_delete_files": "inspect.delete_files()",
              "pyiceberg_read_dvs": "puffin reader, every DV"}
# Targets at 1,000,000 data files: (seconds, MB); read_dvs: positions' bytes + 1 GB
TARGETS_1M = {"card": (15, 1536), "dvs": (10, 1536), "delete_debt": (10, 1536), "deleted_rows_per_file": (10, 1536),
              "timeline": (10, 1536), "check": (40, 2048), "read_dvs": (None, None),
              "read_dvs_columnar": (None, None), "health": (None, None), "health_listed": (20, 1536)}


# ---------------------------------------------------------------- operations (run in the worker)

def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def _cpu_s() -> float:
    """CPU seconds of this process (every thread), less sensitive than wall time to a busy machine."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _ours(op: str, loc: str) -> dict:
    from puffin_explorer.iceberg import Table

    t = Table.from_metadata(loc)
    if op == "card":
        bundle = t._repr_mimebundle_()
        html = bundle["text/html"]
        return {"html_bytes": len(html.encode()), "health_section": "<summary>Health " in html and
                '<span class="pe-count"> not run</span>' not in html}
    if op == "dvs":
        return {"rows": len(t.dvs())}
    if op == "delete_debt":
        debt = t.delete_debt()
        # the count the card shows; debt.candidates() lists each one: deleted_rows_per_file's cost, measured there
        return {"deleted_rows": int(debt.deleted_rows), "candidates": debt.candidate_count}
    if op == "deleted_rows_per_file":
        df = t.deleted_rows_per_file()
        return {"rows": len(df), "deleted_rows": int(df["deleted_rows"].sum())}
    if op == "timeline":
        return {"rows": len(t.timeline())}
    if op == "check":
        findings = t.check()
        errors = [f for f in findings if str(getattr(f.severity, "value", f.severity)).lower() == "error"]
        return {"findings": len(findings), "errors": len(errors),
                "codes": sorted({f.code for f in findings})[:10]}
    if op == "read_dvs":
        dvs = t.read_dvs()
        positions = [dv.positions() for dv in dvs]
        return {"dvs": len(dvs), "positions": int(sum(len(p) for p in positions)),
                "positions_bytes": int(sum(p.nbytes for p in positions))}
    if op == "read_dvs_columnar":  # one Arrow table, a list of positions per DV: no object per DV
        col = t.read_dvs(arrow=True)
        values = col.column("positions")
        return {"dvs": col.num_rows, "positions": int(sum(len(c.values) for c in values.chunks)),
                "positions_bytes": int(sum(c.values.nbytes for c in values.chunks))}
    if op in ("health", "health_listed"):  # the doctor, without and with the listing of the table location
        h = t.health(list_files=op == "health_listed")
        return {"findings": len(h.findings), "deleted_rows": int(h.metrics["deleted_rows"]),
                "orphan_files": h.metrics["orphan_files"]}
    raise ValueError(f"unknown operation {op}")


def _peer(op: str, loc: str) -> dict:
    from pyiceberg.table import StaticTable

    t = StaticTable.from_metadata(loc)
    if op == "pyiceberg_files":
        return {"rows": t.inspect.files().num_rows}
    if op == "pyiceberg_delete_files":
        return {"rows": t.inspect.delete_files().num_rows}
    if op == "pyiceberg_read_dvs":
        from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
        from pyiceberg.table.puffin import PuffinFile

        import pyarrow.compute as pc

        deletes = t.inspect.delete_files()
        puffins = deletes.filter(pc.equal(deletes["file_format"].cast("string"), "PUFFIN"))
        paths = sorted(set(puffins["file_path"].to_pylist()))
        vectors = []
        for path in paths:
            with t.io.new_input(path).open() as fh:
                puffin = PuffinFile(fh.read())
            vectors.extend(dv.to_vector() for dv in deletion_vectors_from_puffin_file(puffin))
        return {"dvs": len(vectors), "positions": int(sum(len(v) for v in vectors)),
                "positions_bytes": int(sum(v.nbytes for v in vectors))}
    raise ValueError(f"unknown operation {op}")


SPARK_OPS = ["spark_dv_positions", "spark_position_deletes", "spark_health", "spark_check"]
SPARK_LABEL = {"spark_dv_positions": "pes.dv_positions().count()",
               "spark_position_deletes": "position_deletes count",
               "spark_health": 'pes.health(list_files=False, index_on="executors")',
               "spark_check": "pes.check(compare=record_count)"}


def _spark(op: str, loc: str) -> dict:
    """One Spark operation on a session started before the clock, with the session's own driver memory
    (``PE_BENCH_SPARK_DRIVER_MEMORY`` overrides it).

    Counts (ours: ``dv_positions(...).count()``; peer: Iceberg's ``position_deletes`` metadata table) run
    twice (once with ``--spark-count-once``): the first (planning included) is the time, the second, on the
    warm session, is reported beside it.  Each operation also reports the session's slowest stages.
    ``spark_health`` is the doctor without the storage listing; ``spark_check`` our decode of every DV checked
    against the manifests' record counts (the part of ``pes.check`` that is ours)."""
    from puffin_explorer import spark as pes

    conf = {"spark.sql.shuffle.partitions": "8"}
    if os.environ.get("PE_BENCH_SPARK_DRIVER_MEMORY"):
        conf["spark.driver.memory"] = os.environ["PE_BENCH_SPARK_DRIVER_MEMORY"]
    spark = pes.session(os.path.join(os.path.dirname(loc), "unused"), master="local[2]", conf=conf)
    spark.sparkContext.setLogLevel("ERROR")
    result: dict = {}
    if op in ("spark_dv_positions", "spark_position_deletes"):
        if op == "spark_dv_positions":
            frame = lambda: pes.dv_positions(spark, loc)  # noqa: E731
        else:
            frame = lambda: spark.read.format("iceberg").load(loc + "#position_deletes")  # noqa: E731
        started = time.perf_counter()
        n = frame().count()
        cold = time.perf_counter() - started
        if os.environ.get("PE_BENCH_SPARK_COUNT_ONCE") != "1":
            started = time.perf_counter()
            again = frame().count()
            result["second_s"] = round(time.perf_counter() - started, 2)
            if again != n:
                raise AssertionError(f"two counts differ: {n} then {again}")
        result["rows"] = int(n)
    elif op == "spark_health":
        started = time.perf_counter()
        h = pes.health(spark, loc, list_files=False, index_on="executors")
        cold = time.perf_counter() - started
        result.update(findings=len(h.findings), codes=sorted({f.code for f in h.findings}),
                      deleted_rows=int(h.metrics["deleted_rows"]), data_files=int(h.metrics.get("data_files", 0)))
    elif op == "spark_check":
        started = time.perf_counter()
        checked = pes.check(spark, loc, compare="record_count")
        bad = checked.where("NOT ok").count()
        cold = time.perf_counter() - started
        result.update(not_ok=int(bad))
    else:
        raise ValueError(f"unknown operation {op}")
    result.update(first_s=round(cold, 2), python_peak_mb=round(_peak_mb()), jvm_peak_mb=round(_children_peak_mb()))
    result["stages"] = _slowest_stages(spark)
    return result


def _slowest_stages(spark, top: int = 6) -> dict:
    """The session's completed stages from its own UI's REST API: how many, their summed seconds, and the slowest
    as [stage id, seconds, tasks, call site] — where a Spark operation's time went (empty when the UI is off)."""
    import re
    import urllib.request
    from datetime import datetime

    url = spark.sparkContext.uiWebUrl
    if not url:
        return {}
    try:
        with urllib.request.urlopen(f"{url}/api/v1/applications/{spark.sparkContext.applicationId}/stages"
                                    "?status=complete", timeout=30) as fh:
            stages = json.load(fh)
    except (OSError, ValueError):
        return {}

    def at(text: str) -> float:
        return datetime.strptime(text.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()

    timed = [[st["stageId"], round(at(st["completionTime"]) - at(st["submissionTime"]), 1), st.get("numTasks"),
              re.sub(r"\S*/", "", st.get("name") or "")]  # a call site's file without its folders
             for st in stages if st.get("submissionTime") and st.get("completionTime")]
    return {"stages": len(timed), "stage_s": round(sum(t[1] for t in timed), 1),
            "slowest": sorted(timed, key=lambda t: -t[1])[:top]}


def _children_peak_mb() -> float:
    """The largest VmHWM among this process's descendants (the local Spark JVM)."""
    import psutil

    best = 0.0
    for child in psutil.Process().children(recursive=True):
        best = max(best, _hwm_mb(child.pid) or 0.0)
    return best


def _validate(op: str, loc: str) -> dict:
    if op == "duckdb_count":
        import duckdb

        con = duckdb.connect()
        for ext in ("avro", "iceberg"):
            mod = __import__(f"duckdb_extension_{ext}")
            path = next(Path(mod.__file__).parent.rglob(f"{ext}.duckdb_extension"))
            con.execute(f"LOAD '{path}'")
        return {"rows": con.execute(f"SELECT count(*) FROM iceberg_scan('{loc}')").fetchone()[0]}
    raise ValueError(f"unknown operation {op}")


def _prepare(op: str) -> None:
    """Imports before the clock starts (a notebook has them already): what the operation needs, on either side
    (the card its views and matplotlib; the other operations of ours the table API and pandas; PyIceberg's its
    table and pyarrow)."""
    if op.startswith("pyiceberg"):
        import pyarrow  # noqa: F401
        from pyiceberg.table import StaticTable  # noqa: F401
    elif op.startswith("spark") or op.startswith("duckdb"):
        pass
    else:
        if op == "card":
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot  # noqa: F401

            import puffin_explorer.display  # noqa: F401
        import pandas  # noqa: F401

        from puffin_explorer.iceberg import Table  # noqa: F401


def worker(op: str, loc: str) -> int:
    _prepare(op)
    base_mb = _peak_mb()
    cpu = _cpu_s()
    started = time.perf_counter()
    if op.startswith("pyiceberg"):
        result = _peer(op, loc)
    elif op.startswith("spark"):
        result = _spark(op, loc)
        # the driver is this process and its JVM (local mode: the executors too); the JVM's CPU is not counted
        # here, so no CPU time is reported; peak_mb is the Python driver's, the JVM's is in the result
        print(json.dumps({"seconds": result["first_s"], "peak_mb": result["python_peak_mb"],
                          "imports_mb": base_mb, "result": result}))
        return 0
    elif op.startswith("duckdb"):
        result = _validate(op, loc)
    else:
        result = _ours(op, loc)
    elapsed = time.perf_counter() - started
    print(json.dumps({"seconds": elapsed, "cpu_s": _cpu_s() - cpu, "peak_mb": _peak_mb(), "imports_mb": base_mb,
                      "result": result}))
    return 0


# ---------------------------------------------------------------- the driver

def _status_mb(pid: int, field: str):
    """A memory figure of a live process from ``/proc/PID/status`` (``VmHWM``: peak RSS, ``VmRSS``: now), in MB."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _hwm_mb(pid: int):
    return _status_mb(pid, "VmHWM")


def _rss_mb(pid: int):
    return _status_mb(pid, "VmRSS")


def run_op(op: str, loc: str, timeout: float, max_rss_mb: float, env: dict | None = None) -> dict:
    """Run one operation in a fresh, niced process (``env`` added to this one's); stop it past ``timeout`` s or
    ``max_rss_mb``."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", op, loc]
    env = dict(os.environ, **(env or {}),
               PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    started = time.perf_counter()
    stopped, hwm = None, 0.0
    # output to files, not pipes: a worker that logs more than a pipe holds must not stall
    with tempfile.TemporaryFile("w+") as out_fh, tempfile.TemporaryFile("w+") as err_fh:
        proc = subprocess.Popen(cmd, stdout=out_fh, stderr=err_fh, text=True, env=env,
                                preexec_fn=lambda: os.nice(10))
        try:
            while proc.poll() is None:
                time.sleep(0.2)
                hwm = max(hwm, _hwm_mb(proc.pid) or 0.0)
                if time.perf_counter() - started > timeout:
                    stopped = "timeout"
                elif (_rss_mb(proc.pid) or 0.0) > max_rss_mb:
                    stopped = "memory"
                if stopped:
                    proc.kill()
                    break
            proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        out_fh.seek(0)
        err_fh.seek(0)
        out, err = out_fh.read(), err_fh.read()
    wall = time.perf_counter() - started
    if stopped:
        return {"op": op, "status": stopped, "seconds": wall, "peak_mb": hwm, "wall": wall}
    if proc.returncode != 0:
        lines = (err or "").strip().splitlines()
        # the JVM's own reason (a Java heap OutOfMemoryError, a task's exception) is far above Python's traceback
        cause = [x for x in lines if "java.lang." in x and ("Error" in x or "Exception" in x)][:1]
        tail = cause + lines[-3:]
        return {"op": op, "status": "error", "seconds": wall, "peak_mb": hwm, "wall": wall,
                "error": " | ".join(tail)}
    rec = json.loads(out.strip().splitlines()[-1])
    rec.update(op=op, status="ok", wall=wall)
    return rec


def best_of(op: str, loc: str, repeat: int, timeout: float, max_rss_mb: float, env: dict | None = None) -> dict:
    runs = []
    for _ in range(max(1, repeat)):
        r = run_op(op, loc, timeout, max_rss_mb, env)
        runs.append(r)
        if r["status"] != "ok":
            break
    ok = [r for r in runs if r["status"] == "ok"]
    best = dict(min(ok, key=lambda r: r["seconds"]) if ok else runs[-1])
    best["peak_mb"] = max(r["peak_mb"] for r in (ok or runs))
    return best


def _disagreement(op: str, ours, peer):
    """The counts both sides must share (DV rows, positions), when both finished; None when they agree."""
    if ours is None or peer is None or ours["status"] != "ok" or peer["status"] != "ok":
        return None
    a, b = ours["result"], peer["result"]
    if op == "dvs" and a["rows"] != b["rows"]:
        return f"{a['rows']} DVs vs {b['rows']} delete files"
    if op == "card" and b["rows"] % 2:
        return f"inspect.files() returned {b['rows']} rows, not a data file and a DV per data file"
    if op.startswith("read_dvs") and (a["dvs"], a["positions"]) != (b["dvs"], b["positions"]):
        return f"{a['dvs']} DVs / {a['positions']} positions vs {b['dvs']} / {b['positions']}"
    return None


def _fmt_s(r) -> str:
    if r is None:
        return "—"
    if r["status"] == "ok":
        return f"{r['seconds']:.2f}"
    if r["status"] == "timeout":
        return f"timeout >{r['seconds']:.0f}"
    return f"RSS cap @{r['seconds']:.0f}" if r["status"] == "memory" else f"error @{r['seconds']:.0f}"


def _fmt_cpu(r) -> str:
    return "—" if r is None or r["status"] != "ok" or "cpu_s" not in r else f"{r['cpu_s']:.2f}"


def _fmt_mb(r) -> str:
    if r is None:
        return "—"
    return f"{r['peak_mb']:,.0f}" if r["status"] == "ok" else f"≥{r['peak_mb']:,.0f}"


def _ratio(ours, peer) -> str:
    if ours is None or peer is None or ours["status"] != "ok":
        return "—"
    if peer["status"] == "error":
        return "peer failed"
    if peer["status"] != "ok":
        return f">{peer['seconds'] / ours['seconds']:.1f}x t"
    cpu = ""
    if ours.get("cpu_s") and peer.get("cpu_s"):
        cpu = f", {peer['cpu_s'] / ours['cpu_s']:.2f}x cpu"
    return f"{peer['seconds'] / ours['seconds']:.2f}x t{cpu}, {peer['peak_mb'] / ours['peak_mb']:.2f}x mem"


def _target(op: str, size: int, ours) -> str:
    if size != 1_000_000 or op not in TARGETS_1M:
        return ""
    s, mb = TARGETS_1M[op]
    if s is None and not op.startswith("read_dvs"):
        return ""  # no target of its own (the doctor's is health_listed's, with the listing)
    if op.startswith("read_dvs"):
        if ours and ours["status"] == "ok":
            limit = ours["result"]["positions_bytes"] / MB + 1024
            verdict = "met" if ours["peak_mb"] <= limit else "missed"
            return f"≤ positions + 1 GB = {limit:,.0f} MB: {verdict}"
        return "≤ positions' bytes + 1 GB"
    verdict = ""
    if ours and ours["status"] == "ok":
        verdict = ": met" if ours["seconds"] <= s and ours["peak_mb"] <= mb else ": missed"
    return f"≤ {s} s, ≤ {mb / 1024:.1f} GB{verdict}"


def _detail(r) -> str:
    if r is None:
        return ""
    if r["status"] == "error":
        return f"error: {r.get('error', '')}"
    if r["status"] != "ok":
        return f"stopped ({r['status']}) after {r['seconds']:.0f}s at ≥{r['peak_mb']:,.0f} MB"
    cpu = f"cpu {r['cpu_s']:.2f}s, " if "cpu_s" in r else ""
    return f"{r['result']}; {cpu}imports {r['imports_mb']:,.0f} MB, process {r['wall']:.1f}s"


def print_table(results: list[dict]) -> None:
    head = ["size", "operation", "ours s", "ours cpu s", "ours MB", "peer s", "peer cpu s", "peer MB", "peer/ours",
            "target at 1M"]
    rows = []
    for r in results:
        o, p = r["ours"], r["peer"]
        rows.append([f"{r['size']:,}", r["op"], _fmt_s(o), _fmt_cpu(o), _fmt_mb(o), _fmt_s(p), _fmt_cpu(p),
                     _fmt_mb(p), _ratio(o, p), _target(r["op"], r["size"], o)])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda cells: " | ".join(str(c).rjust(w) if i in (0, 2, 3, 4, 5, 6, 7) else str(c).ljust(w)  # noqa: E731
                                    for i, (c, w) in enumerate(zip(cells, widths)))
    print(line(head))
    print("-+-".join("-" * w for w in widths))
    for cells in rows:
        print(line(cells))


def table_dir(root: str, size: int, dvs_per_puffin: int, entries_per_manifest: int, base_n: int) -> str:
    suffix = "" if (dvs_per_puffin, entries_per_manifest) == (3334, 10_000) else \
        f"_p{dvs_per_puffin}_m{entries_per_manifest}"
    return os.path.join(os.path.abspath(root), "scale", f"dv_{size}_from_{base_n}{suffix}")


def validate(loc: str, size: int, base_loc: str, base_n: int, timeout: float, max_rss_mb: float) -> None:
    """This project, PyIceberg and DuckDB all read the derived table, with the base table's numbers."""
    marker = os.path.join(os.path.dirname(os.path.dirname(loc)), "_validated.json")
    if os.path.exists(marker):
        with open(marker) as fh:
            print(f"  validated before: {fh.read().strip()}")
        return
    print(f"  validating the {size:,}-file table (this project's check(), PyIceberg, DuckDB) ...", flush=True)
    checks = {op: run_op(op, loc, timeout, max_rss_mb)
              for op in ("check", "pyiceberg_files", "pyiceberg_delete_files", "duckdb_count")}
    base_count = run_op("duckdb_count", base_loc, timeout, max_rss_mb)
    bad = {op: r for op, r in {**checks, "duckdb_base": base_count}.items() if r["status"] != "ok"}
    if bad:
        raise SystemExit(f"validation could not run: {bad}")
    res = {op: r["result"] for op, r in checks.items()}
    from scale_table import expected_live_rows

    expected_rows = expected_live_rows(base_loc, size)
    problems = []
    if res["check"]["errors"]:
        problems.append(f"check(): {res['check']['errors']} error findings {res['check']['codes']}")
    if res["pyiceberg_files"]["rows"] != 2 * size:
        problems.append(f"PyIceberg inspect.files(): {res['pyiceberg_files']['rows']} rows, expected {2 * size}")
    if res["pyiceberg_delete_files"]["rows"] != size:
        problems.append(f"PyIceberg inspect.delete_files(): {res['pyiceberg_delete_files']['rows']}, expected {size}")
    if res["duckdb_count"]["rows"] != expected_rows:
        problems.append(f"DuckDB iceberg_scan: {res['duckdb_count']['rows']} rows, expected {expected_rows} "
                        "(each cloned data file's rows less its DV's positions)")
    if size % base_n == 0 and expected_rows != base_count["result"]["rows"] * (size // base_n):
        problems.append(f"DuckDB iceberg_scan of the base table: {base_count['result']['rows']} rows, "
                        f"which is not 1/{size // base_n} of the {expected_rows} expected here")
    if problems:
        raise SystemExit("the derived table does not read back: " + "; ".join(problems))
    summary = (f"check() {res['check']['findings']} findings, 0 errors; PyIceberg files() "
               f"{res['pyiceberg_files']['rows']:,} rows, delete_files() {res['pyiceberg_delete_files']['rows']:,}; "
               f"DuckDB iceberg_scan {res['duckdb_count']['rows']:,} live rows (= expected; "
               f"base table: {base_count['result']['rows']:,})")
    print(f"  {summary}", flush=True)
    with open(marker, "w") as fh:
        fh.write(summary + "\n")


def base_table(n_files: int, root: str) -> str:
    """The Spark-written table ``bench.dv_<n_files>``: built in a separate (niced) process if absent (by
    ``PE_BENCH_SPARK_PYTHON`` when set, else this interpreter), awaited if another process is building it (its
    folder exists without the completion marker)."""
    import fcntl

    from generate_dv_table import DONE_MARKER, _table_dir

    folder = _table_dir(n_files, root, 1000)
    marker = os.path.join(folder, DONE_MARKER)
    lock = folder.rstrip("/") + ".build.lock"
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    with open(lock, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        waited = 0
        while os.path.isdir(folder) and not os.path.exists(marker) and waited < 1800:
            if waited == 0:
                print(f"(another process is building {folder}; waiting)", end=" ", flush=True)
            time.sleep(10)
            waited += 10
        if not os.path.exists(marker):  # PE_BENCH_SPARK_PYTHON: an interpreter with Spark, where this one has none
            spark_python = os.environ.get("PE_BENCH_SPARK_PYTHON") or sys.executable
            subprocess.run([spark_python, str(HERE / "generate_dv_table.py"), str(n_files), root], check=True,
                           preexec_fn=lambda: os.nice(10))
    with open(marker) as fh:
        return fh.read().strip()


def main(argv=None) -> int:
    if argv is None and len(sys.argv) == 4 and sys.argv[1] == "--worker":
        return worker(sys.argv[2], sys.argv[3])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--root", default=os.environ.get("PE_BENCH_ROOT", "/tmp/pe-bench"))
    parser.add_argument("--base", type=int, default=10_000,
                        help="data files of the Spark-written base table (built by generate_dv_table if absent)")
    parser.add_argument("--ops", default=",".join(OURS),
                        help=f"our operations to run ({','.join(OURS)}); each with its PyIceberg peer if any")
    parser.add_argument("--no-peer", action="store_true", help="skip the PyIceberg operations")
    parser.add_argument("--repeat", type=int, default=1, help="fresh processes per operation; best time kept")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per operation before it is stopped")
    parser.add_argument("--max-rss-mb", type=float, default=12_000, help="an operation above this RSS is stopped")
    parser.add_argument("--dvs-per-puffin", type=int, default=3334)
    parser.add_argument("--entries-per-manifest", type=int, default=10_000)
    parser.add_argument("--validate-up-to", type=int, default=100_000,
                        help="validate every derived table up to this size (and one of this size before any larger)")
    parser.add_argument("--build-only", action="store_true", help="build and validate the tables, measure nothing")
    parser.add_argument("--spark", action="store_true", help="also the Spark operations (--spark-ops) on local[2]")
    parser.add_argument("--spark-ops", default=",".join(SPARK_OPS), help=f"of {','.join(SPARK_OPS)}")
    parser.add_argument("--spark-sizes", default="100000")
    parser.add_argument("--spark-count-once", action="store_true",
                        help="each Spark count once, not cold then warm (Iceberg's position_deletes at 10,000,000 "
                             "files takes most of an hour a count)")
    parser.add_argument("--peer-driver-memory", metavar="SIZE",
                        help="also Iceberg's position_deletes count with this spark.driver.memory (e.g. 12g): at "
                             "10,000,000 files it runs out of heap with the session's own 2g, where ours runs")
    parser.add_argument("--json", help="write every measurement to this file")
    args = parser.parse_args(argv)
    byte_compile()  # as pip does for the peers: no process of ours compiles the package again
    sizes = [int(s) for s in args.sizes.split(",") if s]
    ops = [o for o in args.ops.split(",") if o]
    spark_ops = [o if o.startswith("spark_") else "spark_" + o for o in args.spark_ops.split(",") if o]
    unknown = sorted(set(ops) - set(OURS)) + sorted(set(spark_ops) - set(SPARK_OPS))
    if unknown:
        parser.error(f"unknown operations {unknown}; known: {OURS}")
    os.nice(10)
    if args.spark_count_once:
        os.environ["PE_BENCH_SPARK_COUNT_ONCE"] = "1"  # the workers are this process's children

    from scale_table import ensure_scaled_table

    print(f"base table bench.dv_{args.base} ...", end=" ", flush=True)
    base_loc = base_table(args.base, args.root)
    print(base_loc, flush=True)

    results: list[dict] = []
    if any(size > args.validate_up_to for size in sizes):
        # a table too big to validate quickly is built only once a smaller one of the same build read back
        first = min(args.base, args.validate_up_to)
        dest = table_dir(args.root, first, args.dvs_per_puffin, args.entries_per_manifest, args.base)
        loc = ensure_scaled_table(base_loc, first, dest, args.dvs_per_puffin, args.entries_per_manifest,
                                  log=lambda m: print(m, flush=True))
        print(f"\nbefore the tables above {args.validate_up_to:,} files, the {first:,}-file one:", flush=True)
        validate(loc, first, base_loc, args.base, args.timeout, args.max_rss_mb)
    for size in sorted(sizes):
        dest = table_dir(args.root, size, args.dvs_per_puffin, args.entries_per_manifest, args.base)
        print(f"\n{size:,} data files: {dest} (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)",
              flush=True)
        loc = ensure_scaled_table(base_loc, size, dest, args.dvs_per_puffin, args.entries_per_manifest,
                                  log=lambda m: print(m, flush=True))
        if size <= args.validate_up_to:
            validate(loc, size, base_loc, args.base, args.timeout, args.max_rss_mb)
        if args.build_only:
            continue
        for op in ops:
            ours = best_of(op, loc, args.repeat, args.timeout, args.max_rss_mb)
            peer = None
            if op in PEER and not args.no_peer:
                peer = best_of(PEER[op], loc, args.repeat, args.timeout, args.max_rss_mb)
            results.append({"size": size, "op": op, "ours": ours, "peer": peer})
            disagree = _disagreement(op, ours, peer)
            if disagree:
                print(f"  !! {op}: ours and PyIceberg disagree: {disagree}", flush=True)
            print(f"  {op:22} ours {_fmt_s(ours):>10} s {_fmt_mb(ours):>8} MB   {_detail(ours)}", flush=True)
            if peer is not None:
                print(f"  {'  vs ' + PEER_LABEL[PEER[op]]:22} peer {_fmt_s(peer):>10} s {_fmt_mb(peer):>8} MB   "
                      f"{_detail(peer)}", flush=True)
        if args.spark and str(size) in args.spark_sizes.split(","):
            spark_runs, more = {}, None

            def show(label: str, r: dict) -> None:
                jvm = f"JVM {r['result']['jvm_peak_mb']:,} MB" if r["status"] == "ok" else ""
                print(f"  spark {label:32} {_fmt_s(r):>10} s  driver Python {_fmt_mb(r)} MB {jvm}   {_detail(r)}",
                      flush=True)

            for op in spark_ops:
                spark_runs[op] = best_of(op, loc, args.repeat, args.timeout, args.max_rss_mb)
                show(SPARK_LABEL[op], spark_runs[op])
            if args.peer_driver_memory and "spark_position_deletes" in spark_runs:
                # the peer again with the memory it asks for (read by its worker; ours keep the session's own)
                r = best_of("spark_position_deletes", loc, args.repeat, args.timeout, args.max_rss_mb,
                            {"PE_BENCH_SPARK_DRIVER_MEMORY": args.peer_driver_memory})
                show(f"{SPARK_LABEL['spark_position_deletes']}, driver {args.peer_driver_memory}", r)
                more = {"size": size, "op": f"spark_position_deletes ({args.peer_driver_memory} driver)",
                        "ours": spark_runs.get("spark_dv_positions"), "peer": r}
            if "spark_position_deletes" in spark_runs and "spark_dv_positions" in spark_runs:
                ours, peer = spark_runs.pop("spark_dv_positions"), spark_runs.pop("spark_position_deletes")
                results.append({"size": size, "op": "spark_dv_positions", "ours": ours, "peer": peer})
                if ours["status"] == peer["status"] == "ok" and ours["result"]["rows"] != peer["result"]["rows"]:
                    print(f"  !! spark counts disagree: {ours['result']['rows']} vs {peer['result']['rows']}",
                          flush=True)
            if more is not None:
                results.append(more)
            for op, r in spark_runs.items():
                results.append({"size": size, "op": op, "ours": r, "peer": None})

    if results:
        print()
        print_table(results)
        print("\nseconds: opening the table to the answer, after imports, best of --repeat fresh processes "
              "(cpu s: the same run's CPU time, all threads); MB: the process's peak RSS (imports included; "
              "spark_*: the first call on a started session, MB the Python driver's peak, its JVM's in the line above); "
              "peer/ours > 1: ours is faster / smaller.")
        print("targets at 1,000,000 data files: " + "; ".join(
            f"{op} ≤ {s} s and ≤ {mb / 1024:.1f} GB" for op, (s, mb) in TARGETS_1M.items() if s is not None)
            + "; read_dvs ≤ its positions' bytes + 1 GB")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
