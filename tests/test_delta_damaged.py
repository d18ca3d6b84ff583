"""Delta tables with one damaged field: a finding naming the file, line and field, and the rest of the table exact.

Each test copies a real table from the fixtures, damages one field of one log action
(or _last_checkpoint, a checkpoint part, a DV file), opens it, renders its card and
runs every public method: nothing raises, the findings are exact and the totals are
what the undamaged actions say.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from puffin_explorer import DeletionVector, DeltaTable
from puffin_explorer.errors import (InvalidFileError, NotInTableError, PuffinError, SourceError,
                                    TableNotFoundError)
from puffin_explorer.findings import is_known

from delta_tables import write_delta_table

try:
    from _warehouse_fixtures import copy_fixture_table as _copy
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import copy_fixture_table as _copy

SMALL = "engines/delta/kernel-rs-table-with-dv-small"
LARGE = "engines/delta/delta-spark-table-with-dv-large"
#: The large table at version 4 (its README): data files, records, deleted rows, live rows, DVs.
LARGE_V4 = {"data_files": 22, "records": 2004, "deleted_rows": 11, "live_rows": 1993, "dvs": 8}
PART_00001 = "part-00001-5dbf0ba2-220a-4770-8e26-18a77cf875f0-c000.snappy.parquet"
PART_00012 = "part-00012-9b83c213-31ff-4b2c-a5d9-be1a2bc2431d-c000.snappy.parquet"
NEW_AT_V4 = "part-00000-7c52eadd-8da7-4782-a5d5-621cd92cab11-c000.snappy.parquet"


def _edit(root, version: int, line: int, change) -> None:
    """Apply ``change(action_body)`` to the action on 1-based ``line`` of commit ``version``."""
    path = root / "_delta_log" / f"{version:020d}.json"
    lines = path.read_text().splitlines()
    obj = json.loads(lines[line - 1])
    change(next(iter(obj.values())))
    lines[line - 1] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n")


def _facts(f):
    """What a test asserts of a finding: code, file name, line, field."""
    return (f.code, os.path.basename(f.file), getattr(f, "line", None), getattr(f, "field", ""))


def _exercise(t: DeltaTable) -> dict:
    """Every public answer of the table (none may raise); every ``dvs()`` row reads with ``read_dv``."""
    from puffin_explorer.spark.planner import plan_table

    bundle = t._repr_mimebundle_()
    assert set(bundle) >= {"text/plain", "text/html"} and "<script" not in bundle["text/html"]
    dvs = t.dvs()
    read = [t.read_dv(row) for _, row in dvs.iterrows()]
    assert all(isinstance(dv, DeletionVector) for dv in read)
    plan = plan_table(t)
    out = {"text": bundle["text/plain"], "html": bundle["text/html"], "versions": t.versions(), "files": t.files(),
           "dvs": dvs, "read": read, "per_file": t.deleted_rows_per_file(), "totals": t.totals(),
           "check": t.check(), "decoded": t.deletion_vectors(), "dv_files": t.dv_files(),
           "candidates": t.compaction_candidates(), "plan_dvs": plan.dvs(), "plan_files": plan.data_files(),
           "plan": plan.describe("driver"), "summary": t.summary()}
    for f in t.files().file_path:
        t.deletions(f)
    assert all(is_known(f.code) for f in out["check"])
    return out


# ---- table.py: partitionValues not an object ------------------------------------------------------
def test_partition_values_not_an_object_is_ignored_with_its_line(fixtures, tmp_path):
    root = _copy(fixtures, LARGE, tmp_path)
    _edit(root, 4, 2, lambda a: a.update(partitionValues="x"))
    t = DeltaTable(str(root))
    assert [_facts(f) for f in t.findings] == [
        ("delta.action-field", "00000000000000000004.json", 2, "add.partitionValues")]
    assert t.findings[0].message == ('00000000000000000004.json line 2: add.partitionValues: expected an object of '
                                     'strings, got "x"; the field is ignored')
    assert t.findings[0].offset == sum(len(x) + 1 for x in (root / "_delta_log" / "00000000000000000004.json")
                                       .read_text().splitlines()[:1])
    r = _exercise(t)
    assert r["totals"] == LARGE_V4
    files = r["files"].set_index("file_path")
    assert files.partition_values[NEW_AT_V4] == {} and files.size_in_bytes[NEW_AT_V4] == 600
    assert "add.partitionValues" in r["text"] and "add.partitionValues" in r["html"]
    assert [_facts(f) for f in r["check"] if f.severity.value == "error"] == [
        ("delta.action-field", "00000000000000000004.json", 2, "add.partitionValues")]
    from puffin_explorer.spark.planner import plan_table

    by_folder = plan_table(str(root))  # the Spark planner's Delta path opens the folder itself
    assert by_folder.data_files().num_rows == 22 and by_folder.dvs().num_rows == 8


def test_partition_values_with_a_number_and_strict_raises(fixtures, tmp_path):
    root = _copy(fixtures, LARGE, tmp_path)
    _edit(root, 4, 2, lambda a: a.update(partitionValues={"day": 5}))
    assert [_facts(f) for f in DeltaTable(str(root)).findings] == [
        ("delta.action-field", "00000000000000000004.json", 2, "add.partitionValues")]
    with pytest.raises(InvalidFileError) as err:
        DeltaTable(str(root), strict=True)
    assert err.value.code == "delta.action-field"
    assert str(err.value).startswith("delta.action-field: 00000000000000000004.json line 2: add.partitionValues: "
                                     'expected an object of strings, got {"day": 5}')


# ---- table.py: operationParameters not an object --------------------------------------------------
def test_operation_parameters_not_an_object(fixtures, tmp_path):
    root = _copy(fixtures, LARGE, tmp_path)
    _edit(root, 3, 1, lambda a: a.update(operationParameters=["predicate"], timestamp=10 ** 17))
    t = DeltaTable(str(root))
    assert [_facts(f) for f in t.findings] == [
        ("delta.action-field", "00000000000000000003.json", 1, "commitInfo.operationParameters")]
    r = _exercise(t)
    v = r["versions"]
    assert v.operation.tolist() == ["WRITE", "DELETE", "WRITE", "DELETE", "WRITE"]
    assert v.operation_parameters[3] == {} and v.operation_parameters[2] == {"mode": "Append", "partitionBy": "[]"}
    assert str(v.timestamp[3]) == "NaT"  # an integer, but past any date pandas holds
    assert v.live_rows.tolist() == [2000, 1995, 1997, 1991, 1993]
    assert r["totals"] == LARGE_V4


# ---- table.py 200/219: dvs() lists a DV that read_dv() of the same row can read -------------------
def test_two_live_entries_of_one_path_and_every_dvs_row_reads(fixtures, tmp_path):
    root = _copy(fixtures, LARGE, tmp_path)
    _edit(root, 1, 2, lambda a: a.update(path=5))  # the remove of part-00001 is skipped: its v0 add stays live
    t = DeltaTable(str(root))
    assert [_facts(f) for f in t.findings] == [("delta.action-field", "00000000000000000001.json", 2, "remove.path")]
    assert t.findings[0].message == ("00000000000000000001.json line 2: remove.path: expected a non-empty string, "
                                     "got 5; the remove action is skipped")
    r = _exercise(t)
    assert r["totals"] == {"data_files": 23, "records": 2104, "deleted_rows": 11, "live_rows": 2093, "dvs": 8}
    row = r["dvs"][r["dvs"].data_file == PART_00001].iloc[0]
    assert (row.offset, row.cardinality) == (43, 2)
    assert t.read_dv(row).positions().tolist() == t.read_dv(PART_00001).positions().tolist()
    assert t.read_dv(row).cardinality == 2
    assert len(t.deletions(PART_00001)) == 2
    dup = [f for f in r["check"] if f.code == "delta.duplicate-file"]
    assert [(f.file, f.message) for f in dup] == [
        (PART_00001, f"2 live add actions for {PART_00001} (with different DVs)")]


def test_asking_for_what_is_not_there_raises_not_in_table(fixtures, tmp_path):
    t = DeltaTable(str(fixtures / LARGE))
    no_dv = NEW_AT_V4
    with pytest.raises(NotInTableError) as err:
        t.read_dv(no_dv)
    assert str(err.value) == f"delta-spark-table-with-dv-large: {no_dv} has no deletion vector at version 4"
    assert isinstance(err.value, KeyError) and isinstance(err.value, PuffinError)
    with pytest.raises(NotInTableError, match="is not a live data file at version 4"):
        t.read_dv("part-99999.parquet")
    assert t.deletions(no_dv).tolist() == []
    with pytest.raises(NotInTableError) as err:
        DeltaTable(str(fixtures / LARGE), version=7)
    assert str(err.value).endswith("the log has no version 7 (latest 4)")


def test_no_table_at_the_location(tmp_path):
    (tmp_path / "empty" / "_delta_log").mkdir(parents=True)
    for where in (tmp_path / "nothing", tmp_path / "empty"):
        with pytest.raises(TableNotFoundError) as err:
            DeltaTable(str(where))
        assert isinstance(err.value, SourceError) and err.value.location.endswith(where.name)
        assert str(err.value).startswith(f"no Delta table at {err.value.location}")


# ---- log.py: stats that are not a JSON object ----------------------------------------------------
@pytest.mark.parametrize("stats,field,problem", [
    (7, "add.stats", "expected a JSON string, got 7"),
    ("[1, 2]", "add.stats", "expected a JSON object, got [1, 2]"),
    ("{\"numRecords\": \"2\"}", "add.stats.numRecords", 'expected an integer, got "2"'),
    ("{\"numRecords\": -2}", "add.stats.numRecords", "expected an integer from 0 to 9,223,372,036,854,775,807, got -2"),
])
def test_stats_that_are_not_a_count(fixtures, tmp_path, stats, field, problem):
    root = _copy(fixtures, LARGE, tmp_path)
    _edit(root, 4, 2, lambda a: a.update(stats=stats))
    t = DeltaTable(str(root))
    assert [_facts(f) for f in t.findings] == [("delta.action-field", "00000000000000000004.json", 2, field)]
    assert t.findings[0].message == f"00000000000000000004.json line 2: {field}: {problem}; numRecords is unknown"
    r = _exercise(t)
    assert r["totals"] == {**LARGE_V4, "records": 2002, "live_rows": 1991}
    assert r["files"].set_index("file_path").num_records.isna()[NEW_AT_V4]


def test_stats_not_json_on_a_file_with_a_dv(fixtures, tmp_path):
    root = _copy(fixtures, SMALL, tmp_path)
    _edit(root, 1, 3, lambda a: a.update(stats="{\"numRecords\": 10"))
    t = DeltaTable(str(root))
    assert [_facts(f) for f in t.findings] == [("delta.action-field", "00000000000000000001.json", 3, "add.stats")]
    assert t.findings[0].message.startswith("00000000000000000001.json line 3: add.stats: not JSON: ")
    r = _exercise(t)
    assert r["totals"] == {"data_files": 1, "records": 0, "deleted_rows": 2, "live_rows": -2, "dvs": 1}
    assert [dv.positions().tolist() for dv in r["read"]] == [[0, 9]]
    assert sorted(f.code for f in r["check"]) == ["delta.action-field", "delta.dv-num-records-missing"]


# ---- descriptor.py: descriptor fields of the wrong type or size ----------------------------------
@pytest.mark.parametrize("field,value,problem", [
    ("offset", "x", 'expected an integer, got "x"'),
    ("sizeInBytes", 10 ** 12, "expected an integer from 0 to 2,147,483,647, got 1,000,000,000,000"),
    ("cardinality", None, "missing"),
    ("storageType", 117, "expected a string, got 117"),
])
def test_descriptor_field_of_the_wrong_type_skips_the_add(fixtures, tmp_path, field, value, problem):
    root = _copy(fixtures, LARGE, tmp_path)
    _edit(root, 3, 10, lambda a: a["deletionVector"].update({field: value}))
    t = DeltaTable(str(root))
    assert [_facts(f) for f in t.findings] == [
        ("delta.action-field", "00000000000000000003.json", 10, f"add.deletionVector.{field}")]
    assert t.findings[0].message == (f"00000000000000000003.json line 10: add.deletionVector.{field}: {problem}; "
                                     "the add action is skipped")
    r = _exercise(t)
    # line 4 removed part-00012 and its new add (line 10) is skipped: the file is gone, the rest is exact
    assert r["totals"] == {"data_files": 21, "records": 1904, "deleted_rows": 9, "live_rows": 1895, "dvs": 7}
    assert PART_00012 not in set(r["files"].file_path)
    assert sum(dv.cardinality for dv in r["read"]) == 9


def test_a_cardinality_of_two_to_the_62_is_a_finding_not_an_allocation(fixtures, tmp_path):
    root = _copy(fixtures, LARGE, tmp_path)
    _edit(root, 3, 10, lambda a: a["deletionVector"].update(cardinality=2 ** 62))
    t = DeltaTable(str(root))
    assert [_facts(f) for f in t.findings] == [
        ("delta.dv-cardinality-range", "00000000000000000003.json", 10, "add.deletionVector.cardinality")]
    assert t.findings[0].message == ("00000000000000000003.json line 10: add.deletionVector.cardinality: cardinality "
                                     "4,611,686,018,427,387,904 is more than the file's 100 rows (numRecords)")
    r = _exercise(t)
    assert t.read_dv(PART_00012).positions().tolist() == [26, 40]  # the bytes decide what is deleted
    mismatch = [f for f in r["check"] if f.code == "delta.dv-cardinality-mismatch"]
    assert [f.message for f in mismatch] == [
        f"{PART_00012}: descriptor cardinality 4,611,686,018,427,387,904 but the DV holds 2 positions"]


def test_a_size_past_the_dv_file_reads_as_an_empty_dv_with_its_finding(fixtures, tmp_path):
    root = _copy(fixtures, LARGE, tmp_path)
    _edit(root, 3, 10, lambda a: a["deletionVector"].update(sizeInBytes=2_000_000_000))
    t = DeltaTable(str(root))
    assert t.findings == []  # a well-typed descriptor: only the DV file can say it is wrong
    r = _exercise(t)
    dv = t.read_dv(PART_00012)
    assert dv.cardinality == 0 and [f.code for f in dv.findings] == ["delta.dv-range"]
    assert dv.findings[0].message.startswith(f"{PART_00012}: DV range [87, 2,000,000,095) runs past the end of the "
                                             "259-byte file")
    codes = sorted(f.code for f in r["check"])
    assert codes == ["delta.dv-size-mismatch"]
    with pytest.raises(InvalidFileError, match="delta.dv-range"):
        DeltaTable(str(root), strict=True).read_dv(PART_00012)


@pytest.mark.parametrize("change,code,field", [
    ({"storageType": "z"}, "delta.dv-storage-type", "add.deletionVector.storageType"),
    ({"pathOrInlineDv": "~~~~~~~~~~~~~~~~~~~~"}, "delta.dv-path", "add.deletionVector.pathOrInlineDv"),
    ({"storageType": "i", "pathOrInlineDv": "abc"}, "delta.dv-inline", "add.deletionVector.pathOrInlineDv"),
])
def test_descriptor_that_does_not_resolve_is_listed_and_reads_empty(fixtures, tmp_path, change, code, field):
    root = _copy(fixtures, SMALL, tmp_path)
    _edit(root, 1, 3, lambda a: a["deletionVector"].update(change))
    t = DeltaTable(str(root))
    assert [_facts(f) for f in t.findings] == [(code, "00000000000000000001.json", 3, field)]
    r = _exercise(t)
    assert len(r["dvs"]) == 1 and [dv.cardinality for dv in r["read"]] == [0]
    assert [f.code for f in r["read"][0].findings] == [code]
    # the descriptor's finding once (with its line), and the DV file nobody points at
    assert sorted(f.code for f in r["check"]) == sorted([code, "delta.dv-file-unreferenced"])


def test_a_dv_path_storage_cannot_look_up_is_a_finding(fixtures, tmp_path):
    """Table fuzzer class (check(): a SourceError escaped): a pathOrInlineDv whose prefix is 2,000 characters
    names a folder no file system can look up (ENAMETOOLONG, not "missing").  The DV is unreadable and its
    folder unlisted, as findings; everything else reads."""
    root = _copy(fixtures, SMALL, tmp_path)
    _edit(root, 1, 3, lambda a: a["deletionVector"].update(pathOrInlineDv="0" * 2000 + a["deletionVector"][
        "pathOrInlineDv"][-20:]))
    t = DeltaTable(str(root))
    r = _exercise(t)
    assert [dv.cardinality for dv in r["read"]] == [0]
    found = sorted((f.code, f.message.split(":")[0][-60:]) for f in r["check"])
    assert [code for code, _ in found] == ["delta.dv-file-unreferenced", "delta.dv-unreadable",
                                           "delta.folder-unlisted"]
    assert all("File name too long" in f.message or f.code == "delta.dv-file-unreferenced" for f in r["check"])


# ---- display/delta_view.py: readerFeatures not a list, nulls in the tables -----------------------
def test_reader_features_not_a_list(fixtures, tmp_path):
    root = _copy(fixtures, SMALL, tmp_path)
    _edit(root, 0, 2, lambda a: a.update(readerFeatures="deletionVectors"))
    t = DeltaTable(str(root))
    assert [_facts(f) for f in t.findings] == [
        ("delta.action-field", "00000000000000000000.json", 2, "protocol.readerFeatures")]
    assert t.reader_features == [] and t.protocol["minReaderVersion"] == 3
    r = _exercise(t)
    assert "<i>reader features</i> none<" in r["html"]
    assert sorted(f.code for f in r["check"]) == ["delta.action-field", "delta.protocol-feature"]
    assert r["totals"] == {"data_files": 1, "records": 10, "deleted_rows": 2, "live_rows": 8, "dvs": 1}


def test_inline_dvs_render_with_empty_offsets(tmp_path):
    root = str(tmp_path / "t")
    write_delta_table(root, [100, 100], {0: [0, 5, 99], 1: [7]}, storage="i")
    t = DeltaTable(root)
    r = _exercise(t)
    assert r["dvs"].offset.isna().all()
    assert r["totals"] == {"data_files": 2, "records": 200, "deleted_rows": 4, "live_rows": 196, "dvs": 2}
    assert "deletion vectors" in r["text"]


# ---- log lines, checkpoints, _last_checkpoint ----------------------------------------------------
def test_a_line_that_is_not_json_is_named_by_its_number(fixtures, tmp_path):
    root = _copy(fixtures, SMALL, tmp_path)
    log = root / "_delta_log" / "00000000000000000001.json"
    lines = log.read_text().splitlines()
    log.write_text("\n".join([lines[0], lines[1], '{"add": {"path": "x"', lines[2], '["add"]']) + "\n")
    t = DeltaTable(str(root))
    assert [(f.code, f.line) for f in t.findings] == [("delta.log-json", 3), ("delta.log-json", 5)]
    assert t.findings[1].message == '00000000000000000001.json line 5: not an object holding one action: ["add"]'
    r = _exercise(t)
    assert r["totals"] == {"data_files": 1, "records": 10, "deleted_rows": 2, "live_rows": 8, "dvs": 1}


def _checkpointed(fixtures, tmp_path):
    from deltalake import DeltaTable as RsTable

    root = _copy(fixtures, LARGE, tmp_path)
    RsTable(str(root)).create_checkpoint()
    return root


def test_last_checkpoint_with_a_version_that_is_not_a_number(fixtures, tmp_path):
    root = _checkpointed(fixtures, tmp_path)
    hint = root / "_delta_log" / "_last_checkpoint"
    hint.write_text(json.dumps({**json.loads(hint.read_text()), "version": "four"}))
    t = DeltaTable(str(root))
    assert [_facts(f) for f in t.findings] == [("delta.last-checkpoint", "_last_checkpoint", None, "version")]
    assert t.findings[0].message == '_last_checkpoint: version: expected an integer, got "four"'
    assert _exercise(t)["totals"] == LARGE_V4
    hint.write_text("[4]")
    assert [f.message for f in DeltaTable(str(root)).findings] == [
        "_last_checkpoint: expected a JSON object, got [4]"]


def test_an_unreadable_checkpoint_falls_back_to_the_commits(fixtures, tmp_path):
    root = _checkpointed(fixtures, tmp_path)
    cp = root / "_delta_log" / "00000000000000000004.checkpoint.parquet"
    cp.write_bytes(cp.read_bytes()[:200])
    t = DeltaTable(str(root))
    assert [(f.code, os.path.basename(f.file)) for f in t.findings] == [
        ("delta.log-unreadable", "00000000000000000004.checkpoint.parquet")]
    r = _exercise(t)
    assert r["totals"] == LARGE_V4
    assert r["versions"].version.tolist() == [0, 1, 2, 3, 4]
    # without the commits nothing rebuilds the table: gaps, and unknown counts (never an empty table's zeros)
    # rather than an exception
    for v in range(5):
        (root / "_delta_log" / f"{v:020d}.json").unlink()
    t = DeltaTable(str(root))
    assert [f.code for f in t.findings] == ["delta.log-unreadable"] + ["delta.log-gap"] * 5
    assert _exercise(t)["totals"] == {"data_files": None, "records": None, "deleted_rows": None, "live_rows": None,
                                      "dvs": None}


def test_checkpoint_row_with_a_damaged_field(fixtures, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = _checkpointed(fixtures, tmp_path)
    for v in range(5):
        (root / "_delta_log" / f"{v:020d}.json").unlink()
    cp = root / "_delta_log" / "00000000000000000004.checkpoint.parquet"
    table = pq.read_table(cp)
    rows = table.column("add").to_pylist()
    at = next(i for i, r in enumerate(rows) if r and r["path"] == NEW_AT_V4)
    stats = [r["stats"] if r else None for r in rows]
    stats[at] = "not json"
    add = table.column("add").combine_chunks()
    fields = [add.field(i) for i in range(add.type.num_fields)]
    names = [f.name for f in add.type]
    fields[names.index("stats")] = pa.array(stats, pa.string())
    add = pa.StructArray.from_arrays(fields, names=names, mask=pa.array([r is None for r in rows]))
    pq.write_table(table.set_column(table.schema.get_field_index("add"), "add", add), cp)
    t = DeltaTable(str(root))
    assert [_facts(f) for f in t.findings] == [
        ("delta.action-field", "00000000000000000004.checkpoint.parquet", at + 1, "add.stats")]
    assert t.findings[0].message.startswith(f"00000000000000000004.checkpoint.parquet row {at + 1}: add.stats: not "
                                            "JSON")
    assert _exercise(t)["totals"] == {**LARGE_V4, "records": 2002, "live_rows": 1991}


def test_checkpoint_map_with_a_key_twice_is_unreadable_and_the_commits_rebuild_the_table(fixtures, tmp_path):
    """Maps are read as dicts (pyarrow 20's maps_as_pydicts="strict", made by hand before it): a partitionValues
    map naming one key twice makes the checkpoint unreadable, said with the key, and the commits rebuild v4."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = _checkpointed(fixtures, tmp_path)
    cp = root / "_delta_log" / "00000000000000000004.checkpoint.parquet"
    table = pq.read_table(cp)
    rows = table.column("add").to_pylist()
    at = next(i for i, r in enumerate(rows) if r and r["path"] == NEW_AT_V4)
    add = table.column("add").combine_chunks()
    names = [f.name for f in add.type]
    fields = [add.field(i) for i in range(add.type.num_fields)]
    parts = [[("day", "1"), ("day", "2")] if i == at else ([] if r else None) for i, r in enumerate(rows)]
    fields[names.index("partitionValues")] = pa.array(parts, add.type.field("partitionValues").type)
    add = pa.StructArray.from_arrays(fields, names=names, mask=pa.array([r is None for r in rows]))
    pq.write_table(table.set_column(table.schema.get_field_index("add"), "add", add), cp)
    t = DeltaTable(str(root))
    assert [_facts(f) for f in t.findings] == [
        ("delta.log-unreadable", "00000000000000000004.checkpoint.parquet", None, "")]
    # the words are pyarrow's from pyarrow 20 on (maps_as_pydicts), this package's before: both say "duplicate"
    assert t.findings[0].message.startswith("checkpoint cannot be read: ") and "duplicate" in t.findings[0].message
    assert _exercise(t)["totals"] == LARGE_V4


def test_a_multi_part_checkpoint_name_with_ten_billion_parts_is_not_a_loop(fixtures, tmp_path):
    root = _copy(fixtures, SMALL, tmp_path)
    (root / "_delta_log" / "00000000000000000001.checkpoint.0000000001.9999999999.parquet").write_bytes(b"PAR1")
    t = DeltaTable(str(root))
    assert [f.message for f in t.findings] == ["checkpoint 1 has 1 of 9999999999 parts"]
    assert _exercise(t)["totals"]["live_rows"] == 8


# ---- DV files ------------------------------------------------------------------------------------
def test_a_cut_dv_file(fixtures, tmp_path):
    root = _copy(fixtures, LARGE, tmp_path)
    dvf = root / "deletion_vector_afcbf9f8-7558-4a5a-b1e2-7432c30bf452.bin"
    dvf.write_bytes(dvf.read_bytes()[:100])  # DVs at 1 and 43 stay whole; 87 is cut
    t = DeltaTable(str(root))
    assert t.findings == []
    r = _exercise(t)
    cut = [dv for dv in r["read"] if dv.findings and dv.findings[0].code == "delta.dv-range"]
    assert len(cut) == 4 and all(dv.cardinality == 0 for dv in cut)
    codes = sorted({f.code for f in r["check"]})
    assert codes == ["delta.dv-file-truncated", "delta.dv-offset-mismatch", "delta.dv-range"]
    assert sum(dv.cardinality for dv in r["read"]) == 11 - 6  # the DVs still whole: 2 + 2 (v1 file) + 1


def test_a_missing_dv_file(fixtures, tmp_path):
    root = _copy(fixtures, SMALL, tmp_path)
    (root / "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin").unlink()
    t = DeltaTable(str(root))
    r = _exercise(t)
    assert [(dv.cardinality, [f.code for f in dv.findings]) for dv in r["read"]] == [(0, ["table.file-vanished"])]
    assert [f.code for f in r["check"]] == ["table.file-vanished"]
    assert r["totals"] == {"data_files": 1, "records": 10, "deleted_rows": 2, "live_rows": 8, "dvs": 1}


# ---- checks.py: a data-file folder that cannot be listed ------------------------------------------
def test_a_data_file_on_storage_that_cannot_be_listed_is_a_finding(fixtures, tmp_path):
    root = _copy(fixtures, LARGE, tmp_path)
    _edit(root, 4, 2, lambda a: a.update(path="http://127.0.0.1:9/elsewhere/part-0.parquet"))
    t = DeltaTable(str(root), allow=["http://127.0.0.1:9"])  # outside the table's own scope unless allowed
    found = [f for f in t.check() if f.code == "delta.folder-unlisted"]  # check() never raises for it
    assert len(found) == 1 and found[0].file == "http://127.0.0.1:9/elsewhere"
    assert found[0].message.startswith("cannot connect to the storage endpoint for http://127.0.0.1:9/elsewhere")
    assert found[0].message.endswith("; the data files in it are not checked")
    assert found[0].severity.value == "warning"
