"""Delta Lake tables: the log, DV descriptors (u / p / i), DV files as regions, cross-checks, and delta-rs agreeing."""

from __future__ import annotations

import json
import os
import shutil
import struct
import zlib

import numpy as np
import pytest

from puffin_explorer import DeletionVector, DeltaDVFile, DeltaTable
from puffin_explorer.delta import DVDescriptor, z85
from puffin_explorer.findings import is_known

from delta_tables import write_delta_table

try:
    from _warehouse_fixtures import copy_fixture_table as _copy
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import copy_fixture_table as _copy

SMALL = "engines/delta/kernel-rs-table-with-dv-small"
LARGE = "engines/delta/delta-spark-table-with-dv-large"
#: README facts of the large table: version → (live rows, sum of value, data files, sum of DV cardinalities)
LARGE_FACTS = {0: (2000, 1999000, 20, 0), 1: (1995, 1996020, 20, 5), 2: (1997, 1997020, 21, 5),
               3: (1991, 1992300, 21, 11), 4: (1993, 1994767, 22, 11)}


def _codes(findings):
    return sorted({f.code for f in findings})


def _errors(findings):
    return [str(f) for f in findings if f.severity.value == "error"]


def _deltalake_positions(location: str, version=None) -> dict[str, list[int]]:
    """delta-rs's DVs: data file name → deleted positions (False in its keep mask)."""
    import pyarrow as pa
    from deltalake import DeltaTable as RsTable

    t = RsTable(location, version=version)
    out = {}
    for row in pa.table(t.deletion_vectors()).to_pylist():
        keep = np.asarray(row["selection_vector"], dtype=bool)
        out[row["filepath"].rsplit("/", 1)[-1]] = np.flatnonzero(~keep).tolist()
    return out


def _deltalake_count_sum(location: str, version=None) -> tuple[int, int]:
    import pyarrow as pa
    from deltalake import DeltaTable as RsTable, QueryBuilder

    t = RsTable(location, version=version)
    row = pa.table(QueryBuilder().register("t", t).execute("select count(*) c, sum(value) s from t").read_all())
    return int(row["c"][0].as_py()), int(row["s"][0].as_py() or 0)


def _ours_positions(t: DeltaTable) -> dict[str, list[int]]:
    return {loc.rsplit("/", 1)[-1]: dv.positions().tolist() for loc, dv in t.deletion_vectors().items()}


def test_small_table_descriptor_positions_and_live_rows(fixtures):
    t = DeltaTable(str(fixtures / SMALL))
    assert t.version == 1
    dvs = t.dvs()
    assert len(dvs) == 1
    row = dvs.iloc[0]
    assert (row.storage_type, row.path_or_inline_dv, row.offset, row.size_in_bytes, row.cardinality) == \
        ("u", "vBn[lx{q8@P<9BNH/isA", 1, 36, 2)
    assert row.dv_file.endswith("/deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin")
    dv = t.read_dv(row)
    assert isinstance(dv, DeletionVector) and dv.positions().tolist() == [0, 9] and dv.crc_ok
    assert t.read_dv(row.data_file) == dv
    assert t.totals() == {"data_files": 1, "records": 10, "deleted_rows": 2, "live_rows": 8, "dvs": 1}
    per = t.deleted_rows_per_file()
    assert per[["record_count", "deleted_rows", "live_rows"]].values.tolist() == [[10, 2, 8]]
    assert per.deleted_share[0] == pytest.approx(0.2)
    assert t.check() == []
    # delta-rs agrees: the same positions, 8 live rows summing to 36
    assert _deltalake_positions(str(fixtures / SMALL)) == _ours_positions(t)
    assert _deltalake_count_sum(str(fixtures / SMALL)) == (8, 36)
    v0 = DeltaTable(str(fixtures / SMALL), version=0)
    assert v0.totals()["live_rows"] == 10 and v0.dvs().empty
    assert _codes(v0.check()) == ["delta.dv-file-unreferenced"]


