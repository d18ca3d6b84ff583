"""Iceberg tables whose metadata.json (or a position-delete file) is damaged in one known way each.

Every case copies the fixture warehouse (Spark 3.5 + Iceberg 1.9.2), damages one field, opens the table
as a user would, renders its card, runs every metadata-level question and checks the exact findings
(code, JSON path) and that the rest still reads with the fixture's exact values.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from puffin_explorer import Warehouse
from puffin_explorer.cli import main
from puffin_explorer.errors import (InvalidFileError, NotInTableError, PuffinError, SourceError,
                                    TableNotFoundError)
from puffin_explorer.iceberg.table import Table

try:
    from _warehouse_fixtures import (FIXTURES, ORDERS_CURRENT_METADATA, ORDERS_SNAPSHOT, WRITTEN_ROOT,
                                     copy_warehouse, edit_json, rewrite_avro,
                                     rewrite_orders_delete_manifest)
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import (FIXTURES, ORDERS_CURRENT_METADATA, ORDERS_SNAPSHOT, WRITTEN_ROOT,
                                           copy_warehouse, edit_json, rewrite_avro,
                                           rewrite_orders_delete_manifest)

ORDERS_SNAPSHOTS = [4894008605646771791, 5121291212189297242, 245724947423502827, 4843015790835191333,
                    ORDERS_SNAPSHOT]
ORDERS_COLUMNS = ["order_id", "customer_id", "status", "amount", "order_date"]
LEGACY_DELETES = "legacy/data/00000-37-bb4fa630-c1a0-4814-8674-1ed7e896faaa-00001-deletes.parquet"


@pytest.fixture()
def shop(tmp_path: Path) -> Path:
    return copy_warehouse(tmp_path) / "shop"


def damage(shop: Path, change) -> Table:
    """Change the current metadata.json of shop.orders and open the table from the warehouse."""
    edit_json(shop / ORDERS_CURRENT_METADATA, change)
    return Warehouse(str(shop.parent)).table("shop.orders")


def metadata_findings(t: Table) -> list[tuple[str, str]]:
    return [(f.code, f.message) for f in t.findings if f.code != "iceberg.table-relocated"]


def renders(t: Table) -> tuple[str, str]:
    """The card as a notebook and a terminal see it: never a traceback; the findings come first."""
    bundle = t._repr_mimebundle_()
    html, text = bundle["text/html"], bundle["text/plain"]
    assert "Traceback" not in html and "Traceback" not in text
    assert "Iceberg table" in html and text.startswith("Iceberg table shop.orders")
    first = metadata_findings(t)[:1]
    for code, message in first:  # the first one is listed in both, before the timeline
        assert code in html and code in text
        assert html.index(code) < html.index("Schema") and text.index(code) < text.index("schema")
    return html, text


def test_a_schema_field_without_an_id_is_reported_and_skipped(shop):
    t = damage(shop, lambda md: md["schemas"][0]["fields"][1].pop("id"))
    assert metadata_findings(t) == [("iceberg.metadata-field-missing", "schemas[0].fields[1].id is missing")]
    assert t.findings[0].file == f"{shop}/{ORDERS_CURRENT_METADATA}"
    assert t.schema_fields().name.tolist() == ["order_id", "status", "amount", "order_date"]
    renders(t)
    assert len(t.snapshots()) == 5 and t.timeline().live_rows.tolist()[-1] == 94_040
    # the statistics blob for field 2 now names a field no schema has
    assert [(f.code, f.message) for f in t.check()] == metadata_findings(t) + [
        ("iceberg.stats-field-unknown", "apache-datasketches-theta-v1 blob is for field id 2, which no schema of "
                                        "the table has")]


def test_a_schema_field_that_is_a_string_is_reported_and_skipped(shop):
    t = damage(shop, lambda md: md["schemas"][0]["fields"].__setitem__(0, "order_id"))
    assert metadata_findings(t) == [
        ("iceberg.metadata-field-type", "schemas[0].fields[0] is a string ('order_id'), not an object; skipped")]
    assert t.schema_fields().name.tolist() == ORDERS_COLUMNS[1:]
    html, _ = renders(t)
    stats = t.statistics_files()
    assert stats["columns"].tolist()[0] == ["#1", "customer_id", "status", "amount", "order_date"]
    # the statistics blob for field 1 names a field no schema has any more
    assert [f.code for f in t.check()] == ["iceberg.metadata-field-type", "iceberg.stats-field-unknown"]


def test_a_snapshot_without_an_id_is_skipped_the_others_read(shop):
    t = damage(shop, lambda md: md["snapshots"][0].pop("snapshot-id"))
    assert metadata_findings(t) == [("iceberg.metadata-field-missing", "snapshots[0].snapshot-id is missing")]
    assert t.snapshots().snapshot_id.tolist() == ORDERS_SNAPSHOTS[1:]
    assert t.timeline().live_rows.tolist()[-1] == 94_040
    assert t.snapshot().parent.snapshot_id == ORDERS_SNAPSHOTS[3]
    renders(t)
    assert t.summary()["live_rows"] == 94_040


def test_a_summary_that_is_not_an_object_keeps_its_snapshot(shop):
    t = damage(shop, lambda md: md["snapshots"][3].__setitem__("summary", "broken"))
    assert metadata_findings(t) == [
        ("iceberg.metadata-field-type", "snapshots[3].summary is a string ('broken'), not an object")]
    snaps = t.snapshots()
    assert snaps.snapshot_id.tolist() == ORDERS_SNAPSHOTS
    assert snaps.operation.tolist()[3] == "" and snaps.summary.tolist()[3] == {}
    assert snaps.total_records.isna().tolist() == [False, False, False, True, False]
    tl = t.timeline()
    assert len(tl) == 5 and tl.live_rows.tolist()[-1] == 94_040
    renders(t)
    assert t.snapshot(ORDERS_SNAPSHOTS[3]).operation == ""
    assert t.commit_deletes(ORDERS_SNAPSHOTS[3]).findings == []


def test_summary_values_that_are_not_strings(shop):
    def change(md):
        md["snapshots"][4]["summary"]["total-records"] = 121964
        md["snapshots"][4]["summary"]["added-records"] = {"n": 1}
    t = damage(shop, change)
    assert metadata_findings(t) == [
        ("iceberg.metadata-field-type", "snapshots[4].summary.added-records is an object ({'n': 1}), not a string; "
                                        "skipped")]
    assert t.snapshots().total_records.tolist()[-1] == 121_964
    renders(t)


def test_a_current_schema_id_that_does_not_resolve(shop):
    t = damage(shop, lambda md: md.__setitem__("current-schema-id", 7))
    assert metadata_findings(t) == [
        ("iceberg.metadata-id-unresolved", "current-schema-id 7 is not the id of any schema (schemas: [0])")]
    assert t.metadata.current_schema_id == 0
    assert t.schema_fields().name.tolist() == ORDERS_COLUMNS
    renders(t)
    assert [f.code for f in t.check()] == ["iceberg.metadata-id-unresolved"]


def test_ids_that_do_not_resolve(shop):
    def change(md):
        md["default-spec-id"] = 3
        md["default-sort-order-id"] = 9
        md["refs"]["main"]["snapshot-id"] = 42
        md["snapshots"][2]["parent-snapshot-id"] = md["snapshots"][2]["snapshot-id"]
    t = damage(shop, change)
    assert metadata_findings(t) == [
        ("iceberg.metadata-id-unresolved", "default-spec-id 3 is not the id of any partition spec (specs: [0])"),
        ("iceberg.metadata-id-unresolved", "default-sort-order-id 9 is not the id of any sort order (orders: [0])"),
        ("iceberg.metadata-id-unresolved", f"snapshot {ORDERS_SNAPSHOTS[2]} names itself as its parent"),
        ("iceberg.metadata-id-unresolved", "refs.main.snapshot-id 42 is not the id of any snapshot"),
    ]
    assert t.partition_spec()["transform"].tolist() == ["bucket[4]"]
    assert t.metadata.refs == {}
    assert t.snapshots().parent_snapshot_id.isna().tolist() == [True, False, True, False, False]
    renders(t)


def test_no_current_snapshot_is_a_finding_and_not_in_table_on_request(shop):
    t = damage(shop, lambda md: md.__setitem__("current-snapshot-id", 12345))
    assert metadata_findings(t) == [
        ("iceberg.metadata-id-unresolved", "current-snapshot-id 12345 is not the id of any snapshot (5 snapshots); "
                                           "the table is read as having no current snapshot")]
    with pytest.raises(NotInTableError) as info:
        t.snapshot()
    assert str(info.value) == "shop.orders: no current snapshot" and isinstance(info.value, KeyError)
    with pytest.raises(NotInTableError, match="shop.orders: no snapshot 99"):
        t.snapshot(99)
    html, text = renders(t)
    assert "no current snapshot" in html and "Snapshot timeline" in html and "no current snapshot" in text
    assert t.snapshots().is_current.tolist() == [False] * 5
    assert len(t.timeline()) == 5 and len(t.statistics_files()) == 1
    assert [f.code for f in t.check()] == ["iceberg.metadata-id-unresolved"]
    assert t.snapshot(ORDERS_SNAPSHOTS[1]).snapshot_id == ORDERS_SNAPSHOTS[1]
    row = Warehouse(str(shop.parent)).summary().set_index("table").loc["shop.orders"]
    assert row.health == "empty" and row.snapshots == 5


def test_statistics_without_snapshot_id(shop):
    t = damage(shop, lambda md: md["statistics"][0].pop("snapshot-id"))
    assert metadata_findings(t) == [("iceberg.metadata-field-missing", "statistics[0].snapshot-id is missing")]
    assert len(t.statistics_files()) == 0
    assert t.puffin_files().role.tolist() == ["deletion-vectors"]
    renders(t)
    assert [f.code for f in t.check()] == ["iceberg.metadata-field-missing"]


def test_blob_metadata_with_wrong_types(shop):
    def change(md):
        blobs = md["statistics"][0]["blob-metadata"]
        blobs[0]["type"] = 5
        blobs[1]["properties"] = "ndv=4983"
        blobs[2]["fields"] = ["3", 3]
    t = damage(shop, change)
    assert metadata_findings(t) == [
        ("iceberg.metadata-field-type", "statistics[0].blob-metadata[0].type is an integer (5), not a string"),
        ("iceberg.metadata-field-type", "statistics[0].blob-metadata[1].properties is a string ('ndv=4983'), "
                                        "not an object"),
        ("iceberg.metadata-field-type", "statistics[0].blob-metadata[2].fields holds ['3', 3]: field ids are "
                                        "integers; the others are skipped"),
    ]
    stats = t.statistics_files()
    assert stats.blob_types.tolist() == [["", "apache-datasketches-theta-v1"]]
    assert stats.ndv.tolist() == [["93817", None, "6", "42089", "365"]]
    assert t.puffin_files().blobs.tolist() == [4, 5]
    renders(t)
    found = [(f.code, f.message) for f in t.check()]
    assert found[:3] == metadata_findings(t)
    assert ("iceberg.stats-blob-mismatch", "blob 0: metadata type '' but footer type 'apache-datasketches-theta-v1'") \
        in found


def test_numbers_beyond_a_long(shop):
    def change(md):
        md["statistics"][0]["file-size-in-bytes"] = 2 ** 64
        md["snapshots"][1]["timestamp-ms"] = 2 ** 62
        md["next-row-id"] = -1
    t = damage(shop, change)
    assert metadata_findings(t) == [
        ("iceberg.metadata-number-range", "snapshots[1].timestamp-ms is 4611686018427387904, outside the times a "
                                          "timestamp can hold (epoch milliseconds from 1677-09-21 to 2262-04-11); "
                                          "the time is read as unknown"),
        ("iceberg.metadata-number-range", "statistics[0].file-size-in-bytes is 18446744073709551616, outside the "
                                          "range of a non-negative long"),
        ("iceberg.metadata-number-range", "next-row-id is -1, outside the range of a non-negative long"),
    ]
    assert t.statistics_files().file_size_in_bytes.isna().tolist() == [True]
    snaps = t.snapshots()
    assert snaps.timestamp.isna().tolist() == [False, True, False, False, False]
    assert t.next_row_id is None
    renders(t)


def test_record_counts_that_add_up_beyond_a_long(shop):
    rewrite_orders_delete_manifest(shop, lambda recs: [r["data_file"].update(record_count=2 ** 62) for r in recs])
    t = Warehouse(str(shop.parent)).table("shop.orders")
    pf = t.puffin_files()
    assert pf.record_count.isna().tolist() == [True, True]
    assert [f.code for f in t.findings if f.code != "iceberg.table-relocated"] == ["iceberg.metadata-number-range"]
    assert t.findings[-1].message.startswith("record_count of ") and "adds up to 18,446,744,073,709,551,616" in \
        t.findings[-1].message
    renders(t)


def test_a_huge_array_costs_what_its_bytes_cost(shop):
    t = damage(shop, lambda md: md.__setitem__("snapshots", md["snapshots"] + [7] * 100_000))
    kept = [f for f in t.findings if f.code == "iceberg.metadata-field-type"]
    assert len(kept) == 1000 and kept[0].message == "snapshots[5] is an integer (7), not an object; skipped"
    capped = [f for f in t.findings if f.code == "findings.capped"]
    assert len(capped) == 1 and capped[0].message.startswith("99,000 more iceberg.metadata-field-type findings")
    assert t.snapshots().snapshot_id.tolist() == ORDERS_SNAPSHOTS
    html, _ = renders(t)
    assert len(html) < 1_000_000


def test_a_format_version_that_is_not_a_number(shop):
    t = damage(shop, lambda md: md.__setitem__("format-version", "3"))
    assert metadata_findings(t) == [("iceberg.metadata-field-type", "format-version is a string ('3'), not an integer")]
    assert t.metadata.format_version == 3
    renders(t)


def test_required_fields_per_format_version(shop):
    def change(md):
        for key in ("table-uuid", "last-sequence-number", "schemas", "sort-orders"):
            md.pop(key)
    t = damage(shop, change)
    assert metadata_findings(t) == [
        ("iceberg.metadata-field-missing", "table-uuid is missing"),
        ("iceberg.metadata-field-missing", "last-sequence-number is missing"),
        ("iceberg.metadata-field-missing", "schemas is missing"),
        ("iceberg.metadata-field-missing", "sort-orders is missing"),
    ]
    assert len(t.schema_fields()) == 0
    renders(t)
    assert len(t.snapshots()) == 5


def test_strict_raises_the_first_error(shop):
    edit_json(shop / ORDERS_CURRENT_METADATA, lambda md: md["snapshots"][3].__setitem__("summary", "broken"))
    with pytest.raises(InvalidFileError, match=r"iceberg.metadata-field-type: snapshots\[3\].summary is a string"):
        Table.from_folder(str(shop / "orders"), strict=True)
    with pytest.raises(PuffinError, match="iceberg.metadata-field-type"):
        Warehouse(str(shop.parent), strict=True).table("shop.orders")
    assert Warehouse(str(shop.parent), strict=True).table("shop.events").findings[0].code == "iceberg.table-relocated"
    assert Table.from_folder(str(shop / "orders")).findings[0].code == "iceberg.metadata-field-type"


def test_no_table_here_is_one_error(shop, tmp_path):
    with pytest.raises(TableNotFoundError, match="no table at"):
        Table.from_folder(str(tmp_path / "nothing"))
    (shop / "orders/metadata/v7.metadata.json").write_bytes(b"\x00\xff not json")
    with pytest.raises(TableNotFoundError, match="not valid JSON table metadata") as info:
        Table.from_folder(str(shop / "orders"))
    assert isinstance(info.value, SourceError) and info.value.location.endswith("v7.metadata.json")
    (shop / "orders/metadata/v7.metadata.json").write_text("[1, 2]")
    with pytest.raises(TableNotFoundError, match="the JSON is an array, not an object"):
        Table.from_folder(str(shop / "orders"))
    with pytest.raises(TableNotFoundError):
        Table.from_metadata(str(shop / "orders/metadata/v99.metadata.json"))
    with pytest.raises(NotInTableError, match="no table 'shop.nope'"):
        Warehouse(str(shop.parent)).table("shop.nope")


def test_asking_for_what_the_table_does_not_have(shop):
    t = Warehouse(str(shop.parent)).table("shop.orders")
    with pytest.raises(NotInTableError, match="no deletion vector for nope.parquet"):
        t.read_dv("nope.parquet")
    with pytest.raises(NotInTableError, match="nope.parquet is not a live delete file"):
        t.delete_file_contents("nope.parquet")


def test_a_position_delete_file_that_is_not_parquet(shop):
    (shop / LEGACY_DELETES).write_bytes(b"not parquet at all" * 10)
    t = Warehouse(str(shop.parent)).table("shop.legacy")
    where = f"{shop}/{LEGACY_DELETES}"
    with pytest.raises(InvalidFileError, match=f"{where}: not a readable Parquet position-delete file "
                                               r"\(180 bytes\)"):
        t.delete_file_contents(f"{WRITTEN_ROOT}/shop/{LEGACY_DELETES}")
    found = t.check()
    assert [(f.code, f.file) for f in found] == [
        ("iceberg.position-delete-unreadable", f"{WRITTEN_ROOT}/shop/{LEGACY_DELETES}"),
        ("iceberg.file-size-mismatch", f"{WRITTEN_ROOT}/shop/{LEGACY_DELETES}")]
    html = t.to_html()
    assert "Traceback" not in html and "not a readable Parquet position-delete file" in html
    cd = t.commit_deletes()
    assert [f.code for f in cd.findings] == ["iceberg.position-delete-unreadable"]
    assert "Traceback" not in cd.to_html()
    assert len(t.snapshots()) == 2
    row = t.summary()  # no deleted-row count rather than one that misses the unreadable file's 2,000
    assert (row["records"], row["deleted_rows"], row["live_rows"], row["health"]) == (20_000, None, None, "error")
    assert "deleted rows are not known" in row["problem"]
    assert t.timeline().live_rows.isna().tolist() == [False, True]


def test_the_cli_shows_the_findings_first_and_what_could_be_read(shop, capsys):
    edit_json(shop / ORDERS_CURRENT_METADATA, lambda md: md["snapshots"][3].__setitem__("summary", "broken"))
    code = main(["table", str(shop.parent), "--table", "shop.orders"])
    printed = capsys.readouterr().out.splitlines()
    assert code == 1
    assert printed[0] == ("error iceberg.metadata-field-type: snapshots[3].summary is a string ('broken'), "
                          "not an object")
    assert "snapshots  5; current 6590999396394158857" in printed
    assert main(["table", str(shop.parent), "--table", "shop.orders", "snapshots"]) == 1
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("error iceberg.metadata-field-type") and len(printed) > 5
    assert main(["table", str(shop.parent), "--table", "shop.orders", "check"]) == 1
    assert "iceberg.metadata-field-type" in capsys.readouterr().out
    assert main(["table", str(shop.parent), "--table", "shop.orders", "stats", "--format", "json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)[0]["blob_count"] == 5 and "iceberg.metadata-field-type" in captured.err
    assert main(["table", str(shop.parent), "--table", "shop.orders", "--strict"]) == 2
    assert "iceberg.metadata-field-type" in capsys.readouterr().err
    assert main(["table", str(shop.parent), "--table", "shop.orders", "--snapshot", "99"]) == 2
    assert "shop.orders: no snapshot 99" in capsys.readouterr().err


def test_the_browser_opens_a_table_with_no_current_snapshot(shop):
    pytest.importorskip("ipywidgets")
    edit_json(shop / ORDERS_CURRENT_METADATA, lambda md: md.__setitem__("current-snapshot-id", 12345))
    browser = Warehouse(str(shop.parent)).browse()
    browser.table.value = "shop.orders"
    assert "iceberg.metadata-id-unresolved: current-snapshot-id 12345 is not the id of any snapshot" \
        in browser.status.value
    assert len(browser.snapshot.options) == 5 and browser.snapshot.value is None
    assert "shop.orders: 5 snapshots" in browser.timeline.value


@pytest.mark.long
def test_random_single_field_damage_never_crashes():
    """A short fixed-seed run of tests/fuzz/fuzz_table_metadata.py (the long run: ``--cases 600``)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "fuzz"))
    import fuzz_table_metadata

    report = fuzz_table_metadata.run(12, seed=1)
    assert report["cases"] == 12 and report["crashes"] == {}, report
    assert report["outcomes"].get("ok", 0) + report["outcomes"].get("documented", 0) == 12


