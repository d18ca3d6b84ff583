"""Ratio guards: the speed earlier issues promised, measured against the same peers before a change is called done.

    make guards                                        # the plain ``pip install ".[all]"`` venv and the peers' venv
    python benchmarks/guards.py [--only dv-random-10M,card-100k] [--repeat 5] [--rounds 2] [--card-runs 3]
                                [--peers-python PATH] [--root /tmp/pe-bench] [--list]

Each guard times our side and its peer's on the same input; each side runs in a fresh process (``--rounds``
of them, ours and the peer's in turns so that load from elsewhere falls on both), each process times its
work ``--repeat`` times after one warm-up run (PyIceberg's side of the 10M-position decode: once, without a
warm-up; it takes seconds), and the best run of all counts.  Processes are not niced: on a shared machine the times are what
the load leaves, so the verdict is on wall time and each line also shows the ratio of the same runs' CPU
time (single-threaded cases; less sensitive to load).  The card (seconds of work) is
one run per fresh process, ``--card-runs`` processes a side, timed from opening the table to the answer after
the imports, as ``bench_table_scale.py`` does.  A guard prints ``peer / ours`` next to its floor (above 1:
ours is faster); the floors are the targets earlier issues set.  Exit status: 0 when every floor is met, 1
when one is missed, 2 when a guard could not run.  No test asserts on time: this is run by hand, before a
change is called done (docs/guards.md).

Our side runs on the interpreter that runs this script (``make guards``: ``.venv-user``, made from
``pip install ".[all]"`` alone, so what is measured is what a user installs); the peers (PyIceberg 0.12,
pyroaring) on ``--peers-python`` (``make guards``: ``.venv-peers``, installed with the versions ``.venv-user``
resolved as constraints, so both sides share numpy, pyarrow and pyroaring).  A peer's process imports nothing
of this project.

Inputs are built once and cached under ``--root`` (default ``/tmp/pe-bench``) like the other benchmarks:
the DV files of ``bench_puffin_core.py`` (under ``<root>/dv``, a few seconds); the tables derived by
``scale_table.py`` from the Spark-written ``bench.dv_10000`` of ``generate_dv_table.py`` (that one takes
about 6 minutes of Spark on a 2-core machine the first time; the derived 2,000- and 100,000-file tables
about a minute).  A run with everything cached takes 3 to 5 minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Guard:
    """One promise: ``ours`` against ``peer`` on the same input; met when ``peer / ours >= floor`` (or, where
    ``or_us_per_item`` is set, when ours takes at most that many microseconds per item)."""

    name: str
    ours: str
    peer: str
    floor: float
    source: str  # where the floor was promised
    pending: str = ""  # not measured yet: what it waits for
    or_us_per_item: Optional[float] = None
    peer_repeat: Optional[int] = None  # the peer's timed runs in each process when not --repeat (no warm-up then)


#: Every guard, in the order they run.  A new guard is a row here and a pair of sides in ``SIDES`` below.
GUARDS = [
    Guard("dv-random-10M", "PuffinFile(path).blobs[0].decode().positions()",
          "PyIceberg 0.12: the file's bytes, deletion_vectors_from_puffin_file, to_vector()", 20.0,
          "bench_puffin_core.py (random-10M, file -> positions, >= 20x)", peer_repeat=1),
    Guard("dv-sparse-100k", "PuffinFile(path).blobs[0].decode().positions()",
          "PyIceberg 0.12, as above", 10.0, "bench_io_speed.py (dv-sparse, >= 10x)"),
    Guard("roaring-random-10M", "DeletionVector.from_bytes(blob).positions()",
          "pyroaring BitMap64.deserialize(the same vector bytes).to_array() as numpy", 0.5,
          "issue 62 (within 2x of pyroaring on the same bytes)"),
    Guard("roaring-sparse-100k", "DeletionVector.from_bytes(blob).positions()",
          "pyroaring, as above", 0.5, "bench_io_speed.py / issue 62 (within 2x of pyroaring)"),
    Guard("roaring-sparse-100k-file", "read_dv(path, offset=, length=).positions()",
          "pyroaring on the same bytes read from the file (open, seek, read)", 0.5,
          "bench_io_speed.py (file to positions, both: within 2x)"),
    Guard("dvs-2000-read_dv", "read_dv(path, offset=, length=).positions() for each of 2,000 DVs of one file",
          "PyIceberg 0.12: the whole Puffin file, every DV to_vector()", 1.5,
          "issue 62 (<= 60 us a call, or >= 1.5x PyIceberg)", or_us_per_item=60.0),
    Guard("dvs-10k-read_dvs", "Table.from_metadata(m).read_dvs(entries), every DV's positions, of the 10,000 DVs "
          "(3 Puffin files) of the Spark-written bench.dv_10000",
          "PyIceberg 0.12: each Puffin file whole, every DV to_vector()", 20.0,
          "bench_io_speed.py (dvs-10k: Table.read_dvs() >= 20x, on this table)"),
    Guard("card-100k", "Table.from_metadata(m)._repr_mimebundle_() (the card, Health included)",
          "PyIceberg 0.12 StaticTable.from_metadata(m).inspect.files()", 5.0,
          "issue 61 (the card >= 5x inspect.files(); 100,000 files here)"),
    Guard("delta", "a Delta table's card and DV reads", "delta-rs (deltalake)", 0.0, "its issue",
          pending="added when the Delta speed issue lands"),
    Guard("fleet", "a warehouse of many small tables", "PyIceberg, table by table", 0.0, "its issue",
          pending="added when the fleet issue lands"),
]


def say(text: str = "") -> None:
    print(text, flush=True)


# ---------------------------------------------------------------- the sides (run in a fresh process)
# Peers' sides import only the peer (pyiceberg, pyroaring), numpy and the standard library.

CPU = {"best": 0.0}  # CPU seconds of the best run of the last _best call
WARM = {"on": True}  # a warm-up run before the timed ones (off for guards of a few long runs)


def _best(fn, repeat: int, warm: Optional[bool] = None):
    """One warm-up run (unless not ``warm``), then the best of ``repeat`` timed runs (wall time; the CPU time
    of that run goes to ``CPU``); the last result."""
    out = fn() if (WARM["on"] if warm is None else warm) else None
    best = float("inf")
    for _ in range(repeat):
        out = None
        started, cpu = time.perf_counter(), time.process_time()
        out = fn()
        wall = time.perf_counter() - started
        if wall < best:
            best, CPU["best"] = wall, time.process_time() - cpu
    return best, out


def _pyiceberg_positions(path: str) -> tuple[int, int]:
    """PyIceberg's way: the whole Puffin file, every DV to a vector; (vectors, positions)."""
    from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
    from pyiceberg.table.puffin import PuffinFile

    with open(path, "rb") as fh:
        vectors = [dv.to_vector() for dv in deletion_vectors_from_puffin_file(PuffinFile(fh.read()))]
    return len(vectors), int(sum(len(v) for v in vectors))