@pytest.mark.parametrize("version", sorted(LARGE_FACTS))
def test_large_table_every_version_matches_the_facts_and_delta_rs(fixtures, version):
    loc = str(fixtures / LARGE)
    t = DeltaTable(loc, version=version)
    live, total, files, cards = LARGE_FACTS[version]
    totals = t.totals()
    assert (totals["live_rows"], totals["data_files"], totals["deleted_rows"]) == (live, files, cards)
    assert int(t.dvs().cardinality.sum()) == cards
    decoded = t.deletion_vectors()
    assert sum(dv.cardinality for dv in decoded.values()) == cards
    assert _deltalake_count_sum(loc, version) == (live, total)
    assert _deltalake_positions(loc, version) == _ours_positions(t)
    assert _errors(t.check()) == []
    # the rows our positions delete are the rows delta-rs no longer returns
    import pyarrow.parquet as pq

    kept = 0
    for f in t.files().itertuples():
        values = pq.read_table(f.location).column("value").to_numpy()
        mask = np.ones(len(values), dtype=bool)
        mask[t.deletions(f.file_path)] = False
        kept += int(values[mask].sum())
    assert kept == total


def test_large_table_version_one_deletes_the_committed_values(fixtures):
    import pyarrow.parquet as pq

    t = DeltaTable(str(fixtures / LARGE), version=1)
    deleted = []
    for row in t.dvs().itertuples():
        values = pq.read_table(row.location).column("value").to_numpy()
        deleted += values[t.read_dv(row.data_file).positions().astype(np.int64)].tolist()
    assert sorted(deleted) == [0, 180, 300, 700, 1800]


def test_version_timeline(fixtures):
    v = DeltaTable(str(fixtures / LARGE)).versions()
    assert v.version.tolist() == [0, 1, 2, 3, 4]
    assert v.operation.tolist() == ["WRITE", "DELETE", "WRITE", "DELETE", "WRITE"]
    assert v.live_rows.tolist() == [LARGE_FACTS[i][0] for i in range(5)]
    assert v.data_files.tolist() == [LARGE_FACTS[i][2] for i in range(5)]
    assert v.deleted_rows.tolist() == [LARGE_FACTS[i][3] for i in range(5)]
    assert v.added_dvs.tolist() == [0, 5, 0, 6, 0] and v.removed_dvs.tolist() == [0, 0, 0, 3, 0]
    assert v.is_current.tolist() == [False, False, False, False, True]
    assert str(v.timestamp[0]) == "2023-01-18 17:59:30.682000+00:00"


def test_version_three_keeps_two_dvs_of_version_one(fixtures):
    t = DeltaTable(str(fixtures / LARGE), version=3)
    files = t.dv_files().set_index("dv_file")
    names = {k.rsplit("/", 1)[-1]: v for k, v in files.dvs.items()}
    assert names == {"deletion_vector_44ccbf3f-b223-4581-9cd8-a7e569120ada.bin": 2,
                     "deletion_vector_afcbf9f8-7558-4a5a-b1e2-7432c30bf452.bin": 6}
    cands = t.compaction_candidates(min_share=0.03)
    assert cands.file_path.tolist() == ["part-00000-51219d56-88a7-41cc-be5d-eada75aceb4f-c000.snappy.parquet"]
    assert cands.deleted_share[0] == pytest.approx(0.5)


def test_dv_file_regions_hex_and_findings(fixtures):
    t = DeltaTable(str(fixtures / LARGE))
    path = str(fixtures / LARGE / "deletion_vector_afcbf9f8-7558-4a5a-b1e2-7432c30bf452.bin")
    f = t.dv_file(path)
    assert f.version == 1 and f.findings == [] and f.is_valid
    df = f.to_pandas()
    assert df.offset.tolist() == [1, 43, 87, 131, 173, 215]
    assert df.size_in_bytes.tolist() == [34, 36, 36, 34, 34, 36]
    assert df.cardinality.tolist() == [1, 2, 2, 1, 1, 2]
    assert [len(x) for x in df.data_files] == [1] * 6
    root = f.regions()
    assert root.length == 259 and [c.kind for c in root.children] == ["delta-version"] + ["blob"] * 6
    covered = sum(c.length for c in root.children)
    assert covered == 259
    blob = root.children[2]
    assert [c.kind for c in blob.children] == ["dv-length", "dv-magic", "dv-vector", "dv-crc"]
    assert blob.children[0].value == 36
    text = f.hex().text()
    assert "d1 d3 39 64" in text
    # opened alone (no table) it walks the same DVs
    alone = DeltaDVFile(path)
    assert alone.to_pandas().offset.tolist() == [1, 43, 87, 131, 173, 215]
    assert alone.summary() == "Delta DV file, version 1, 6 DVs, 9 positions, valid"


