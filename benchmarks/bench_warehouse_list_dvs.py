"""List every deletion vector of a table: puffin_explorer vs PyIceberg's ``inspect.delete_files()``.

For tables of N data files with one DV each (built once by Spark + Iceberg with
``generate_dv_table.ensure_dv_table`` and cached), both tools start from the
metadata location and produce a table with one row per DV.  One timed run per
tool and size after a warm-up on the smallest table (imports, page cache).

Reported per size: wall time, bytes read by the process (``rchar`` from
``/proc/self/io``, the same meter for both tools), and the ratios
PyIceberg / puffin_explorer.  PyIceberg's rows lack ``referenced_data_file``,
``content_offset`` and ``content_size_in_bytes``, so they cannot locate a DV
inside its Puffin file; puffin_explorer's rows can (and it checks that).

    python benchmarks/bench_warehouse_list_dvs.py [--root /tmp/pe-bench] [--sizes 100,1000,10000]

Ctrl-C prints what was measured so far.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def rchar() -> int:
    """Bytes this process has read through read-like system calls so far."""
    with open("/proc/self/io") as fh:
        for line in fh:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    raise RuntimeError("/proc/self/io has no rchar")


def warm_page_cache(metadata_location: str) -> None:
    """Read every metadata file once so neither tool pays for a cold disk."""
    folder = os.path.dirname(metadata_location)
    for name in os.listdir(folder):
        with open(os.path.join(folder, name), "rb") as fh:
            while fh.read(1 << 20):
                pass


def list_with_puffin_explorer(metadata_location: str):
    from puffin_explorer.iceberg import Table

    t = Table.from_metadata(metadata_location)
    return t.dvs(), t.io.bytes_read


def list_with_pyiceberg(metadata_location: str):
    from pyiceberg.table import StaticTable

    t = StaticTable.from_metadata(metadata_location)
    return t.inspect.delete_files()


def measure(fn, *args):
    before_bytes, started = rchar(), time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - started, rchar() - before_bytes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.environ.get("PE_BENCH_ROOT", "/tmp/pe-bench"),
                        help="where the generated tables are cached")
    parser.add_argument("--sizes", default="100,1000,10000", help="data files (= DVs) per table")
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))

    # building a table fans out one Parquet writer per data file in each task: 1 GiB of driver heap is too little
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", "--driver-memory 4g pyspark-shell")
    from generate_dv_table import ensure_dv_table

    locations = {}
    for n in sizes:
        print(f"table with {n:,} data files / DVs ...", end=" ", flush=True)
        locations[n] = ensure_dv_table(n, args.root)
        print(locations[n], flush=True)

    # warm-up: imports and first-use costs of both tools, on the smallest table
    list_with_puffin_explorer(locations[sizes[0]])
    list_with_pyiceberg(locations[sizes[0]])

    results = []
    header = (f"{'DVs':>7} | {'puffin_explorer':>15} {'bytes':>11} | {'pyiceberg':>10} {'bytes':>11} | "
              f"{'time ratio':>10} {'bytes ratio':>11}")
    print("\n" + header + "\n" + "-" * len(header), flush=True)
    try:
        for n in sizes:
            loc = locations[n]
            warm_page_cache(loc)
            (ours, counted), t_ours, b_ours = measure(list_with_puffin_explorer, loc)
            theirs, t_theirs, b_theirs = measure(list_with_pyiceberg, loc)
            assert len(ours) == n, f"puffin_explorer listed {len(ours)} DVs, expected {n}"
            puffin_rows = [p for p, f in zip(theirs.column("file_path").to_pylist(),
                                             theirs.column("file_format").to_pylist()) if f.upper() == "PUFFIN"]
            assert len(puffin_rows) == n, f"pyiceberg listed {len(puffin_rows)} DVs, expected {n}"
            assert sorted(ours.file_path) == sorted(puffin_rows)
            assert ours.content_offset.notna().all() and ours.content_size_in_bytes.notna().all()
            results.append((n, t_ours, b_ours, t_theirs, b_theirs, counted))
            print(f"{n:>7,} | {t_ours:>14.3f}s {b_ours:>11,} | {t_theirs:>9.3f}s {b_theirs:>11,} | "
                  f"{t_theirs / t_ours:>9.1f}x {b_theirs / max(1, b_ours):>10.1f}x", flush=True)
    except KeyboardInterrupt:
        print("\ninterrupted; results so far are above", flush=True)
    if len(results) >= 2:
        (n0, to0, bo0, tt0, bt0, _), (n1, to1, bo1, tt1, bt1, _) = results[0], results[-1]
        print(f"\ngrowth {n0:,} -> {n1:,} DVs ({n1 / n0:.0f}x): puffin_explorer time {to1 / to0:.1f}x, "
              f"bytes {bo1 / bo0:.1f}x; pyiceberg time {tt1 / tt0:.1f}x, bytes {bt1 / bt0:.1f}x")
    if results:
        n, to, bo, tt, bt, counted = results[-1]
        print(f"at {n:,} DVs: pyiceberg / puffin_explorer = {tt / to:.1f}x time, {bt / max(1, bo):.1f}x bytes "
              f"(puffin_explorer's own reader counted {counted:,} bytes: metadata.json, manifest list, "
              f"delete manifests only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
