"""dv_positions (our decode on executors) vs Iceberg's position_deletes metadata table.

For tables with 10, 100, 1,000 and 10,000 DVs (one per data file, built once by
``generate_dv_table.ensure_dv_table``), on local[1] and local[2]:

- ours:    ``pes.dv_positions(spark, table).count()``  planned from this package's metadata
  reader; the planner decodes on the driver or on the executors (its choice is printed)
- other:   the same with the choice the planner did not make (``mode=``), which is how
  the planner's thresholds were picked
- iceberg: ``spark.read.format("iceberg").load(table + "#position_deletes").count()``

Both counts must agree.  Also timed with ``sum(pos)`` so that neither side can answer
without decoding every position.  Prints one line per measurement and the ratio
iceberg / ours (> 1: ours is faster), then the scaling.

    python benchmarks/bench_spark_dv_positions.py [--root /tmp/pe-bench] [--sizes 100,1000,10000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from generate_dv_table import ensure_dv_table  # noqa: E402


def _time(fn, repeat: int) -> tuple[float, object]:
    times, value = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), value


def run(root: str, sizes: list[int], masters: list[str], repeat: int) -> list[dict]:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from puffin_explorer import spark as pes
    from puffin_explorer.spark.planner import plan_table

    results = []
    locations = {}
    for master in masters:
        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
        spark = pes.session(os.path.join(root, "unused"), master=master,
                            conf={"spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "8"})
        spark.sparkContext.setLogLevel("ERROR")
        for n in sizes:
            if n not in locations:
                locations[n] = ensure_dv_table(n, root)
            loc = locations[n]
            plan = plan_table(loc).describe()
            choice = plan["decode_on"]
            other = "executors" if choice == "driver" else "driver"
            print(f"{master:9} {n:>7,} DVs  plan: {plan['dv_bytes']:,} DV bytes, {plan['positions']:,} positions "
                  f"-> decode on the {choice}", flush=True)
            ours_df = lambda: pes.dv_positions(spark, loc)  # noqa: E731
            other_df = lambda: pes.dv_positions(spark, loc, mode=other)  # noqa: E731
            ice_df = lambda: spark.read.format("iceberg").load(loc + "#position_deletes")  # noqa: E731
            # warm-up of every query shape on every side: JIT, code generation, Python workers, metadata caches
            for df in (ours_df(), other_df(), ice_df()):
                df.count()
                df.agg(F.sum("pos")).first()
            t_other, v_other = _time(lambda: other_df().count(), repeat)
            for what, agg in (("count", lambda df: df.count()),
                              ("sum(pos)", lambda df: df.agg(F.sum("pos")).first()[0])):
                t_ours, v_ours = _time(lambda: agg(ours_df()), repeat)
                t_ice, v_ice = _time(lambda: agg(ice_df()), repeat)
                if v_ours != v_ice:
                    raise AssertionError(f"{n} DVs, {what}: ours {v_ours} != iceberg {v_ice}")
                row = {"master": master, "dvs": n, "measure": what, "ours_s": t_ours, "iceberg_s": t_ice,
                       "ratio": t_ice / t_ours, "value": v_ours, "decode_on": choice}
                results.append(row)
                print(f"{master:9} {n:>7,} DVs  {what:9} ours ({choice}) {t_ours:7.2f}s  iceberg {t_ice:7.2f}s  "
                      f"iceberg/ours {t_ice / t_ours:5.2f}x  ({what} = {v_ours:,})", flush=True)
            if v_other != results[-2]["value"]:
                raise AssertionError(f"{n} DVs: {other} count {v_other} != {results[-2]['value']}")
            results[-2]["other_s"] = t_other
            print(f"{master:9} {n:>7,} DVs  count     on the {other} instead {t_other:7.2f}s  "
                  f"(the planner's choice is {t_other / results[-2]['ours_s']:.2f}x faster)", flush=True)
    return results


def summarize(results: list[dict]) -> None:
    """Print the per-1,000-DV cost, a 1,000,000-DV extrapolation and the local[1] -> local[2] speed-up.

    local[1] already keeps two processes busy for our side (the JVM task thread and
    its Python worker), so on a 2-core machine local[2] cannot show a speed-up; on a
    cluster both sides scale with executor cores (one task per DV-file partition).
    """
    slower = [r for r in results if r["ratio"] < 1]
    print(f"\nratio iceberg/ours from {min(r['ratio'] for r in results):.2f}x to "
          f"{max(r['ratio'] for r in results):.2f}x; "
          + ("never slower than position_deletes" if not slower else
             "slower than position_deletes at " + ", ".join(f"{r['master']} {r['dvs']:,} DVs {r['measure']}"
                                                          for r in slower)))
    print("\nscaling (count, seconds per 1,000 DVs, from the two largest sizes):")
    for master in sorted({r["master"] for r in results}):
        for side in ("ours_s", "iceberg_s"):
            rows = sorted((r for r in results if r["master"] == master and r["measure"] == "count"),
                          key=lambda r: r["dvs"])
            if len(rows) < 2:
                continue
            a, b = rows[-2], rows[-1]
            per_k = (b[side] - a[side]) / (b["dvs"] - a["dvs"]) * 1000
            fixed = a[side] - per_k * a["dvs"] / 1000
            print(f"  {master:9} {side[:-2]:8} {per_k:6.3f}s per 1,000 DVs + {fixed:5.2f}s fixed "
                  f"-> 1,000,000 DVs ~ {fixed + per_k * 1000:,.0f}s on this machine")
    by = {(r["master"], r["dvs"], r["measure"]): r for r in results}
    for n in sorted({r["dvs"] for r in results}):
        one, two = by.get(("local[1]", n, "count")), by.get(("local[2]", n, "count"))
        if one and two:
            print(f"  {n:>7,} DVs: local[1] -> local[2] speed-up ours {one['ours_s'] / two['ours_s']:.2f}x, "
                  f"iceberg {one['iceberg_s'] / two['iceberg_s']:.2f}x")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="/tmp/pe-bench")
    parser.add_argument("--sizes", default="10,100,1000,10000")
    parser.add_argument("--masters", default="local[1],local[2]")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    try:
        results = run(args.root, [int(s) for s in args.sizes.split(",")], args.masters.split(","), args.repeat)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    summarize(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
