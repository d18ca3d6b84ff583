"""``check()`` clears the DVs of a Puffin file with a columnar screen (the footer's blobs and the DVs' bytes
compared as arrays) and sends only what it cannot clear through the per-DV checks. The screen must never
clear what those checks would report: ``check()`` with the screen and without it (every DV checked one by
one) must say exactly the same, of a table whose DVs are small (the common shape the screen reads: shop.orders
with its four DVs rewritten as a few positions each), of that table damaged in each way the per-DV checks
know, and of the table fuzzer's damaged copies of it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Callable

import pytest

from puffin_explorer import PuffinFile, PuffinWriter, Table
from puffin_explorer.iceberg import dv_checks

sys.path.insert(0, str(Path(__file__).parent / "fuzz"))
import fuzz_tables as tf  # noqa: E402

try:
    from _warehouse_fixtures import WRITTEN_ROOT, copy_warehouse, rewrite_orders_delete_manifest
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import WRITTEN_ROOT, copy_warehouse, rewrite_orders_delete_manifest

pytestmark = pytest.mark.skipif(not (tf.FIXTURES / "warehouse").is_dir(), reason="reference fixtures missing")

#: Fuzz cases compared (each a damaged Puffin DV file or manifest of the small-DV table).
CASES = 30
SMALL = "orders/data/small-deletes.puffin"
#: The rows of shop.orders' four data files with DVs, in the delete manifest's order (from the fixture).
ROWS = [29628, 30185, 30050, 30137]


def _positions(k: int) -> list[int]:
    return [k, 10 + k, 1000 + 7 * k, ROWS[k] - 1]  # the last row of each data file: in range, just


def small_dvs(shop: Path, positions: Callable[[int], list[int]] = _positions,
              entry: Callable[[int, dict], None] = lambda k, e: None,
              blob: Callable[[int, str], dict] = lambda k, ref: {}) -> None:
    """shop.orders' current DVs rewritten into one Puffin file of small DVs (``positions(k)`` for the k-th entry of
    the delete manifest), the manifest's entries pointing at them; ``entry(k, data_file)`` may then change an
    entry and ``blob(k, referenced_data_file)`` a blob's properties."""
    refs: list[str] = []

    def collect(records: list[dict]) -> None:
        refs.extend(r["data_file"]["referenced_data_file"] for r in records)

    rewrite_orders_delete_manifest(shop, collect)
    w = PuffinWriter(properties={"created-by": "tests"})
    for k, ref in enumerate(refs):
        w.add_dv(positions(k), ref, properties=blob(k, ref))
    data = w.to_bytes()
    (shop / SMALL).write_bytes(data)
    blobs = PuffinFile(str(shop / SMALL)).blobs

    def point(records: list[dict]) -> None:
        for k, r in enumerate(records):
            d = r["data_file"]
            d.update(file_path=f"{WRITTEN_ROOT}/shop/{SMALL}", content_offset=blobs[k].offset,
                     content_size_in_bytes=blobs[k].length, file_size_in_bytes=len(data),
                     record_count=len(set(positions(k))))
            entry(k, d)

    rewrite_orders_delete_manifest(shop, point)


def _said(t: Table) -> list[tuple]:
    return [(f.code, str(f.severity), getattr(f, "file", ""), f.offset, f.length, f.message)
            for f in t.check(progress=False)]


def _both(monkeypatch, open_table) -> tuple[list, list, int]:
    """What check() says with the screen, what it says without it, and how many DVs the screen cleared."""
    cleared = []
    screen = dv_checks.cleared_dvs

    def counting(*args):
        out = screen(*args)
        cleared.append(len(out))
        return out

    monkeypatch.setattr(dv_checks, "cleared_dvs", counting)
    with_screen = _said(open_table())
    monkeypatch.setattr(dv_checks, "cleared_dvs", lambda *args: set())
    one_by_one = _said(open_table())
    monkeypatch.setattr(dv_checks, "cleared_dvs", screen)
    return with_screen, one_by_one, sum(cleared)


@pytest.fixture()
def shop(tmp_path: Path) -> Path:
    return copy_warehouse(tmp_path) / "shop"


def test_well_formed_small_dvs_are_all_cleared_and_nothing_is_said_of_them(shop, monkeypatch):
    small_dvs(shop)
    t = Table.from_folder(str(shop / "orders"))
    assert t.dvs().record_count.tolist() == [4, 4, 4, 4]
    with_screen, one_by_one, cleared = _both(monkeypatch, lambda: Table.from_folder(str(shop / "orders")))
    assert cleared == 4
    assert with_screen == one_by_one
    assert not [s for s in with_screen if s[0].startswith("iceberg.dv") or s[0] == "iceberg.file-missing"]