def _pyroaring_positions(vector: bytes):
    import numpy as np
    from pyroaring import BitMap64

    return np.frombuffer(BitMap64.deserialize(vector).to_array(), dtype=np.uint64)


def _blob_of(path: str, offset: int, length: int) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(offset)
        return fh.read(length)


def side_ours(guard: str, args: dict, repeat: int) -> dict:
    from puffin_explorer import DeletionVector, PuffinFile, read_dv

    if guard in ("dv-random-10M", "dv-sparse-100k"):
        path = args["path"]
        t, pos = _best(lambda: PuffinFile(path).blobs[0].decode().positions(), repeat)
        return {"seconds": t, "check": [1, len(pos), int(pos[-1])]}
    if guard in ("roaring-random-10M", "roaring-sparse-100k"):
        blob = _blob_of(args["path"], args["offset"], args["length"])
        t, pos = _best(lambda: DeletionVector.from_bytes(blob).positions(), repeat)
        return {"seconds": t, "check": [len(pos), int(pos.sum())]}
    if guard == "roaring-sparse-100k-file":
        path, offset, length = args["path"], args["offset"], args["length"]
        t, pos = _best(lambda: read_dv(path, offset=offset, length=length).positions(), repeat)
        return {"seconds": t, "check": [len(pos), int(pos.sum())]}
    if guard == "dvs-2000-read_dv":
        path, ranges = args["path"], args["ranges"]

        def loop():
            return sum(len(read_dv(path, offset=o, length=n).positions()) for o, n in ranges)
        t, n = _best(loop, repeat)
        return {"seconds": t, "items": len(ranges), "check": [len(ranges), n]}
    if guard == "dvs-10k-read_dvs":
        from puffin_explorer.iceberg import Table

        meta = args["metadata"]
        deletes = Table.from_metadata(meta).entries(content="deletes")
        entries = deletes[deletes.kind == "dv"]  # the DataFrame entries() answers, as a user passes it on

        def batch():
            dvs = Table.from_metadata(meta).read_dvs(entries)
            return len(dvs), int(sum(len(d.positions()) for d in dvs))
        t, (k, n) = _best(batch, repeat)
        return {"seconds": t, "items": k, "check": [k, n]}
    raise ValueError(f"no side of ours for {guard}")


