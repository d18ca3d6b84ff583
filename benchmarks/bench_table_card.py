"""Table card, warehouse card and commit_deletes: time, bytes and files read, against PyIceberg.

    python benchmarks/bench_table_card.py [--root /tmp/pe-bench] [--files 10000] [--tables 100] [--repeat 3]

1. The card of a table with N data files and N DVs (built once by ``generate_dv_table.py``),
   rendered from the manifests alone: no Puffin file is opened (an audit hook records every
   file opened), against PyIceberg's ``inspect.files()`` and ``inspect.delete_files()``.
2. The warehouse card of 100 tables (copies of the fixture table ``shop.orders``): only
   metadata files and manifest lists are read; bytes and requests printed.
3. ``commit_deletes`` of one commit reads only the two DVs it compares.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]
FIXTURE_WH = ROOT / "resources" / "fixtures" / "warehouse"

_opened: list[str] = []


def _audit(event: str, args) -> None:
    if event == "open" and isinstance(args[0], str):
        _opened.append(args[0])


def opened_since(mark: int) -> list[str]:
    return _opened[mark:]


def rchar() -> int:
    try:
        with open("/proc/self/io") as fh:
            return int(next(line for line in fh if line.startswith("rchar")).split()[1])
    except (OSError, StopIteration):
        return 0


def table_card(loc: str) -> tuple[int, int, float, list[str]]:
    from puffin_explorer.iceberg import Table

    mark, started = len(_opened), time.perf_counter()
    t = Table.from_metadata(loc)
    html = t.to_html()
    return len(html.encode()), t.io.bytes_read, time.perf_counter() - started, opened_since(mark)


def pyiceberg_listing(loc: str) -> tuple[float, float, int, int]:
    from pyiceberg.table import StaticTable

    started = time.perf_counter()
    t = StaticTable.from_metadata(loc)
    files = t.inspect.files()
    t_files = time.perf_counter() - started
    deletes = t.inspect.delete_files()
    return t_files, time.perf_counter() - started, files.num_rows, deletes.num_rows


def build_warehouse(root: Path, n: int) -> Path:
    wh = root / f"wh_{n}"
    if (wh / "_complete").exists():
        return wh
    shutil.rmtree(wh, ignore_errors=True)
    for i in range(n):
        shutil.copytree(FIXTURE_WH / "shop" / "orders", wh / f"ns{i // 10}" / f"orders_{i}",
                        ignore=shutil.ignore_patterns("data"))  # the card reads no data or Puffin file
    (wh / "_complete").write_text("ok")
    return wh


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.environ.get("PE_BENCH_ROOT", "/tmp/pe-bench"))
    parser.add_argument("--files", type=int, default=10_000, help="data files (= DVs) of the table")
    parser.add_argument("--tables", type=int, default=100, help="tables in the warehouse")
    parser.add_argument("--repeat", type=int, default=3, help="runs of the card and of the peer; best of each")
    args = parser.parse_args(argv)
    sys.addaudithook(_audit)
    from puffin_explorer.display import MAX_HTML_BYTES

    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", "--driver-memory 4g pyspark-shell")
    from generate_dv_table import ensure_dv_table

    print(f"table with {args.files:,} data files / DVs ...", end=" ", flush=True)
    loc = ensure_dv_table(args.files, args.root)
    print(loc, flush=True)
    table_card(ensure_dv_table(10, args.root))  # warm-up: imports, matplotlib, first use
    pyiceberg_listing(ensure_dv_table(10, args.root))

    print("\n1. table card vs PyIceberg inspect.files() + inspect.delete_files()")
    runs = [table_card(loc) for _ in range(args.repeat)]  # best of --repeat, each from a fresh Table
    size, counted, t_ours, opened = min(runs, key=lambda r: r[2])
    puffins = [p for r in runs for p in r[3] if p.endswith(".puffin")]
    peers = [pyiceberg_listing(loc) for _ in range(args.repeat)]
    t_files, n_files, n_deletes = min(p[0] for p in peers), peers[0][2], peers[0][3]
    t_both = min(p[1] for p in peers)
    print(f"  puffin_explorer card: {t_ours:.3f}s, HTML {size:,} bytes (cap {MAX_HTML_BYTES:,}), "
          f"{counted:,} bytes of metadata read, {len(puffins)} Puffin files opened")
    print(f"  pyiceberg: inspect.files() {t_files:.3f}s ({n_files:,} rows), + delete_files() {t_both:.3f}s "
          f"({n_deletes:,} rows)")
    print(f"  ratio: pyiceberg files() / card = {t_files / t_ours:.2f}x; files()+delete_files() / card = "
          f"{t_both / t_ours:.2f}x")
    assert size < MAX_HTML_BYTES and not puffins

    print(f"\n2. warehouse card of {args.tables} tables")
    root = build_warehouse(Path(args.root), args.tables)
    from puffin_explorer.iceberg import Warehouse

    mark, before, started = len(_opened), rchar(), time.perf_counter()
    wh = Warehouse(str(root))
    html = wh.to_html()
    elapsed = time.perf_counter() - started
    names = [p.rsplit("/", 1)[-1] for p in opened_since(mark) if p.startswith(str(root))]
    kinds = {"metadata.json": sum(n.endswith(".metadata.json") for n in names),
             "version-hint": sum(n == "version-hint.text" for n in names),
             "manifest lists": sum(n.startswith("snap-") for n in names)}
    other = [n for n in names if not (n.endswith(".metadata.json") or n == "version-hint.text" or n.startswith("snap-"))]
    print(f"  {elapsed:.3f}s, HTML {len(html.encode()):,} bytes; {wh.io.read_count:,} reads, "
          f"{wh.io.bytes_read:,} bytes ({rchar() - before:,} bytes by the process); files opened: {kinds}; "
          f"other files: {len(other)}")
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    print(f"  ratio: bytes read / bytes in the warehouse's metadata folders = {wh.io.bytes_read / total:.3f}")
    assert not other and len(wh.summary()) == args.tables

    print("\n3. commit_deletes of one commit")
    from puffin_explorer.iceberg import Table

    t = Table.from_metadata(str(FIXTURE_WH / "shop" / "events" / "metadata" / "v6.metadata.json"))
    mark, started = len(_opened), time.perf_counter()
    c = t.commit_deletes()
    elapsed = time.perf_counter() - started
    puffins = sorted({p.rsplit("/", 1)[-1] for p in opened_since(mark) if p.endswith(".puffin")})
    dvs = c.to_pandas()
    whole = sum(os.path.getsize(t.locate(p)) for p in
                {t.snapshot().files_added().file_path[0], t.snapshot().files_removed().file_path[0]})
    print(f"  {elapsed:.3f}s: {c.total:,} positions deleted; DV bytes read {c.dv_bytes_read:,} "
          f"(= new DV {int(dvs.content_size_in_bytes[0]):,} + replaced DV); Puffin files opened: {len(puffins)}; "
          f"whole Puffin files would be {whole:,} bytes: ratio {whole / c.dv_bytes_read:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