def test_a_damaged_duckdb_table(tmp_path):
    import shutil

    root = tmp_path / "dv_single"
    shutil.copytree(FIXTURES / "engines" / "duckdb" / "dv_single", root)

    def change(md):
        md["snapshots"][3]["summary"] = ["delete"]
        md["snapshots"][3]["first-row-id"] = "100000"
    edit_json(root / "metadata" / "v5.metadata.json", change)
    t = Table.from_folder(str(root))
    assert metadata_findings(t) == [
        ("iceberg.metadata-field-type", "snapshots[3].summary is an array (['delete']), not an object"),
        ("iceberg.metadata-field-type", "snapshots[3].first-row-id is a string ('100000'), not an integer"),
    ]
    snaps = t.snapshots()
    assert len(snaps) == 4 and snaps.operation.tolist()[-1] == "" and snaps.first_row_id.isna().tolist()[-1]
    # the live rows the fixture's README lists after each step (DuckDB's own summary of step 3 says 67,142:
    # it adds the merged DV's 22,858 to the superseded one's 10,000); the damaged summary of step 4 does not
    # matter, its manifests are read
    live = t.timeline().live_rows
    assert live.tolist() == [100_000, 90_000, 77_142, 77_111]
    html = t.to_html()
    assert "Traceback" not in html and "snapshots[3].summary" in html
    assert [f.code for f in t.check()][:2] == ["iceberg.metadata-field-type", "iceberg.metadata-field-type"]


