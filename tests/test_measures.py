"""The per-file measures (``iceberg/measures.py``) on the driver: exact answers on a v2 table's files written
out by hand, and the one definition behind deleted rows everywhere (card, timeline, delete debt, the doctor).
Their parity with Spark SQL is ``test_spark_planned.py::test_every_measure_answers_the_same_on_spark``."""

from __future__ import annotations

import pyarrow as pa
import pytest

from _measure_relations import V2_EVERYWHERE_EQUALITY, V2_EXPECTED, rows, v2_relations
from _spark import FIXTURE_WAREHOUSE
from puffin_explorer import Warehouse
from puffin_explorer.iceberg import measures as M

NOW = "2026-11-28T00:00:00Z"


@pytest.mark.parametrize("name", sorted(M.MEASURES))
def test_each_measure_answers_exactly_on_a_v2_table_written_by_hand(name):
    assert set(V2_EXPECTED) == set(M.MEASURES)  # a new measure needs its expected answer here
    measure = M.MEASURES[name]
    got = M.run_local(measure, **v2_relations())
    assert got.column_names == list(measure.columns)
    assert rows(got) == V2_EXPECTED[name]


def test_unpartitioned_equality_deletes_apply_to_every_partition():
    got = M.run_local(M.EQUALITY_DELETES_APPLIED, **v2_relations(everywhere=True))
    assert rows(got) == V2_EVERYWHERE_EQUALITY


def test_no_rows_in_no_rows_out():
    """No files: no row from a per-row measure, one row of zeros from a table-wide one (the mean too; the largest
    touched file is unknown)."""
    empty = {name: M.empty(name) for name in M.RELATIONS}
    empty["size_classes"] = M.size_classes([0, 10, 20])
    for measure in M.MEASURES.values():
        got = M.run_local(measure, **empty).to_pylist()
        if measure.name == "size_histogram":
            assert got and all(r["files"] == r["bytes"] == 0 for r in got)
        elif measure.grain == "table":
            assert len(got) == 1 and set(got[0].values()) <= {0, 0.0, None}, measure.name
        else:
            assert got == [], measure.name


@pytest.mark.parametrize("emptied", ["pos", "eq"])
def test_a_measure_over_an_empty_relation_every_row_joins_runs_none_of_its_joins(emptied):
    """A measure whose every row joins a relation (``empty_without``) given without rows is answered by a query
    of no rows of its types, bound and never run; every measure answers as when its SQL runs in full."""
    class Full(M.LocalMeasures):
        def _given_empty(self, name: str) -> bool:
            return False

    relations = v2_relations()
    relations[emptied] = M.empty(emptied)
    with M.LocalMeasures(relations) as short, Full(relations) as full:
        for name, measure in M.MEASURES.items():
            got, whole = short.arrow(measure), full.arrow(measure)
            assert got.schema == whole.schema and rows(got) == rows(whole), name
        skipped = [n for n, m in M.MEASURES.items() if emptied in m.empty_without]
        assert skipped and all(short.names[n] == f"m_{n}" for n in skipped)
        assert short._sql(M.MEASURES[skipped[0]]).startswith('SELECT CAST(NULL AS BIGINT) AS "rid"')
        assert "JOIN" in full._sql(M.MEASURES[skipped[0]])


@pytest.mark.parametrize("sizes", [[], [5], [7, 5], [3, 1, 2], [1, 1, 1, 9], [4, 4, 4, 4], [0, 10**15, 3, 10**15],
                                   "random"])