def side_peer(guard: str, args: dict, repeat: int) -> dict:
    if guard in ("dv-random-10M", "dv-sparse-100k"):
        t, (k, n) = _best(lambda: _pyiceberg_positions(args["path"]), repeat)
        return {"seconds": t, "check": [k, n, None]}
    if guard in ("roaring-random-10M", "roaring-sparse-100k"):
        vector = _blob_of(args["path"], args["offset"], args["length"])[8:-4]  # length, magic ... CRC
        t, pos = _best(lambda: _pyroaring_positions(vector), repeat)
        return {"seconds": t, "check": [len(pos), int(pos.sum())]}
    if guard == "roaring-sparse-100k-file":
        path, offset, length = args["path"], args["offset"], args["length"]
        t, pos = _best(lambda: _pyroaring_positions(_blob_of(path, offset, length)[8:-4]), repeat)
        return {"seconds": t, "check": [len(pos), int(pos.sum())]}
    if guard in ("dvs-2000-read_dv", "dvs-10k-read_dvs"):
        paths = args.get("paths") or [args["path"]]

        def every_file():
            counts = [_pyiceberg_positions(p) for p in paths]
            return sum(k for k, _ in counts), sum(n for _, n in counts)
        t, (k, n) = _best(every_file, repeat)
        return {"seconds": t, "items": k, "check": [k, n]}
    raise ValueError(f"no peer side for {guard}")


def side_card(side: str, loc: str) -> dict:
    """One run of the card (ours) or ``inspect.files()`` (the peer), as ``bench_table_scale.py`` times them."""
    if side == "ours":
        import puffin_explorer  # noqa: F401 - the installed copy, before bench_table_scale puts the checkout on the path
    sys.path.insert(0, str(HERE))
    import bench_table_scale as scale

    op = "card" if side == "ours" else "pyiceberg_files"
    scale._prepare(op)
    started = time.perf_counter()
    result = scale._ours(op, loc) if side == "ours" else scale._peer(op, loc)
    seconds = time.perf_counter() - started
    if side == "ours" and not result["health_section"]:
        raise SystemExit("the card has no Health section")
    return {"seconds": seconds, "check": [result["rows"]] if side == "peer" else []}


def worker(guard: str, side: str, args_json: str, repeat: int) -> int:
    args = json.loads(args_json)
    WARM["on"] = args.pop("warm", True)
    if guard == "card-100k":
        out = side_card(side, args["metadata"])
        out["cpu"] = None
    else:
        import numpy  # noqa: F401 - imports before the clock, on both sides

        if side == "ours":
            import puffin_explorer.iceberg  # noqa: F401
            out = side_ours(guard, args, repeat)
        else:
            import pyiceberg.table.deletion_vector  # noqa: F401
            import pyiceberg.table.puffin  # noqa: F401
            import pyroaring  # noqa: F401
            out = side_peer(guard, args, repeat)
        out["cpu"] = CPU["best"]
    if side == "ours":
        import puffin_explorer

        out["package"] = os.path.dirname(puffin_explorer.__file__)
    print(json.dumps(out))
    return 0