@pytest.mark.parametrize("storage,prefix", [("u", ""), ("u", "ab"), ("p", ""), ("i", "")])
def test_written_tables_in_every_storage_type(tmp_path, storage, prefix):
    rng = np.random.default_rng(7)
    deletes = {0: [0, 5, 99], 2: list(range(10, 60)), 3: rng.choice(300, 40, replace=False).tolist()}
    root = str(tmp_path / "t")
    expected = write_delta_table(root, [100, 100, 100, 300], deletes, storage=storage, dvs_per_file=2,
                                 prefix=prefix)
    t = DeltaTable(root)
    assert set(t.dvs().storage_type) == {storage}
    got = {p.rsplit("/", 1)[-1]: dv.positions().tolist() for p, dv in t.deletion_vectors().items()}
    assert got == {k: v for k, v in expected.items()}
    assert t.totals()["live_rows"] == 600 - sum(len(set(v)) for v in deletes.values())
    assert _errors(t.check()) == []
    if storage == "u" and prefix:
        assert all(f"/{prefix}/deletion_vector_" in x for x in t.dvs().dv_file)
    if storage == "i":
        assert t.dvs().dv_file.isna().all() and t.dvs().offset.isna().all()
    assert _deltalake_positions(root) == got
    assert _deltalake_count_sum(root)[0] == t.totals()["live_rows"]


def test_inline_example_of_the_protocol_in_the_native_format():
    d = DVDescriptor.from_action({"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
                                  "sizeInBytes": 40, "cardinality": 6})
    from puffin_explorer.delta.descriptor import decode_dv, frame

    dv = decode_dv(frame(d.inline_bytes()))
    assert dv.positions().tolist() == [3, 4, 7, 11, 18, 29]
    assert [f.code for f in dv.findings] == ["delta.dv-native-format"]
    assert d.unique_id == "iwi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"