def test_the_median_partition_is_percentile_conts(sizes):
    """partition_summary's median (a running count over the distinct sizes, so that no engine holds every size
    in one aggregation buffer) is DuckDB's percentile_cont(0.5) of the same sizes: odd and even counts, ties,
    none."""
    import random

    import duckdb

    cases = [[random.Random(seed).randint(0, 10 ** random.Random(-seed).randint(1, 12)) for _ in range(seed % 23)]
             for seed in range(60)] if sizes == "random" else [sizes]
    for case in cases:
        n = len(case)
        totals = pa.table({"pkey": pa.array([f"0|{i}" for i in range(n)], pa.string()),
                           **{c: pa.array(case if c == "bytes" else [1] * n, pa.int64())
                              for c in ("files", "rows", "bytes", "small_files", "small_bytes", "small_rows")}})
        got = M.run_local(M.PARTITION_SUMMARY, partition_totals=totals, params=M.params(1, 1, 1)).to_pylist()[0]
        con = duckdb.connect()
        con.register("t", totals)
        want = con.execute("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY CAST(bytes AS DOUBLE)) FROM t") \
            .fetchone()[0]
        assert (got["partitions"], got["median_bytes"]) == (len(case), want), case


def test_sums_past_a_long_are_clipped_not_raised():
    """A damaged size or count near 2**63 (the file fuzzer writes them) gives the largest long, in both engines,
    never an overflow error."""
    rel = v2_relations()
    big = 2 ** 63 - 1
    rel["data"] = rel["data"].set_column(rel["data"].schema.get_field_index("file_size_in_bytes"), "file_size_in_bytes",
                                         pa.array([big, big, 1, 1, 1], pa.int64()))
    rel["dvs"] = rel["dvs"].set_column(1, "record_count", pa.array([big, 4, 2], pa.int64()))
    totals = M.run_local(M.FILE_TOTALS, **rel).to_pylist()[0]
    assert (totals["data_bytes"], totals["small_files"], totals["small_bytes"]) == (big, 3, 3)  # 2 * big + 3
    deleted = {r["key"]: r["deleted"] for r in M.run_local(M.DELETED_ROWS, **rel).to_pylist()}
    assert deleted[rel["data"].column("key")[4].as_py()] == big  # 2**63 - 1 + 3 - 3: the DV rows, no sum


def _tables():
    """Every reference Iceberg table: the Spark 3.5 + Iceberg 1.9.2 warehouse and the DuckDB-written v3 table."""
    from puffin_explorer import Table

    if not FIXTURE_WAREHOUSE.is_dir():
        pytest.skip(f"reference fixtures not found at {FIXTURE_WAREHOUSE}")
    wh = Warehouse(str(FIXTURE_WAREHOUSE))
    rows = wh.summary().set_index("table")
    out = [(wh.table(name), rows.loc[name]) for name in rows.index]
    duck = Table.from_folder(str(FIXTURE_WAREHOUSE.parent / "engines" / "duckdb" / "dv_single"))
    return out + [(duck, None)]


def test_the_card_the_warehouse_card_the_timeline_and_the_doctor_count_the_same_deleted_rows():
    """One number for deleted rows and deleted share wherever a table shows them."""
    seen = []
    for t, listed in _tables():
        row = t.summary()
        h = t.health(now=NOW, list_files=False)
        debt = t.delete_debt()
        timeline = t.timeline().set_index("snapshot_id")
        per_file = t.deleted_rows_per_file()
        counts = {row["deleted_rows"], h.metrics["deleted_rows"], debt.deleted_rows, int(per_file["deleted_rows"].sum()),
                  int(timeline.loc[t.metadata.current_snapshot_id, "deleted_rows"])}
        if listed is not None:
            counts.add(int(listed["deleted_rows"]))
        assert len(counts) == 1, (t.name, counts)
        assert row["records"] == h.metrics["records"] == debt.records, t.name
        assert round(row["deleted_share"], 9) == round(h.metrics["deleted_share"], 9) == round(debt.deleted_share, 9)
        seen.append((t.name, row["deleted_rows"]))
    # the fixtures' READMEs: 22,889 rows of 100,000 deleted in DuckDB's table (its last DV)
    assert seen == [("shop.events", 55_878), ("shop.legacy", 2_000), ("shop.orders", 27_924), ("dv_single", 22_889)]


