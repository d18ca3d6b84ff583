"""Mutation fuzzer for Iceberg table metadata: one field of a real table's ``metadata.json`` damaged per case.

The fixture warehouse (``resources/fixtures/warehouse``, Spark 3.5 + Iceberg 1.9.2) is copied once; each
case rewrites the current metadata file of one table with one JSON value changed (removed, null, a string,
-1, 2**64, an empty array, an empty object, a huge array, a deeply nested value, a snapshot id that is not
there) and then does what a user does: open the table (``Table.from_folder``) and the warehouse, render
both cards (HTML and text), ``snapshots()``, ``timeline()``, ``statistics_files()``, ``puffin_files()``,
``check()``, the current snapshot's card and ``commit_deletes()``, and the ``table`` CLI (summary as
text and JSON, snapshots, stats, puffin as CSV).

Outcomes: ``ok``; ``documented`` (``NotInTableError`` asking for the current snapshot of a table that has
none); ``crash`` (any other exception, or a CLI "unexpected error"). Cases come from ``(seed, index)``.

    python tests/fuzz/fuzz_table_metadata.py --cases 600 --seed 1
    python tests/fuzz/fuzz_table_metadata.py --replay-case 17 --seed 1     # one case, with its traceback
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

WAREHOUSE = ROOT / "resources" / "fixtures" / "warehouse"
TABLES = {"shop.orders": "orders/metadata/v7.metadata.json", "shop.events": "events/metadata/v6.metadata.json",
          "shop.legacy": "legacy/metadata/v3.metadata.json"}


def json_paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    """Every key and list item of a JSON value, depth first (the root excluded)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield path + (k,)
            yield from json_paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield path + (i,)
            yield from json_paths(v, path + (i,))


MUTATIONS = ["remove", "null", "string", "minus-one", "beyond-long", "empty-array", "empty-object",
             "huge-array", "deep", "other-id", "float", "boolean"]


def mutated(doc: Any, path: tuple, how: str) -> Any:
    doc = json.loads(json.dumps(doc))
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    key = path[-1]
    if how == "remove":
        if isinstance(parent, dict):
            del parent[key]
        else:
            parent.pop(key)
        return doc
    parent[key] = {
        "null": None, "string": "x", "minus-one": -1, "beyond-long": 2 ** 64, "empty-array": [],
        "empty-object": {}, "huge-array": [1] * 20_000, "deep": json.loads("[" * 200 + "]" * 200),
        "other-id": 123456789, "float": 1.5, "boolean": True,
    }[how]
    return doc


def make_case(docs: dict[str, Any], seed: int, index: int) -> tuple[str, tuple, str]:
    rng = random.Random(seed * 1_000_003 + index)
    name = rng.choice(sorted(docs))
    paths = list(json_paths(docs[name]))
    return name, rng.choice(paths), rng.choice(MUTATIONS)


def exercise(root: Path, name: str) -> None:
    """Everything a user does with a table; raises what escapes."""
    from puffin_explorer import Warehouse
    from puffin_explorer.cli import main
    from puffin_explorer.iceberg.table import Table

    folder = root / "shop" / name.split(".")[1]
    t = Table.from_folder(str(folder), name=name)
    list(t.findings)
    bundle = t._repr_mimebundle_()
    assert "Traceback" not in bundle["text/html"]
    t.to_text()
    t.snapshots()
    t.timeline()
    t.statistics_files()
    t.puffin_files()
    t.check()
    t.summary()
    if t.metadata.current_snapshot_id is not None:
        snap = t.snapshot()
        snap._repr_mimebundle_()
        cd = t.commit_deletes()
        cd._repr_mimebundle_()
    for s in t.metadata.snapshots[:2]:
        t.snapshot(s.snapshot_id).to_text()
    wh = Warehouse(str(root))
    wh._repr_mimebundle_()
    for view in (["summary"], ["summary", "--format", "json"], ["snapshots"], ["stats"], ["puffin", "--format", "csv"]):
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            main(["table", str(folder), *view])
        if "unexpected error" in err.getvalue():
            raise RuntimeError(f"CLI {' '.join(view)}: {err.getvalue().strip()}")


def run(cases: int, seed: int, replay: int = -1) -> dict[str, Any]:
    from puffin_explorer.errors import NotInTableError

    docs = {n: json.loads((WAREHOUSE / "shop" / p).read_text()) for n, p in TABLES.items()}
    outcomes: Counter = Counter()
    crashes: Counter = Counter()
    crash_cases: list[int] = []
    start = time.perf_counter()
    slowest = (0.0, -1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "warehouse"
        shutil.copytree(WAREHOUSE, root)
        indexes = [replay] if replay >= 0 else range(cases)
        for index in indexes:
            name, path, how = make_case(docs, seed, index)
            target = root / "shop" / TABLES[name]
            target.write_text(json.dumps(mutated(docs[name], path, how)))
            t0 = time.perf_counter()
            try:
                exercise(root, name)
                outcomes["ok"] += 1
            except NotInTableError as exc:
                if "no current snapshot" in str(exc):
                    outcomes["documented"] += 1
                else:
                    outcomes["crash"] += 1
                    crashes[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1
                    crash_cases.append(index)
            except Exception as exc:  # noqa: BLE001 - what the fuzzer counts
                outcomes["crash"] += 1
                where = traceback.extract_tb(exc.__traceback__)[-1]
                crashes[f"{type(exc).__name__} at {Path(where.filename).name}:{where.lineno}"] += 1
                crash_cases.append(index)
                if replay >= 0:
                    traceback.print_exc()
                    print(f"case {index}: {name} {'.'.join(map(str, path))} {how}")
            took = time.perf_counter() - t0
            slowest = max(slowest, (took, index))
            target.write_text(json.dumps(docs[name]))
    return {"cases": len(indexes), "outcomes": dict(outcomes), "crashes": dict(crashes.most_common(20)),
            "crash_cases": crash_cases[:20],
            "seconds": round(time.perf_counter() - start, 1), "slowest_case": {"seconds": round(slowest[0], 2),
                                                                               "index": slowest[1]}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--replay-case", type=int, default=-1)
    args = ap.parse_args(argv)
    report = run(args.cases, args.seed, args.replay_case)
    print(json.dumps(report, indent=2))
    return 1 if report["outcomes"].get("crash") else 0


if __name__ == "__main__":
    raise SystemExit(main())
