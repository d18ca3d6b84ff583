"""List and decode every deletion vector of a Delta table: puffin_explorer vs delta-rs (``deltalake``).

The table (1,000 data files of 10,000 rows, each with a DV of 100–1,000 positions,
100 DVs per ``deletion_vector_<uuid>.bin`` file) is written once by
``resources/delta_tables.py`` and cached.  Both tools start from the table folder:

* puffin_explorer: ``DeltaTable(root)`` → ``dvs()`` → ``deletion_vectors()`` → every DV's ``positions()``;
* delta-rs: ``DeltaTable(root).deletion_vectors()`` → an Arrow table of keep masks (one bool per row);
  "1st+pos" is its first (cold) run, which also turns each mask into deleted positions with numpy.

puffin_explorer: best of ``--repeat`` runs after a warm-up.  delta-rs runs in a child process
(``--rs-repeat`` times after its first run, which also checks that both answers hold the same
positions) with a time limit per attempt, up to ``--rs-attempts`` attempts: with deltalake 1.6.6,
``deletion_vectors()`` on the 1,000-DV table sometimes never returns (in a few tries in one
process, one returned in 0.8 s and the others hung past 30 s; the same call on 200 or 400 DVs always
returned).  A hung child is stopped, the next attempt starts a fresh one, and the hangs are counted.
Printed per size: times, the ratios delta-rs / puffin_explorer, and delta-rs's hung attempts.

    python benchmarks/bench_delta_dvs.py [--root /tmp/pe-bench-delta] [--dvs 200,400,1000] [--repeat 5]

Ctrl-C prints what was measured so far.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "resources"))


def ensure_table(root: str, dvs: int) -> str:
    import numpy as np

    from delta_tables import write_delta_table

    folder = os.path.join(root, f"delta-{dvs}-dvs")
    if os.path.isdir(os.path.join(folder, "_delta_log")):
        return folder
    rng = np.random.default_rng(12)
    rows = 10_000
    deletes = {i: rng.choice(rows, int(rng.integers(100, 1000)), replace=False) for i in range(dvs)}
    print(f"writing {folder} ({dvs} data files and DVs) …", flush=True)
    write_delta_table(folder + ".tmp", [rows] * dvs, deletes, storage="u", dvs_per_file=100, seed_uuid=1 << 100)
    os.rename(folder + ".tmp", folder)
    return folder


def ours(folder: str) -> dict:
    from puffin_explorer import DeltaTable

    t = DeltaTable(folder)
    rows = t.dvs()
    decoded = t.deletion_vectors()
    assert len(decoded) == len(rows)
    return {loc.rsplit("/", 1)[-1]: dv.positions() for loc, dv in decoded.items()}


def delta_rs(folder: str, positions: bool):
    import numpy as np
    import pyarrow as pa
    from deltalake import DeltaTable

    table = pa.table(DeltaTable(folder).deletion_vectors())
    if not positions:
        return table
    out = {}
    for path, keep in zip(table.column("filepath").to_pylist(), table.column("selection_vector").chunks[0]
                          if table.num_rows else []):
        mask = keep.values.to_numpy(zero_copy_only=False)
        out[path.rsplit("/", 1)[-1]] = np.flatnonzero(~mask).astype(np.uint64)
    return out


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _rs_child(folder: str, repeat: int, out) -> None:  # runs in a child process
    try:
        import deltalake  # noqa: F401  imports are not what is measured
        import numpy  # noqa: F401
        import pyarrow  # noqa: F401

        t0 = time.perf_counter()
        b = delta_rs(folder, True)
        with_positions = time.perf_counter() - t0
        raw = best(lambda: delta_rs(folder, False), repeat)
        out.put((with_positions, raw, {k: v.tolist() for k, v in b.items()}))
    except Exception as exc:  # reported by the parent
        out.put(exc)


def run_delta_rs(folder: str, repeat: int, timeout: float, attempts: int = 1):
    """delta-rs in a child process, retried in a fresh one when a call never returns.

    Returns ``(result, hung)``: the child's answer (a tuple, an exception, or None when every
    attempt hung) and how many attempts were stopped for want of an answer."""
    hung = 0
    for _ in range(max(1, attempts)):
        got = _run_delta_rs_once(folder, repeat, timeout)
        if got is not None:
            return got, hung
        hung += 1
    return None, hung


def _run_delta_rs_once(folder: str, repeat: int, timeout: float):
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_rs_child, args=(folder, repeat, q), daemon=True)
    p.start()
    try:
        got = q.get(timeout=timeout)
    except Exception:
        got = None
    finally:
        if p.is_alive():
            p.terminate()
        p.join(5)
    return got


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default="/tmp/pe-bench-delta")
    ap.add_argument("--dvs", default="200,400,1000", help="comma-separated table sizes (DVs)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rs-repeat", type=int, default=1)
    ap.add_argument("--rs-timeout", type=float, default=30.0, help="seconds to wait for one delta-rs attempt")
    ap.add_argument("--rs-attempts", type=int, default=4, help="delta-rs attempts per size before giving up")
    args = ap.parse_args(argv)
    print(f"{'DVs':>6} {'positions':>10} {'ours ms':>9} {'delta-rs ms':>12} {'ratio':>7} {'rs 1st+pos ms':>14} "
          f"{'ratio':>7} {'rs hung':>8}")
    try:
        for n in (int(x) for x in args.dvs.split(",")):
            folder = ensure_table(args.root, n)
            a = ours(folder)  # warm-up
            mine = best(lambda: ours(folder), args.repeat)
            total = sum(len(v) for v in a.values())
            got, hung = run_delta_rs(folder, args.rs_repeat, args.rs_timeout, args.rs_attempts)
            if not isinstance(got, tuple):
                why = (f"no answer in {hung} attempts of {args.rs_timeout:.0f} s" if got is None
                       else f"failed: {got}")
                print(f"{n:6d} {total:10,} {mine * 1000:9.1f}  delta-rs {why}", flush=True)
                continue
            with_pos, raw, b = got
            same = a.keys() == b.keys() and all(a[k].tolist() == b[k] for k in a)
            print(f"{n:6d} {total:10,} {mine * 1000:9.1f} {raw * 1000:12.1f} {raw / mine:6.2f}x {with_pos * 1000:14.1f} "
                  f"{with_pos / mine:6.2f}x {hung:8d}{'' if same else '  ANSWERS DIFFER'}", flush=True)
    except KeyboardInterrupt:
        print("interrupted; the sizes above were measured")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