# ---------------------------------------------------------------- inputs (built once, cached)

def dv_inputs(root: Path) -> dict:
    """The one-DV files of bench_puffin_core.py (sparse 100k, random 10M) and their blob's offset and length."""
    sys.path.insert(0, str(HERE))
    import bench_puffin_core as core

    from puffin_explorer import PuffinFile

    cache = root / "dv"
    cache.mkdir(parents=True, exist_ok=True)
    out = {}
    for case in core.DV_CASES[:2]:
        path = core.dv_file(cache, case)
        blob = PuffinFile(str(path)).blobs[0]
        out[case.name] = {"path": str(path), "offset": blob.offset, "length": blob.length}
    return out


#: The guards that read a table (the others read the DV files of bench_puffin_core.py).
TABLE_GUARDS = {"dvs-2000-read_dv", "dvs-10k-read_dvs", "card-100k"}


def table_inputs(root: Path, names: set, base: int = 10_000) -> dict:
    """The tables the guards ``names`` read: the Spark-written ``bench.dv_<base>`` (built first if absent: Spark,
    minutes), the 2,000-file table derived from it (its 2,000 DVs in one Puffin file) and the 100,000-file one;
    nothing when none of them reads a table."""
    if not names & TABLE_GUARDS:
        return {}
    sys.path.insert(0, str(HERE))
    from bench_table_scale import base_table, table_dir
    from scale_table import ensure_scaled_table

    from puffin_explorer.iceberg import Table

    say(f"  base table bench.dv_{base} (Spark-written; built once under {root}) ...")
    base_loc = base_table(base, str(root))
    out: dict = {"base": base_loc}
    if "card-100k" in names:
        out["big"] = ensure_scaled_table(base_loc, 100_000, table_dir(str(root), 100_000, 3334, 10_000, base), 3334,
                                         10_000, log=lambda m: say(f"    {m}"))
    if "dvs-2000-read_dv" in names:
        small = ensure_scaled_table(base_loc, 2_000, table_dir(str(root), 2_000, 2_000, 10_000, base), 2_000, 10_000,
                                    log=lambda m: say(f"    {m}"))
        t = Table.from_metadata(small)
        entries = t.entries(content="deletes").query("kind == 'dv'").to_dict("records")
        files = sorted({t.locate(e["file_path"]) for e in entries})
        if len(entries) != 2_000 or len(files) != 1:
            raise SystemExit(f"{small}: expected 2,000 DVs in one Puffin file, found {len(entries)} in {len(files)}")
        out["puffin"] = files[0]
        out["ranges"] = [(int(e["content_offset"]), int(e["content_size_in_bytes"])) for e in entries]
    if "dvs-10k-read_dvs" in names:
        if base != 10_000:
            raise SystemExit("dvs-10k-read_dvs reads bench.dv_10000: leave --base-files at 10000")
        b = Table.from_metadata(base_loc)
        base_dvs = b.entries(content="deletes").query("kind == 'dv'").to_dict("records")
        if len(base_dvs) != base:
            raise SystemExit(f"{base_loc}: expected {base:,} DVs, found {len(base_dvs):,}")
        out["base_puffins"] = sorted({b.locate(e["file_path"]) for e in base_dvs})
    return out


# ---------------------------------------------------------------- the driver