def test_puffin_files_of_a_snapshot_whose_manifest_list_is_missing(shop):
    t = damage(shop, lambda md: md["snapshots"][4].__setitem__("manifest-list", "x"))
    # "x" is a relative path, which would be read from wherever the process runs: outside the table, not read
    assert [code for code, _ in metadata_findings(t)] == ["source.outside-scope"]
    pf = t.puffin_files()
    assert pf.role.tolist() == ["statistics"] and pf.blobs.tolist() == [5]
    unreadable = [f for f in t.check(read_files=False) if f.code == "iceberg.manifest-unreadable"]
    assert len(unreadable) == 1 and unreadable[0].message.startswith(
        f"the manifest list of snapshot {ORDERS_SNAPSHOT} cannot be read, so none of its files are listed: ")
    html, _ = renders(t)
    assert "iceberg.manifest-unreadable" in html


def test_a_missing_position_delete_file_is_a_finding_in_the_delete_debt(shop):
    (shop / LEGACY_DELETES).unlink()
    t = Warehouse(str(shop.parent)).table("shop.legacy")
    debt = t.delete_debt()  # the one error rule: what depends on the file is not known (never 0), the rest said
    assert (debt.records, debt.deleted_rows, debt.counted_deleted_rows) == (20_000, None, 0)
    assert debt.coverage.covers == "0 of 1 position-delete files read"
    missing = [f for f in t.findings if f.code == "table.file-vanished"]
    assert len(missing) == 1 and missing[0].file == f"{WRITTEN_ROOT}/shop/{LEGACY_DELETES}"
    assert missing[0].message.startswith(f"position-delete file {shop}/{LEGACY_DELETES} (written as ") and \
        missing[0].message.endswith(": the rows it deletes are not counted, so deleted rows are unknown")
    assert debt.findings == missing
    assert "Traceback" not in t.to_html()


