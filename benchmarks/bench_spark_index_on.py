"""Driver memory of ``dv_positions(...).count()`` with the entry index built on the driver or the executors.

One fresh Python process per setting (``index_on="driver"`` / ``"executors"``), an embedded Spark
session, the table's metadata file given on the command line.  Prints the driver Python process's
peak RSS (``ru_maxrss``) before the call (session started, table opened) and after it, and the time.

    nice -n 10 python benchmarks/bench_spark_index_on.py /tmp/pe-bench/clone_100k/metadata/v1.metadata.json
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one(metadata: str, index_on: str, master: str) -> dict:
    """Run in this process: open, count, measure."""
    from puffin_explorer import Table
    from puffin_explorer import spark as pes

    spark = pes.session(master=master, iceberg=False, conf={"spark.driver.memory": "4g"})
    spark.sparkContext.setLogLevel("ERROR")
    table = Table.from_metadata(metadata)
    before = _peak_mib()
    t = time.perf_counter()
    count = pes.dv_positions(spark, table, index_on=index_on).count()
    seconds = time.perf_counter() - t
    out = {"index_on": index_on, "positions": count, "seconds": round(seconds, 2),
           "peak_rss_before_mib": round(before), "peak_rss_after_mib": round(_peak_mib()),
           "manifests": len(table.source.manifest_records())}
    spark.stop()
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("metadata")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--one", choices=["driver", "executors"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.metadata, args.one, args.master)), flush=True)
        return 0
    for where in ("driver", "executors"):
        got = subprocess.run([sys.executable, __file__, args.metadata, "--master", args.master, "--one", where],
                             capture_output=True, text=True, check=True)
        print(got.stdout.strip().splitlines()[-1], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