def test_descriptor_paths():
    d = DVDescriptor.from_action({"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4,
                                  "sizeInBytes": 40, "cardinality": 6})
    assert d.absolute_path("s3://mytable") == "s3://mytable/ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    assert d.unique_id == "uab^-aqEH.-t@S}K{vb[*k^@4"
    p = DVDescriptor.from_action({"storageType": "p", "pathOrInlineDv": "s3://mytable/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin",
                                  "offset": 4, "sizeInBytes": 40, "cardinality": 6})
    assert p.absolute_path("ignored").endswith("d3fe2512ff61.bin")
    with pytest.raises(z85.Z85Error):
        z85.decode_uuid("not-z85~~~~~~~~~~~~~")


def test_broken_dv_file_and_descriptors_are_findings(fixtures, tmp_path):
    root = _copy(fixtures, LARGE, tmp_path)
    bin_path = root / "deletion_vector_afcbf9f8-7558-4a5a-b1e2-7432c30bf452.bin"
    data = bytearray(bin_path.read_bytes())
    data[43 + 4 + 4 + 8 + 4 + 4 + 4 + 4] ^= 0x01  # a position of DV 1 (part-00001): its CRC no longer matches
    bin_path.write_bytes(bytes(data))
    log3 = root / "_delta_log" / "00000000000000000003.json"
    lines = log3.read_text().splitlines()
    out = []
    for line in lines:
        obj = json.loads(line)
        add = obj.get("add")
        if add and add["path"].startswith("part-00012"):
            add["deletionVector"]["cardinality"] = 5  # the descriptor lies
        if add and add["path"].startswith("part-00014"):
            add["deletionVector"]["offset"] = 132  # points between DVs
        out.append(json.dumps(obj))
    log3.write_text("\n".join(out) + "\n")
    t = DeltaTable(str(root), version=3)
    findings = t.check()
    codes = _codes(findings)
    assert {"dv.crc", "delta.dv-cardinality-mismatch", "delta.dv-offset-mismatch"} <= set(codes)
    crc = next(f for f in findings if f.code == "dv.crc")
    assert crc.file.endswith(bin_path.name) and crc.offset == 43 + 4 + 36  # the CRC field of DV 1
    card = next(f for f in findings if f.code == "delta.dv-cardinality-mismatch")
    assert "part-00012" in card.message and "cardinality 5" in card.message
    assert all(is_known(c) for c in codes)
    # the lying descriptor does not change what is counted as deleted from the bytes
    assert t.read_dv("part-00012-9b83c213-31ff-4b2c-a5d9-be1a2bc2431d-c000.snappy.parquet").cardinality == 2


def test_broken_log_and_missing_files_are_findings(fixtures, tmp_path):
    root = _copy(fixtures, LARGE, tmp_path)
    log1 = root / "_delta_log" / "00000000000000000001.json"
    log1.write_text(log1.read_text() + "{not json\n")
    (root / "deletion_vector_44ccbf3f-b223-4581-9cd8-a7e569120ada.bin").unlink()
    (root / "part-00004-a72dbdec-2d0e-43d8-a756-4d0d63ef9fcb-c000.snappy.parquet").unlink()
    t = DeltaTable(str(root))
    codes = _codes(t.check())
    assert {"delta.log-json", "table.file-vanished", "delta.file-missing"} <= set(codes)
    (root / "_delta_log" / "00000000000000000002.json").unlink()
    t = DeltaTable(str(root))
    assert "delta.log-gap" in _codes(t.findings)


def test_truncated_and_wrong_version_dv_files(tmp_path):
    good = bytes([1]) + DeletionVector.from_positions([1, 2, 3]).to_bytes()
    (tmp_path / "a.bin").write_bytes(bytes([2]) + good[1:] + b"\x00\x00\x00")
    f = DeltaDVFile(str(tmp_path / "a.bin"))
    assert _codes(f.findings) == ["delta.dv-file-truncated", "delta.dv-file-version"]
    assert len(f.dvs) == 1 and f.dvs[0].dv.positions().tolist() == [1, 2, 3]
    assert f.regions().children[-1].kind == "unclaimed"
    # a size field that runs past the end
    bad = bytearray(good)
    bad[1:5] = struct.pack(">I", 10_000)
    (tmp_path / "b.bin").write_bytes(bytes(bad))
    f = DeltaDVFile(str(tmp_path / "b.bin"))
    assert _codes(f.findings) == ["delta.dv-file-truncated"] and f.dvs == []
    (tmp_path / "c.bin").write_bytes(b"")
    assert _codes(DeltaDVFile(str(tmp_path / "c.bin")).findings) == ["delta.dv-file-truncated"]


def test_checkpoint_is_read_like_the_commits(fixtures, tmp_path):
    from deltalake import DeltaTable as RsTable

    root = _copy(fixtures, LARGE, tmp_path)
    RsTable(str(root)).create_checkpoint()
    names = sorted(os.listdir(root / "_delta_log"))
    assert "00000000000000000004.checkpoint.parquet" in names and "_last_checkpoint" in names
    for v in range(4):  # only the checkpoint can rebuild the table now
        (root / "_delta_log" / f"{v:020d}.json").unlink()
    (root / "_delta_log" / "00000000000000000004.json").unlink()
    t = DeltaTable(str(root))
    assert t.version == 4 and t.findings == []
    assert t.totals() == {"data_files": 22, "records": 2004, "deleted_rows": 11, "live_rows": 1993, "dvs": 8}
    assert _ours_positions(t) == _ours_positions(DeltaTable(str(fixtures / LARGE)))
    assert t.versions().version.tolist() == [4]
    assert _errors(t.check()) == []


def test_crc_of_inline_frame_is_computed():
    raw = DeletionVector.from_positions([5]).to_bytes()[4:-4]
    from puffin_explorer.delta.descriptor import frame

    framed = frame(raw)
    assert struct.unpack(">I", framed[-4:])[0] == zlib.crc32(raw) & 0xFFFFFFFF


def test_views_of_a_delta_table_and_a_dv_file(fixtures):
    from puffin_explorer.display import render_html, render_text

    t = DeltaTable(str(fixtures / LARGE))
    text = render_text(t)
    assert "at version 4: 22 data files, 2,004 rows, 8 DVs deleting 11, 1,993 live" in text
    assert "        3  DELETE               6              6          6            3          21     2002            11" \
        "       1991" in text
    html = render_html(t)
    assert "<script" not in html and "Delta table" in html and "Deletion vectors" in html
    assert "part-00019-a9bb3ce8" in html and "1,993" in html
    f = t.dv_file(t.dvs().dv_file[0])
    ftext = render_text(f)
    assert "Delta DV file, version 1, 6 DVs, 9 positions, valid" in ftext
    assert "DV magic  [5, 9)" in ftext
    fhtml = render_html(f)
    assert "<script" not in fhtml and "Delta DV file" in fhtml and "pe-delta-dv" in fhtml
    assert t._repr_mimebundle_()["text/plain"] == text