def test_a_data_folder_that_cannot_be_listed_is_a_finding_not_missing_files(shop):
    t = Table.from_folder(str(shop / "orders"), relocate={f"{WRITTEN_ROOT}/shop/orders/data":
                                                           "http://127.0.0.1:9/orders/data"})
    found = t.check()
    unlisted = [f for f in found if f.code == "iceberg.folder-unlisted"]
    data = "http://127.0.0.1:9/orders/data"  # the Puffin DV file's folder, then the four bucket folders
    assert [f.file for f in unlisted] == [data] + [f"{data}/customer_id_bucket={b}" for b in range(4)]
    assert unlisted[0].message.endswith("; the files in it are not checked")
    # no "does not exist" for the files the listing could not see (the DV check that opens the Puffin
    # file still says it cannot open it)
    assert not [f for f in found if f.code == "iceberg.file-missing" and f.message.endswith("does not exist")]


def test_a_delete_file_listed_thousands_of_times_is_read_once_and_is_a_finding(shop):
    """A delete manifest that repeats its position-delete entry 5,000 times: the deletes apply once (the
    debt, the positions, the commit's view), the file is read once, and check() names the listing."""
    t = Warehouse(str(shop.parent)).table("shop.legacy")
    before = (t.delete_debt().deleted_rows, t.commit_deletes().to_pandas(),
              {p: len(t.deletions(p)) for p in t.deleted_rows_per_file()["file_path"]})
    list_path = shop / "legacy" / "metadata" / Path(t.snapshot().manifest_list).name
    manifests = [m for m in t.source.manifest_records() if m["content"] == 1]
    assert len(manifests) == 1
    delete_manifest = shop / "legacy" / "metadata" / Path(manifests[0]["manifest_path"]).name
    new_length = rewrite_avro(delete_manifest, lambda records: records * 5000)

    def fix_length(records):
        for r in records:
            if r["manifest_path"] == manifests[0]["manifest_path"]:
                r["manifest_length"] = new_length
        return records

    rewrite_avro(list_path, fix_length)
    t = Warehouse(str(shop.parent)).table("shop.legacy")
    reads = []
    real = t.source.read_parquet
    t.source.read_parquet = lambda path, columns=None: reads.append(path) or real(path, columns)
    assert before[0] == 2_000 and sum(before[2].values()) == 2_000 and len(before[1]) >= 1
    assert t.delete_debt().deleted_rows == before[0]
    assert reads == [f"{WRITTEN_ROOT}/shop/{LEGACY_DELETES}"]
    assert {p: len(t.deletions(p)) for p in t.deleted_rows_per_file()["file_path"]} == before[2]
    pd.testing.assert_frame_equal(t.commit_deletes().to_pandas(), before[1])
    twice = [f for f in t.check() if f.code == "iceberg.file-listed-twice"]
    assert len(twice) == 1 and twice[0].file == f"{WRITTEN_ROOT}/shop/{LEGACY_DELETES}"
    assert twice[0].message.startswith(f"1 file is named by more than one live entry of snapshot "
                                       f"{t.snapshot().snapshot_id} (4,999 entries more than files): "
                                       f"{Path(LEGACY_DELETES).name}; ")
    assert "Traceback" not in t.to_html()


