"""Every reference fixture decoded, with the exact values its README lists."""

from __future__ import annotations

import numpy as np
import pytest

from puffin_explorer import DeletionVector, PuffinFile, RawBlob, ThetaSketch, read_dv


def test_trino_deletion_vector(fixtures):
    pf = PuffinFile(fixtures / "puffin/trino/deletion-vector-v1.puffin")
    assert pf.size == 521
    assert pf.properties == {"created-by": "Trino version testversion"}
    assert pf.footer.payload_size == 455 and pf.footer.flags == 0
    [b] = pf.blobs
    assert (b.type, b.offset, b.length, b.compression_codec) == ("deletion-vector-v1", 4, 46, None)
    assert b.fields == [2147483645] and b.snapshot_id == -1 and b.sequence_number == -1
    assert b.properties["cardinality"] == "3"
    assert b.properties["referenced-data-file"].startswith("file:/var/folders/")
    dv = b.decode()
    assert isinstance(dv, DeletionVector)
    assert dv.positions().tolist() == [0, 2, 4]
    assert dv.positions().dtype == np.uint64
    assert dv.length_prefix == 38
    assert dv.crc_stored == 0x3065D8B8 and dv.crc_ok
    assert dv.referenced_data_file == b.properties["referenced-data-file"]
    assert pf.findings == []


def test_trino_theta_sketches(fixtures):
    pf = PuffinFile(fixtures / "puffin/trino/apache-datasketches-theta-v1.puffin")
    assert pf.size == 843
    assert [b.fields for b in pf.blobs] == [[1], [2], [3]]
    assert [b.offset for b in pf.blobs] == [4, 73, 142]
    for b in pf.blobs:
        assert b.length == 69 and b.compression_codec == "zstd"
        assert b.snapshot_id == 3906904963261072048 and b.sequence_number == 1
        assert len(b.read()) == 56
        sk = b.decode()
        assert isinstance(sk, ThetaSketch)
        assert sk.estimate == 5.0 and not sk.is_estimation_mode and sk.is_ordered
        assert sk.num_retained == 5 and sk.theta == 1.0
        assert sk.ndv_property == "5" and sk.ndv_agrees
        assert sk.bounds() == {1: (5.0, 5.0), 2: (5.0, 5.0), 3: (5.0, 5.0)}
        assert sk.seed_hash == 0x93CC
    assert pf.findings == []


def test_iceberg_java_empty(fixtures):
    pf = PuffinFile(fixtures / "puffin/iceberg-java/empty-puffin-uncompressed.bin")
    assert pf.size == 32 and pf.blobs == [] and pf.properties == {}
    assert pf.footer.text == '{"blobs":[]}'
    assert pf.findings == []


TEXT = "some blob \x00 binary data 🤯 that is not very very very very very very long, is it?".encode()


@pytest.mark.parametrize("name,lengths,codec", [
    ("sample-metric-data-uncompressed.bin", [9, 83], None),
    ("sample-metric-data-compressed-zstd.bin", [22, 77], "zstd"),
])
def test_iceberg_java_metric_samples(fixtures, name, lengths, codec):
    pf = PuffinFile(fixtures / "puffin/iceberg-java" / name)
    assert pf.properties == {"created-by": "Test 1234"}
    assert [b.type for b in pf.blobs] == ["some-blob", "some-other-blob"]
    assert [b.fields for b in pf.blobs] == [[1], [2]]
    assert [b.length for b in pf.blobs] == lengths
    assert all(b.snapshot_id == 2 and b.sequence_number == 1 and b.compression_codec == codec for b in pf.blobs)
    assert pf.blobs[0].read() == b"abcdefghi"
    assert pf.blobs[1].read() == TEXT
    raw = pf.blobs[1].decode()
    assert isinstance(raw, RawBlob) and raw.size == 83 and raw.stored_size == lengths[1]
    if codec:
        assert pf.footer_size == 314
    assert pf.findings == []