def spawn(python: str, guard: str, side: str, args: dict, repeat: int, timeout: float) -> dict:
    """One side in a fresh process; its JSON answer."""
    cmd = [python, str(Path(__file__).resolve()), "--worker", guard, side, json.dumps(args), str(repeat)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        # not niced: on a shared machine a niced side waits behind everyone else's work, and its time says so
        proc = subprocess.run(cmd, stdout=out, stderr=err, text=True, timeout=timeout, cwd=tempfile.gettempdir())
        out.seek(0)
        err.seek(0)
        text, errors = out.read(), err.read()
    if proc.returncode != 0:
        tail = " | ".join(errors.strip().splitlines()[-3:])
        raise RuntimeError(f"{guard} ({side}) failed: {tail}")
    return json.loads(text.strip().splitlines()[-1])


def measure(guard: Guard, args: dict, ours_python: str, peers_python: str, repeat: int, rounds: int,
            timeout: float) -> dict:
    """Best of ``rounds`` fresh processes a side, ours and the peer's in turns."""
    ours, peer = [], []
    peer_args = args if guard.peer_repeat is None else dict(args, warm=False)
    for _ in range(rounds):
        ours.append(spawn(ours_python, guard.name, "ours", args, repeat, timeout))
        peer.append(spawn(peers_python, guard.name, "peer", peer_args, guard.peer_repeat or repeat, timeout))
    import puffin_explorer

    here = os.path.dirname(puffin_explorer.__file__)
    if any(r["package"] != here for r in ours):
        raise RuntimeError(f"{guard.name}: our side imported puffin_explorer from {ours[0]['package']}, not {here}")
    best_ours, best_peer = min(ours, key=lambda r: r["seconds"]), min(peer, key=lambda r: r["seconds"])
    checks = {json.dumps(r["check"]) for r in ours}
    if len(checks) != 1:
        raise RuntimeError(f"{guard.name}: our runs disagree: {sorted(checks)}")
    a, b = best_ours["check"], best_peer["check"]
    if guard.name == "card-100k":
        if b != [200_000]:
            raise RuntimeError(f"card-100k: inspect.files() gave {b} rows, not 200,000 (100,000 data files + DVs)")
    elif a[:2] != b[:2]:  # (vectors, positions) or (positions, their sum)
        raise RuntimeError(f"{guard.name}: ours and the peer's answers differ: {a} vs {b}")
    return {"ours": best_ours, "peer": best_peer}


def _fmt_s(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms" if seconds < 10 else f"{seconds:,.2f} s"


def verdict(guard: Guard, m: dict) -> tuple[float, bool, str]:
    ours, peer = m["ours"]["seconds"], m["peer"]["seconds"]
    ratio = peer / ours if ours > 0 else float("inf")
    met = ratio >= guard.floor
    extra = ""
    if guard.or_us_per_item is not None:
        per = ours / m["ours"]["items"] * 1e6
        met = met or per <= guard.or_us_per_item
        extra = f"; {per:,.1f} us a DV (or <= {guard.or_us_per_item:g} us)"
    elif "items" in m["ours"]:
        extra = f"; {ours / m['ours']['items'] * 1e6:,.1f} us a DV"
    if m["ours"].get("cpu") and m["peer"].get("cpu"):
        extra += f"; CPU time {m['peer']['cpu'] / m['ours']['cpu']:.2f}x"
    return ratio, met, extra


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        return worker(argv[1], argv[2], argv[3], int(argv[4]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated guard names (default: all)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs in each process (after one warm-up)")
    parser.add_argument("--rounds", type=int, default=2, help="fresh processes a side")
    parser.add_argument("--base-files", type=int, default=10_000,
                        help="data files of the Spark-written base table the 100,000-file table is derived from "
                             "(make test's user lane: 1000, a minute of Spark on a machine without the cache)")
    parser.add_argument("--card-runs", type=int, default=3, help="fresh processes a side for the card")
    parser.add_argument("--peers-python", default=os.environ.get("PE_GUARDS_PEERS_PYTHON", sys.executable),
                        help="the interpreter of the peers' venv (PyIceberg 0.12, pyroaring)")
    parser.add_argument("--root", default=os.environ.get("PE_BENCH_ROOT", "/tmp/pe-bench"))
    parser.add_argument("--timeout", type=float, default=600, help="seconds a process may take")
    parser.add_argument("--list", action="store_true", help="print the guards and their floors, run nothing")
    parser.add_argument("--floor", action="append", default=[], metavar="GUARD=X",
                        help="hold a guard to another floor (make test's user-install lane: card-100k=3)")
    args = parser.parse_args(argv)
    floors = {}
    for given in args.floor:
        name, _, value = given.partition("=")
        if name not in {g.name for g in GUARDS} or not value:
            parser.error(f"--floor {given}: expected GUARD=X with GUARD one of {', '.join(g.name for g in GUARDS)}")
        floors[name] = float(value)
    if os.sep in args.peers_python:  # a path (the workers run elsewhere); a bare name is found on PATH
        args.peers_python = os.path.abspath(args.peers_python)  # not realpath: a venv's python is a link
    wanted = [replace(g, floor=floors.get(g.name, g.floor)) for g in GUARDS
              if not args.only or g.name in args.only.split(",")]
    if args.list:
        for g in GUARDS:
            floor = "pending: " + g.pending if g.pending else f">= {g.floor:g}x"
            say(f"{g.name:26} {floor:14} ours: {g.ours}\n{'':41} peer: {g.peer}\n{'':41} from: {g.source}")
        return 0

    import puffin_explorer

    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    say(f"ratio guards: ours on {sys.executable} (puffin_explorer {puffin_explorer.__version__} from "
        f"{os.path.dirname(puffin_explorer.__file__)}), peers on {args.peers_python}")
    say(f"{os.cpu_count()} CPUs, load average {load}; best of {args.rounds} fresh processes a side x {args.repeat} "
        f"runs (card: {args.card_runs} processes a side, one run each)")
    root = Path(args.root)
    started = time.perf_counter()
    say("inputs (cached under the root):")
    dv = dv_inputs(root)
    tables = table_inputs(root, {g.name for g in wanted}, args.base_files)
    say(f"  ready in {time.perf_counter() - started:.1f}s")
    inputs = {
        "dv-random-10M": {"path": dv["random-10M"]["path"]},
        "dv-sparse-100k": {"path": dv["sparse-100k"]["path"]},
        "roaring-random-10M": dv["random-10M"],
        "roaring-sparse-100k": dv["sparse-100k"],
        "roaring-sparse-100k-file": dv["sparse-100k"],
    }
    if "puffin" in tables:
        inputs["dvs-2000-read_dv"] = {"path": tables["puffin"], "ranges": tables["ranges"]}
    if "base_puffins" in tables:
        inputs["dvs-10k-read_dvs"] = {"paths": tables["base_puffins"], "metadata": tables["base"]}
    if "big" in tables:
        inputs["card-100k"] = {"metadata": tables["big"]}

    say()
    head = f"{'guard':26} {'ours':>11} {'peer':>11} {'peer/ours':>10} {'floor':>8}  verdict"
    say(head)
    say("-" * len(head))
    missed, failed = [], []
    for g in wanted:
        if g.pending:
            say(f"{g.name:26} {'—':>11} {'—':>11} {'—':>10} {'—':>8}  pending: {g.pending}")
            continue
        try:
            if g.name == "card-100k":
                m = measure(g, inputs[g.name], sys.executable, args.peers_python, 1, args.card_runs, args.timeout)
            else:
                m = measure(g, inputs[g.name], sys.executable, args.peers_python, args.repeat, args.rounds,
                            args.timeout)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            failed.append(g.name)
            say(f"{g.name:26} could not run: {exc}")
            continue
        ratio, met, extra = verdict(g, m)
        if not met:
            missed.append(g.name)
        say(f"{g.name:26} {_fmt_s(m['ours']['seconds']):>11} {_fmt_s(m['peer']['seconds']):>11} {ratio:>9.2f}x "
            f"{'>= ' + format(g.floor, 'g') + 'x':>8}  {'met' if met else 'MISSED'}{extra}")
    say()
    say(f"floors: {'; '.join(f'{g.name} from {g.source}' for g in wanted if not g.pending)}")
    say(f"done in {time.perf_counter() - started:.0f}s; load average now "
        + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    if failed:
        say(f"could not run: {', '.join(failed)}")
        return 2
    if missed:
        say(f"MISSED: {', '.join(missed)}")
        return 1
    say("every floor met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