def test_a_million_numbers_in_an_array_of_objects_cost_one_pass(shop):
    """statistics holds 1,000,000 numbers before its one real entry: the first 1,000 are listed, the rest
    counted in one capped finding, and the real statistics file is still read."""
    t = damage(shop, lambda d: d.update(statistics=list(range(1_000_000)) + d["statistics"]))
    found = metadata_findings(t)
    assert found[0] == ("iceberg.metadata-field-type", "statistics[0] is an integer (0), not an object; skipped")
    assert found[999] == ("iceberg.metadata-field-type",
                          "statistics[999] is an integer (999), not an object; skipped")
    assert found[1000:] == [("findings.capped", "999,000 more iceberg.metadata-field-type findings are not listed "
                                                "(1,000,000 in all; a file lists at most 1,000 of one code)")]
    assert t.statistics_files()["snapshot_id"].tolist() == [ORDERS_SNAPSHOT]


def test_a_dv_footer_blob_without_an_offset_is_a_finding(shop):
    """Table fuzzer class (check(): ``int(None)`` over the footer's blob offsets): the orders DV file's footer
    with its first blob's offset null.  The three other DVs still match their blobs; the first one's entry
    is an offset mismatch naming what the footer holds."""
    import struct

    t = Warehouse(str(shop.parent)).table("shop.orders")
    dvs = t.dvs()
    path = Path(t.locate(dvs.file_path.iloc[0]))
    data = path.read_bytes()
    n = struct.unpack("<i", data[-12:-8])[0]
    footer = json.loads(data[-12 - n:-12])
    assert [b["offset"] for b in footer["blobs"]] == dvs.content_offset.tolist() == [4, 8236, 16468, 24700]
    footer["blobs"][0]["offset"] = None
    payload = json.dumps(footer).encode()
    path.write_bytes(data[:-12 - n] + payload + struct.pack("<i", len(payload)) + data[-8:])

    t = Warehouse(str(shop.parent)).table("shop.orders")
    found = [(f.code, f.offset) for f in t.check() if f.severity.value == "error"]
    assert found == [("iceberg.file-size-mismatch", None), ("iceberg.dv-offset-mismatch", 4)]
    mismatch = next(f for f in t.check() if f.code == "iceberg.dv-offset-mismatch")
    assert mismatch.message.endswith("the Puffin footer has no blob at offset 4 "
                                     "(blobs at None+8232, 8236+8232, 16468+8232, 24700+8232)")
    assert main(["table", str(shop.parent), "--table", "shop.orders", "check"]) == 1