def test_java_dv_shapes(fixtures):
    pf = PuffinFile(fixtures / "puffin/iceberg-java-writer/java-dv-shapes.puffin")
    assert pf.size == 17_662 and len(pf.blobs) == 4
    refs = [b.properties["referenced-data-file"] for b in pf.blobs]
    assert all(r.startswith("s3://bucket/wh/db/t/data/") for r in refs)
    sparse, rng, dense, high = (b.decode() for b in pf.blobs)
    assert sparse.positions().tolist() == [0, 2, 4, 1000, 65535, 65536, 70000, 1048576]
    assert rng.cardinality == 299_900
    assert np.array_equal(rng.positions(), np.arange(100, 300_000, dtype=np.uint64))
    assert rng.container_summary()["run"]["positions"] == 299_900
    assert dense.cardinality == 60_000
    assert np.array_equal(dense.positions(), np.arange(1, 120_000, 2, dtype=np.uint64))
    assert set(dense.containers()["type"]) == {"bitmap"}
    assert high.positions().tolist() == [5, 2**32 + 7, 2**33 + 1, 3 * 2**32 - 1]
    assert [b.key for b in high.buckets] == [0, 1, 2]
    # Writing the same positions again gives Iceberg Java's bytes exactly.
    for blob, dv in zip(pf.blobs, (sparse, rng, dense, high)):
        assert DeletionVector.from_positions(dv.positions()).to_bytes() == blob.read()
    assert pf.findings == []


def test_java_empty_and_generic_zstd(fixtures):
    pf = PuffinFile(fixtures / "puffin/iceberg-java-writer/java-empty.puffin")
    assert pf.blobs == [] and "created-by" in pf.properties and pf.findings == []
    pf = PuffinFile(fixtures / "puffin/iceberg-java-writer/java-generic-zstd.puffin")
    a, b = pf.blobs
    assert (a.compression_codec, b.compression_codec) == (None, "zstd")
    assert a.read() == b.read() and len(a.read()) == 8800
    assert pf.findings == []


def test_truncated_magic_only(fixtures):
    pf = PuffinFile(fixtures / "puffin/truncated/magic-only.puffin")
    assert pf.size == 4 and pf.blobs == []
    assert [(f.code, f.offset) for f in pf.findings] == [("footer.missing", 4)]
    assert [r.kind for r in pf.regions().children] == ["magic"]


def test_truncated_blobs_without_footer(fixtures):
    pf = PuffinFile(fixtures / "puffin/truncated/blobs-without-footer.puffin")
    assert pf.size == 8_873 and pf.blobs == []
    [f] = pf.findings
    assert (f.code, f.offset) == ("footer.magic-end", 8_869)
    kinds = [(r.kind, r.offset, r.length) for r in pf.regions().children]
    assert kinds == [("magic", 0, 4), ("unparsed", 4, 8_869)]


def test_bare_dv_golden_blobs(fixtures):
    empty = (fixtures / "dv-blobs/empty-position-index.bin").read_bytes()
    dv = DeletionVector.from_bytes(empty)
    assert len(empty) == 20 and dv.length_prefix == 12 and dv.cardinality == 0
    assert dv.bucket_count == 0 and dv.crc_stored == 0xBF18480C and dv.findings == []
    small = (fixtures / "dv-blobs/small-alternating-values-position-index.bin").read_bytes()
    dv = DeletionVector.from_bytes(small)
    assert len(small) == 50 and dv.positions().tolist() == [1, 3, 5, 7, 9]
    assert dv.crc_stored == 0xB3FB20BE and dv.crc_ok
    assert DeletionVector.from_positions([9, 7, 5, 3, 1, 1]).to_bytes() == small
    assert DeletionVector.from_positions([]).to_bytes() == empty


def test_read_dv_by_manifest_range(fixtures):
    path = fixtures / "puffin/iceberg-java-writer/java-dv-shapes.puffin"
    dv = read_dv(path, offset=175, length=16_432)
    assert dv.cardinality == 60_000 and dv.offset == 175 and dv.findings == []


def test_warehouse_dvs_match_delete_files_table(fixtures):
    """Each DV of the Spark-written tables, read by its manifest range, has the recorded cardinality."""
    import csv

    for table in ("orders", "events"):
        rows = list(csv.DictReader(open(fixtures / f"warehouse/{table}_delete_files.csv")))
        assert rows
        for row in rows:
            local = str(fixtures / "warehouse") + row["file_path"].split("/data/warehouse", 1)[1]
            dv = read_dv(local, int(row["content_offset"]), int(row["content_size_in_bytes"]))
            assert dv.findings == []
            assert dv.cardinality == int(row["record_count"])
            pf = PuffinFile(local)
            [blob] = [b for b in pf.blobs if b.offset == int(row["content_offset"])]
            assert blob.properties["referenced-data-file"] == row["referenced_data_file"]
            assert pf.findings == []
