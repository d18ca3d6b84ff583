"""Driver memory and time of the table doctor: ``t.health()`` on the driver against ``pes.health(spark, t)``.

One fresh Python process per setting; the table's metadata file is given on the command line.  Prints the
driver Python process's peak RSS (``ru_maxrss``) before the call (table opened, and for Spark the embedded
session started) and after it, the time, and whether both give the same ``to_dict()``.

    nice -n 10 python benchmarks/bench_spark_health.py /tmp/pe-bench/clone_100k/metadata/v1.metadata.json
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

NOW = "2026-11-28T00:00:00Z"


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one(metadata: str, mode: str, master: str) -> dict:
    """Run in this process: open, run the doctor, measure."""
    from puffin_explorer import Table

    spark = None
    if mode == "spark":
        from puffin_explorer import spark as pes

        spark = pes.session(master=master, iceberg=False, conf={"spark.driver.memory": "4g"})
        spark.sparkContext.setLogLevel("ERROR")
    table = Table.from_metadata(metadata)
    before = _peak_mib()
    t = time.perf_counter()
    h = pes.health(spark, table, now=NOW, index_on="executors") if spark is not None else table.health(now=NOW)
    seconds = time.perf_counter() - t
    out = {"mode": mode, "data_files": h.metrics["data_files"], "seconds": round(seconds, 2),
           "peak_rss_before_mib": round(before), "peak_rss_after_mib": round(_peak_mib()),
           "manifests": len(table.source.manifest_records()), "result": h.to_dict()}
    if spark is not None:
        spark.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("metadata")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--one", choices=["driver", "spark"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.metadata, args.one, args.master)))
        return
    results = []
    for mode in ("driver", "spark"):
        p = subprocess.run([sys.executable, __file__, args.metadata, "--master", args.master, "--one", mode],
                           capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{mode}: failed\n{p.stderr[-2000:]}")
            return
        results.append(json.loads(p.stdout.strip().splitlines()[-1]))
    same = results[0]["result"] == results[1]["result"]
    for r in results:
        r.pop("result")
        print(json.dumps(r))
    print(json.dumps({"same_to_dict": same}))


if __name__ == "__main__":
    main()