def test_a_statistics_blob_naming_a_million_field_ids_costs_a_bounded_report(shop):
    """Table fuzzer class (a worker out of memory; 5 s of CPU in one check()): a blob-metadata ``fields`` array
    of a million ids none of which the schema has made a million findings, a 7 MB message and a 7 MB
    ``columns`` string in every card.  Twenty are named, the rest counted, and the messages stay short.  Only the
    first 10,000 ids are read (the fuzzer's next class: every parse of the metadata walked the million)."""
    def change(md):
        md["statistics"][0]["blob-metadata"][3]["fields"] = list(range(100, 1_000_100))
    t = damage(shop, change)
    assert metadata_findings(t) == [("iceberg.metadata-list-long", "statistics[0].blob-metadata[3].fields lists "
                                                                   "1,000,000 field ids; the first 10,000 are read")]
    found = [f for f in t.check() if f.code == "iceberg.stats-field-unknown"]
    assert len(found) == 21
    assert found[0].message == ("apache-datasketches-theta-v1 blob is for field id 100, which no schema of the "
                                "table has")
    assert found[-1].message == ("apache-datasketches-theta-v1 blob names 9,980 more field ids no schema of "
                                 "the table has")
    [mismatch] = [f for f in t.check() if f.code == "iceberg.stats-blob-mismatch"]
    assert mismatch.message.startswith("blob 3: metadata fields [100, 101, 102,")
    assert mismatch.message.endswith(", ...] but footer fields [4]")
    columns = t.statistics_files()["columns"].tolist()[0][3]
    assert columns.startswith("#100,#101,") and columns.endswith(",#199,… (9,900 more)")
    assert max(len(f.message) for f in t.check()) < 1000
    renders(t)