DAMAGE = {
    "iceberg.dv-cardinality-mismatch": dict(entry=lambda k, e: k == 1 and e.update(record_count=5),
                                            blob=lambda k, ref: {"cardinality": "5"} if k == 1 else {}),
    "iceberg.dv-position-out-of-range": dict(positions=lambda k: _positions(k) + ([ROWS[k]] if k == 2 else [])),
    "iceberg.dv-cardinality-property-mismatch": dict(blob=lambda k, ref: {"cardinality": "9"} if k == 0 else {}),
    "iceberg.dv-reference-mismatch": dict(blob=lambda k, ref: {"referenced-data-file": "/elsewhere.parquet"}
                                          if k == 3 else {}),
    "iceberg.dv-length-mismatch": dict(entry=lambda k, e: k == 0 and e.update(
        content_size_in_bytes=e["content_size_in_bytes"] - 1)),
    "iceberg.dv-offset-mismatch": dict(entry=lambda k, e: k == 3 and e.update(
        content_offset=e["content_offset"] + 1, content_size_in_bytes=e["content_size_in_bytes"] - 1)),
}


@pytest.mark.parametrize("code", list(DAMAGE))
def test_each_damage_is_said_with_the_screen_as_without_it(shop, monkeypatch, code):
    small_dvs(shop, **DAMAGE[code])
    with_screen, one_by_one, cleared = _both(monkeypatch, lambda: Table.from_folder(str(shop / "orders")))
    assert with_screen == one_by_one
    assert [s[0] for s in with_screen if s[0].startswith("iceberg.dv")][:1] == [code]  # then what reading says
    assert cleared == 3  # the three undamaged DVs


def test_a_damaged_dv_byte_is_said_with_the_screen_as_without_it(shop, monkeypatch):
    small_dvs(shop)
    data = bytearray((shop / SMALL).read_bytes())
    blob = PuffinFile(str(shop / SMALL)).blobs[2]
    data[blob.offset + blob.length - 6] ^= 0x01  # a position's low byte: the CRC no longer matches
    (shop / SMALL).write_bytes(bytes(data))
    with_screen, one_by_one, cleared = _both(monkeypatch, lambda: Table.from_folder(str(shop / "orders")))
    assert with_screen == one_by_one
    assert "dv.crc" in {s[0] for s in with_screen}
    assert cleared == 3


def test_a_reference_spelled_otherwise_is_checked_one_by_one_and_not_reported(shop, monkeypatch):
    small_dvs(shop, blob=lambda k, ref: {"referenced-data-file": "file://" + ref} if k == 1 else {})
    # the blob names the same file as file:///data/…; only a normalized comparison says they agree
    with_screen, one_by_one, cleared = _both(monkeypatch, lambda: Table.from_folder(str(shop / "orders")))
    assert with_screen == one_by_one
    assert cleared == 3
    assert not [s for s in with_screen if s[0].startswith("iceberg.dv")]


def test_damaged_copies_are_said_alike_with_and_without_the_screen(shop, monkeypatch, tmp_path):
    small_dvs(shop)
    bases = tf.iceberg_bases("small", shop.parent)
    bases = [b for b in bases if b.name == "small:shop.orders"]
    compared = damaged_said = 0
    index = 0
    while compared < CASES:
        case = tf.make_case(bases, 11, index)
        index += 1
        kind = dict((rel, k) for rel, k, _ in case.base.files)[case.rel]
        if case.rel != f"shop/{SMALL}" and not (kind == "manifest" and case.rel.endswith("-m2.avro")):
            continue
        folder = tf.materialize(case, str(tmp_path))
        try:
            def open_table():
                return Table.from_folder(str(case.table_dir))

            try:
                open_table()
            except Exception:  # noqa: BLE001 - a copy that does not open has no DVs to check
                continue
            with_screen, one_by_one, _ = _both(monkeypatch, open_table)
            assert with_screen == one_by_one, (case.rel, case.mutators)
            compared += 1
            damaged_said += any(s[0].startswith(("iceberg.dv", "dv.")) for s in with_screen)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    assert damaged_said >= CASES // 4  # the cases do damage the DVs check() reads


def test_an_offset_near_the_long_limit_is_left_to_the_per_dv_checks(shop, monkeypatch):
    small_dvs(shop, entry=lambda k, e: k == 0 and e.update(content_offset=2 ** 63 - 10))
    with_screen, one_by_one, cleared = _both(monkeypatch, lambda: Table.from_folder(str(shop / "orders")))
    assert with_screen == one_by_one
    assert cleared == 3
    assert "iceberg.dv-offset-mismatch" in [s[0] for s in with_screen]