def test_a_delete_files_path_scope_is_read_one_way():
    """The scope the ``pos`` / ``eq`` relations hold, on the driver and on the executors: the referenced data file,
    else ``file_path`` bounds that name one path; the bounds as written."""
    assert M.path_scope("file:/t/a.parquet", None, None) == ("/t/a.parquet", "", "")
    assert M.path_scope("", "s3a://b/t/a.parquet", "s3a://b/t/a.parquet") == (
        "s3://b/t/a.parquet", "s3a://b/t/a.parquet", "s3a://b/t/a.parquet")
    assert M.path_scope(None, "s3://b/t/a", "s3://b/t/z") == (None, "s3://b/t/a", "s3://b/t/z")
    assert M.path_scope(None, b"\x00", 7) == (None, "", "")  # bounds that are not text scope nothing


@pytest.mark.parametrize("name, deleted", [("kernel-rs-table-with-dv-small", 2), ("delta-spark-table-with-dv-large", 11)])
def test_a_delta_tables_card_per_file_rows_and_doctor_count_the_same_deleted_rows(name, deleted):
    """Delta counts with the same measure: the card's totals, deleted_rows_per_file() and the doctor (the
    fixture READMEs: 2 of 10 rows, 11 of 2,004)."""
    from puffin_explorer import DeltaTable

    folder = FIXTURE_WAREHOUSE.parent / "engines" / "delta" / name
    if not folder.is_dir():
        pytest.skip(f"reference fixtures not found at {folder}")
    dt = DeltaTable(str(folder))
    h = dt.health(now=NOW, list_files=False)
    per_file = dt.deleted_rows_per_file()
    assert dt.totals()["deleted_rows"] == h.metrics["deleted_rows"] == int(per_file["deleted_rows"].sum()) == deleted
    assert round(h.metrics["deleted_share"], 9) == round(deleted / dt.totals()["records"], 9)
    assert h.partitions["deleted_rows"].sum() == deleted


def test_partition_keys_grouped_by_spec_and_code_first_are_the_keys_coded_from_their_texts():
    """coded_relations makes each partition key's text once per distinct (spec id, partition code) pair; the
    relations, the key texts and each key's partition text equal those coded from a text per row, on every
    reference table, and on each with its first live data row's partition code and its second's spec id made
    null (a null partition has the text of the empty record, ``{}``; a null spec id the empty text)."""
    import dataclasses

    import numpy as np
    import pyarrow.compute as pc

    from puffin_explorer.iceberg.index_build import build_index
    from puffin_explorer.iceberg.relations import coded, coded_relations, index_relations

    seen = set()
    for t, _ in _tables():
        index = build_index(t.source, metrics=True)
        data_rows = np.flatnonzero(index.mask(["data"]))[:2]
        hollowed = index.table
        for name, row in (("partition", data_rows[0]), ("spec_id", data_rows[-1])):
            values = hollowed.column(name).combine_chunks()
            mask = np.zeros(len(values), dtype=bool)
            mask[row] = True
            hollowed = hollowed.set_column(hollowed.schema.get_field_index(name), name,
                                           pc.if_else(pa.array(mask), pa.nulls(len(values), values.type), values))
        for each in (index, dataclasses.replace(index, table=hollowed, derived={})):
            by_pairs = coded_relations(t.source, each)
            by_texts = coded(index_relations(t.source, each, coded_paths=True))
            assert by_pairs.pkeys.to_pylist() == by_texts.pkeys.to_pylist(), t.name
            assert by_pairs.partitions.to_pylist() == by_texts.partitions.to_pylist(), t.name
            for name in ("data", "dvs", "pos", "eq"):
                assert by_pairs.relations[name].equals(by_texts.relations[name]), (t.name, name)
            seen.update(by_pairs.pkeys.to_pylist())
    assert seen == {"0|{'customer_id_bucket': 0}", "0|{'customer_id_bucket': 1}", "0|{'customer_id_bucket': 2}",
                    "0|{'customer_id_bucket': 3}", "0|{}", "|{'customer_id_bucket': 1}", "|{}"}, seen