def test_a_dv_listed_thousands_of_times_is_decoded_once_by_check(shop):
    """Table fuzzer class (a worker out of memory): a delete manifest repeating one DV entry 5,000 times made
    check() decode that DV 5,000 times and hold every copy of its positions (1.2 GB for DuckDB's table).
    The DVs of a Puffin file are read once per distinct range; the findings are those of the listing."""
    from puffin_explorer.iceberg.dvreads import dv_reader

    rewrite_orders_delete_manifest(shop, lambda records: records.extend([records[0]] * 4999))
    t = Warehouse(str(shop.parent)).table("shop.orders")
    assert len(t.dvs()) == 5003
    read = []
    reader = dv_reader(t.source)
    real = reader.read_dvs
    reader.read_dvs = lambda entries, *a, **kw: read.append(len(entries)) or real(entries, *a, **kw)
    found = t.check()
    assert read == [4]  # the Puffin file's four distinct DVs, in one pass
    codes = {f.code for f in found if f.severity.value == "error"}
    assert "iceberg.file-listed-twice" in codes and "iceberg.dv-duplicate" in codes
    assert not codes & {"iceberg.dv-unreadable", "iceberg.dv-cardinality-mismatch", "iceberg.dv-offset-mismatch"}


def test_statistics_listed_ten_thousand_times_are_checked_once(shop, monkeypatch):
    """Table fuzzer class (a stall: check() 3.4 s, the command line's 4.4 s): the metadata's statistics list
    repeated 10,000 times opened and validated the same Puffin file 10,000 times.  Each distinct entry is
    checked once and each file opened once: the findings are the undamaged table's."""
    from puffin_explorer.iceberg import statistics_checks

    t = Warehouse(str(shop.parent)).table("shop.orders")
    expected = sorted((f.code, f.message) for f in t.check() if f.code.startswith("iceberg.stats"))
    t = damage(shop, lambda md: md.update(statistics=md["statistics"] * 10_000))
    opened = []
    real = statistics_checks.open_puffin
    monkeypatch.setattr(statistics_checks, "open_puffin", lambda table, path, out: opened.append(path) or real(table, path, out))
    found = sorted((f.code, f.message) for f in t.check() if f.code.startswith("iceberg.stats"))
    stats_path = t.metadata.statistics[0].path
    assert found == expected and opened.count(stats_path) == 1
    assert len(t.statistics_files()) == 10_000  # the listing itself is shown as it is


