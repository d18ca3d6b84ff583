"""The table doctor's time and peak memory, against iceops 0.1.0 and iceberg-meta 0.2.5 on the same tables.

    python benchmarks/bench_doctor.py [--root /tmp/pe-bench] [--peers-venv /tmp/peers-venv]

    # the peers, in a venv of their own:
    python3.11 -m venv /tmp/peers-venv && /tmp/peers-venv/bin/pip install iceops==0.1.0 iceberg-meta==0.2.5

Every run is a fresh process (the command line, as a user starts it): wall time, and peak RSS from GNU
``time`` (``%M``) around that process; each command runs ``--repeat`` times (3) and its fastest run is kept.  Tables: the 10,000-file / 10,000-DV benchmark table (built once by
``generate_dv_table.py``), the fixture warehouse's three tables, and ``./demo-warehouse`` when it exists
(``make demo`` builds it with Spark; it is skipped otherwise).  The peers take a PyIceberg catalog: a
``SqlCatalog`` on sqlite in which each table is registered (the fixture tables as relocated metadata
copies, since their metadata names ``/data/warehouse``).  They are run from their own virtualenv
(``--peers-venv``, they pin other PyIceberg versions); when absent the benchmark says "not installed"
and goes on.  Their numbers are compared with the doctor's exact ones.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE), str(ROOT / "tests")]

from _compiled import byte_compile  # noqa: E402 - benchmarks/ is on the path now
FIXTURE_WH = ROOT / "resources" / "fixtures" / "warehouse"
WRITTEN_ROOT = "/data/warehouse"
BENCH_TABLE = "bench/dv_10000/metadata/v3.metadata.json"

#: Peer number -> the doctor's metric it claims to be.
ICEOPS_DOCTOR = {"data_file_count": "data_files", "delete_file_count": "delete_files",
                 "total_data_bytes": "data_bytes", "total_delete_bytes": "delete_bytes",
                 "small_file_count": "small_files", "snapshot_count": "snapshots", "manifest_count": "manifests",
                 "delete_ratio": "deleted_share", "orphan_bytes_estimate": "orphan_bytes"}
ICEOPS_COST = {"live_bytes": "data_bytes", "stale_bytes": "bytes_only_in_expired_snapshots",
               "orphan_bytes_estimate": "orphan_bytes"}
ICEBERG_META = {"file_count": "data_files", "small_files": "small_files", "data_manifests": "data_manifests",
                "delete_manifests": "delete_manifests", "partition rows": "live_rows"}


def run_measured(cmd: list[str], env: dict | None = None, timeout: float = 1800) -> dict:
    """Run ``cmd`` in a fresh process: wall seconds, peak RSS (MiB), exit code, stdout, stderr tail.

    The peak RSS is GNU time's ``%M`` of the command: a child started straight from this (large) Python
    process would inherit its high-water mark through vfork and exec."""
    timer = shutil.which("time") or "/usr/bin/time"
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        wrapped = [timer, "-f", "%M", "-o", rss.name, *cmd] if os.path.exists(timer) else cmd
        started = time.perf_counter()
        try:
            rc = subprocess.run(wrapped, stdout=out, stderr=err, env=env, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = None
        elapsed = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        text = rss.read().strip().splitlines()
        kib = int(text[-1]) if text and text[-1].isdigit() else None
        if rc is not None and text and not text[-1].isdigit():  # GNU time notes a non-zero exit first
            kib = None
        return {"seconds": elapsed, "rss_mib": (kib / 1024) if kib is not None else float("nan"), "rc": rc,
                "stdout": out.read().decode(errors="replace"), "stderr": err.read().decode(errors="replace")[-800:]}


#: Fresh processes per command (``--repeat``); the fastest is kept, so a first run that finds the file system's
#: caches cold (ours lists every file; the peers read metadata only) does not decide the ratio.
REPEAT = [1]


def best_run(cmd: list[str], env: dict | None = None) -> dict:
    """:func:`run_measured` ``REPEAT`` times, each a fresh process; the fastest run (its peak RSS with it)."""
    runs = [run_measured(cmd, env) for _ in range(max(1, REPEAT[0]))]
    return min(runs, key=lambda r: (r["rc"] is None, r["seconds"]))


def ours(location: str, table: str | None) -> tuple[dict, dict]:
    cmd = [sys.executable, "-m", "puffin_explorer", "doctor", location, "--format", "json"]
    if table:
        cmd += ["--table", table]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = best_run(cmd, env)
    if r["rc"] not in (0, 1):
        raise SystemExit(f"doctor failed on {location}: {r['stderr']}")
    return r, json.loads(r["stdout"])[0]["metrics"]


def relocated_fixture(root: Path, name: str) -> str:
    """A copy of a fixture table's metadata whose paths point at the fixture's files; its metadata.json."""
    from _duck_engine import relocated_copy

    src = FIXTURE_WH / name.replace(".", "/") / "metadata"
    dest = root / "peers-fixture" / name.replace(".", "/")
    version = (src / "version-hint.text").read_text().strip()
    done = dest / "metadata" / f"v{version}.metadata.json"
    if done.exists():
        return str(done)
    shutil.rmtree(dest, ignore_errors=True)
    out = relocated_copy(str(src / f"v{version}.metadata.json"), {WRITTEN_ROOT: str(FIXTURE_WH)}, str(dest))
    for f in src.iterdir():  # statistics files and the like, which relocated_copy does not rewrite
        if not (dest / "metadata" / f.name).exists():
            shutil.copy(f, dest / "metadata" / f.name)
    return out


def peer_catalog(venv: Path, root: Path, tables: dict[str, str]) -> dict:
    """Register every table in a fresh sqlite SqlCatalog (with the peers' own PyIceberg); the env to reach it."""
    cat_dir = root / "peers-catalog"
    shutil.rmtree(cat_dir, ignore_errors=True)
    cat_dir.mkdir(parents=True)
    script = ("import json, sys\nfrom pyiceberg.catalog.sql import SqlCatalog\n"
              f"c = SqlCatalog('bench', uri='sqlite:///{cat_dir}/catalog.db', warehouse='file://{cat_dir}/wh')\n"
              "for ident, loc in json.loads(sys.argv[1]).items():\n"
              "    ns = ident.rsplit('.', 1)[0]\n"
              "    if (ns,) not in c.list_namespaces(): c.create_namespace(ns)\n"
              "    c.register_table(ident, loc)\n")
    subprocess.run([str(venv / "bin" / "python"), "-c", script, json.dumps(tables)], check=True)
    return dict(os.environ, PYICEBERG_CATALOG__BENCH__TYPE="sql",
                PYICEBERG_CATALOG__BENCH__URI=f"sqlite:///{cat_dir}/catalog.db",
                PYICEBERG_CATALOG__BENCH__WAREHOUSE=f"file://{cat_dir}/wh", NO_COLOR="1")


def iceberg_meta_numbers(rows: list[dict]) -> dict:
    out = {}
    for r in rows:
        if r.get("Section") == "Partitions":
            text = str(r.get("Value", ""))
            if "rows" in text:
                n = int(text.split(",", 1)[1].strip().split(" ")[0].replace(",", ""))
                out["partition rows"] = out.get("partition rows", 0) + n
        elif r.get("Metric") in ICEBERG_META:
            try:
                out[r["Metric"]] = int(str(r["Value"]).replace(",", ""))
            except ValueError:
                pass
    if "partition rows" not in out:  # unpartitioned tables print no partition rows
        out.pop("partition rows", None)
    return out


def peers(venv: Path, env: dict, ident: str) -> dict[str, tuple[dict, dict]]:
    """Each peer command's run and its numbers (keyed by the doctor's metric), or a note why not."""
    results = {}
    for label, cmd, mapping in (
            ("iceops doctor", [str(venv / "bin" / "iceops"), "doctor", ident, "-c", "bench", "--json"], ICEOPS_DOCTOR),
            ("iceops cost", [str(venv / "bin" / "iceops"), "cost", ident, "-c", "bench", "--json"], ICEOPS_COST),
            ("iceberg-meta health", [str(venv / "bin" / "iceberg-meta"), "-c", "bench", "-o", "json", "health",
                                     ident], None)):
        if not Path(cmd[0]).exists():
            results[label] = ({"note": "not installed"}, {})
            continue
        r = best_run(cmd, env)
        try:
            data = json.loads(r["stdout"])
        except ValueError:
            results[label] = ({**r, "note": f"failed (exit {r['rc']}): {r['stderr'].strip()[-200:]}"}, {})
            continue
        if mapping is None:
            nums = {ICEBERG_META[k]: (k, v) for k, v in iceberg_meta_numbers(data).items()}
        else:
            src = data.get("metrics", data)
            nums = {mine: (theirs, src[theirs]) for theirs, mine in mapping.items() if src.get(theirs) is not None}
        results[label] = (r, nums)
    return results


def report(name: str, mine_run: dict, mine: dict, peer_runs: dict) -> None:
    print(f"\n{name}")
    print(f"  puffin-explorer doctor: {mine_run['seconds']:.2f}s, peak RSS {mine_run['rss_mib']:.0f} MiB "
          f"(orphans {mine.get('orphan_files')}, files under 3 days old {mine.get('in_flight_files')}; names "
          "starting with . or _ are never orphans)")
    for label, (r, nums) in peer_runs.items():
        if "seconds" not in r:
            print(f"  {label}: {r['note']}")
            continue
        note = f" ({r['note']})" if r.get("note") else ""
        print(f"  {label}: {r['seconds']:.2f}s, peak RSS {r['rss_mib']:.0f} MiB; time ratio {label} / doctor = "
              f"{r['seconds'] / mine_run['seconds']:.2f}x{note}")
        wrong = []
        for key, (their_key, theirs) in nums.items():
            exact = mine.get(key)
            if isinstance(theirs, float) or isinstance(exact, float):
                same = exact is not None and abs(float(theirs) - float(exact)) < 5e-4
            else:
                same = theirs == exact
            shown = round(exact, 4) if isinstance(exact, float) else exact
            print(f"    {key:<32} exact {shown!s:>12}   {their_key:<20} {theirs!s:>14}  {'' if same else 'DISAGREES'}")
            if not same:
                wrong.append(key)
        print(f"    disagree: {', '.join(wrong) if wrong else 'none'}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.environ.get("PE_BENCH_ROOT", "/tmp/pe-bench"))
    parser.add_argument("--peers-venv", default=os.environ.get("PE_PEERS_VENV", "/tmp/peers-venv"))
    parser.add_argument("--skip-bench-table", action="store_true", help="only the fixture (and demo) warehouses")
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per command; the fastest is kept")
    args = parser.parse_args(argv)
    REPEAT[0] = args.repeat
    byte_compile()  # as pip does for the peers: no process of ours compiles the package again
    root, venv = Path(args.root), Path(args.peers_venv)

    tables: list[tuple[str, str, str | None, str]] = []  # (label, doctor location, --table, peer metadata.json)
    bench = root / BENCH_TABLE
    if args.skip_bench_table:
        pass
    elif bench.exists():
        tables.append(("bench.dv_10000 (10,000 data files, 10,000 DVs)", str(bench), None, str(bench)))
    else:
        print(f"{bench} not built: run benchmarks/generate_dv_table.py (Spark) first; skipped")
    for name in ("shop.orders", "shop.events", "shop.legacy"):
        tables.append((f"fixture {name}", str(FIXTURE_WH), name, relocated_fixture(root, name)))
    demo = ROOT / "demo-warehouse"
    if demo.exists():
        from puffin_explorer.iceberg import Warehouse

        wh = Warehouse(str(demo))
        for name in wh.table_names():
            tables.append((f"demo {name}", str(demo), name, wh.table(name).metadata_location))
    else:
        print("demo warehouse: ./demo-warehouse not built (`make demo` writes it with Spark); skipped")

    idents = {("bench.dv_10000" if label.startswith("bench") else
               ("demo_" if label.startswith("demo") else "") + (table or "")): peer_loc
              for label, _, table, peer_loc in tables}
    installed = (venv / "bin" / "python").exists()
    env = peer_catalog(venv, root, idents) if installed else None
    if not installed:
        print(f"iceops / iceberg-meta: not installed (no {venv}); only the doctor is timed")
    for (label, loc, table, _), ident in zip(tables, idents):
        mine_run, mine = ours(loc, table)
        runs = peers(venv, env, ident) if installed else {
            k: ({"note": "not installed"}, {}) for k in ("iceops doctor", "iceops cost", "iceberg-meta health")}
        report(label, mine_run, mine, runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