@pytest.mark.parametrize("coded_paths", [False, True])
@pytest.mark.parametrize("scoped", [True, False])
def test_paths_and_partitions_as_codes_answer_as_the_paths_do(monkeypatch, coded_paths, scoped):
    """The driver doctor hands DuckDB integer codes (iceberg/relations.coded; the paths as the index's path codes
    with ``coded_paths``): every table-wide answer, and each partition's once its code is turned back, equals the
    answer over the paths themselves.  Unscoped: every delete file read as applying to its whole partition (no
    path: a null ``ref``, as a partition-scoped position-delete file has)."""
    from puffin_explorer.health import sum_relations
    from puffin_explorer.iceberg.index_build import build_index
    from puffin_explorer.iceberg.relations import coded, coded_relations, index_relations

    if not scoped:
        monkeypatch.setattr(M, "path_scope", lambda ref, lower, upper: (None, "", ""))
    sums = sum_relations(4_096, 3_072)
    for t, _ in _tables():
        index = build_index(t.source, metrics=True)
        plain = {**index_relations(t.source, index), **sums, "pos_counts": M.empty("pos_counts")}
        codes = coded_relations(t.source, index) if coded_paths else coded(plain)
        if coded_paths:
            assert all(pa.types.is_integer(codes.relations[r].column(c).type)
                       for r, c in (("data", "key"), ("dvs", "ref_key"), ("pos", "ref"), ("eq", "ref")))
        for name in ("file_totals", "delete_totals", "size_histogram", "dangling_deletes", "partition_totals",
                     "partition_summary", "data_file_deletes"):
            here = M.run_local(M.MEASURES[name], **plain).to_pylist()
            there = M.run_local(M.MEASURES[name], **{**codes.relations, **sums,
                                                      "pos_counts": M.empty("pos_counts")}).to_pylist()
            if name in ("partition_totals", "data_file_deletes"):
                for r in there:
                    r["pkey"] = codes.pkeys[r["pkey"]].as_py()
            if name == "partition_summary":
                for r in there:
                    if r["largest_pkey"] is not None:
                        r["largest_pkey"] = codes.pkeys[r["largest_pkey"]].as_py()
            key = (lambda r: (r.get("rid", 0), r.get("pkey", r.get("bucket", 0))))
            assert sorted(there, key=key) == sorted(here, key=key), (t.name, name)


def test_row_counts_of_a_table_without_position_deletes_share_their_zeros_and_dv_rows():
    """A v3 table's per-file counts: no position-delete rows, files or superseded rows (zeros no page of which is
    written), deleted rows the DV rows themselves (one array), every array read-only; the exact counts of the
    fixture's orders table."""
    from puffin_explorer import Warehouse
    from puffin_explorer.iceberg.deletes import row_counts

    from _warehouse_fixtures import WAREHOUSE

    t = Warehouse(str(WAREHOUSE)).table("shop.orders")
    c = row_counts(t.source, t.index())
    assert c.deleted is c.dv_rows and not c.pos_rows.any() and not c.pos_files.any() and not c.superseded.any()
    assert sorted(c.dv_rows.tolist()) == [0, 0, 0, 0, 6889, 6953, 6977, 7105] and int(c.dvs.sum()) == 4
    assert all(not a.flags.writeable for a in (c.dv_rows, c.dvs, c.pos_rows, c.pos_files, c.superseded, c.deleted))
    legacy = Warehouse(str(WAREHOUSE)).table("shop.legacy")
    lc = row_counts(legacy.source, legacy.index())  # a v2 table's Parquet position deletes: counted, not shared
    assert lc.deleted is not lc.dv_rows and int(lc.pos_rows.sum()) == int(lc.deleted.sum()) > 0