def test_a_sequence_number_beyond_a_float_in_the_puffin_files_view(shop):
    """Table fuzzer class (a crash in puffin_files(): 'cannot safely cast non-equivalent float64 to int64'):
    DV entries with sequence number 2^62 + 1 beside the statistics file's row without one went through
    float64.  The column is built from the values: exact, and <NA> for the statistics row."""
    def change(records):
        for r in records:
            r["sequence_number"] = 2 ** 62 + 1
    rewrite_orders_delete_manifest(shop, change)
    t = Warehouse(str(shop.parent)).table("shop.orders")
    p = t.puffin_files()
    assert p.role.tolist() == ["deletion-vectors", "statistics"]
    assert p.sequence_number.tolist()[0] == 2 ** 62 + 1 and p.sequence_number.isna().tolist() == [False, True]
    assert main(["table", str(shop.parent), "--table", "shop.orders", "puffin"]) in (0, 1)


def test_read_dv_ahead_never_recurses_over_a_range_past_the_file(shop):
    """Table fuzzer class (RecursionError in commit_deletes): after eight read_dv calls on one Puffin file the
    next DVs are read together by read_dvs, whose ranges past the end of the file go back to read_dv one at a
    time, which read a batch ahead again.  One DV of shop.orders claims 60,000 bytes (the file has 34,239):
    it raises its InvalidFileError each time, and the other three read as they are."""
    def change(records):
        records[1]["data_file"]["content_size_in_bytes"] = 60_000
    rewrite_orders_delete_manifest(shop, change)
    t = Warehouse(str(shop.parent)).table("shop.orders")
    rows = [r for _, r in t.dvs().sort_values("content_offset").iterrows()]
    bad = [r for r in rows if r.content_size_in_bytes == 60_000]
    assert len(rows) == 4 and len(bad) == 1
    for _ in range(4):  # past READ_DV_BATCH_AFTER calls on the file
        for r in rows:
            if r.content_size_in_bytes == 60_000:
                with pytest.raises(InvalidFileError, match="beyond the end of the file"):
                    t.read_dv(r.to_dict())
            else:
                assert t.read_dv(r.to_dict()).cardinality == r.record_count
    t.commit_deletes()
