"""Puffin files over a real S3-compatible server: exact contents, and only the bytes that are needed."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from puffin_explorer import DeletionVector, PuffinFile, PuffinWriter, read_dv
from puffin_explorer.errors import SourceError

from conftest import FIXTURES


pytestmark = pytest.mark.s3

PUFFIN_FIXTURES = FIXTURES / "puffin"
TAIL = 64 * 1024
DV_FIELD = 2147483645

# java-dv-shapes.puffin: (name, content_offset, content_size, cardinality, positions)
HIGH = [5, 2**32 + 7, 2**33 + 1, 3 * 2**32 - 1]
JAVA_DV_SHAPES = [
    ("sparse", 4, 72, 8, np.array([0, 2, 4, 1000, 65535, 65536, 70000, 1048576], dtype=np.uint64)),
    ("range", 76, 99, 299_900, np.arange(100, 300_000, dtype=np.uint64)),
    ("dense", 175, 16_432, 60_000, np.arange(1, 120_000, 2, dtype=np.uint64)),
    ("high", 16_607, 96, 4, np.array(sorted(HIGH), dtype=np.uint64)),
]


@pytest.fixture(scope="module")
def puffin_prefix(s3_server):
    """The fixture folder ``puffin/`` uploaded to ``s3://<bucket>/puffin-core/puffin``."""
    return s3_server.upload(PUFFIN_FIXTURES, "puffin-core/puffin")


def _gets(wire):
    return [(r.content_range, r.bytes_sent) for r in wire if r.operation == "GetObject"]


def test_trino_dv_over_s3(s3_server, puffin_prefix):
    url = f"{puffin_prefix}/trino/deletion-vector-v1.puffin"
    with s3_server.record_requests() as wire:
        pf = PuffinFile(url, storage_options=s3_server.storage_options)
    # a 521-byte file: the one speculative tail read is the whole file
    assert (pf.size, pf.source.read_count, pf.source.bytes_read) == (521, 1, 521)
    assert _gets(wire) == [("bytes 0-520/521", 521)]
    assert pf.properties == {"created-by": "Trino version testversion"}
    assert pf.footer.payload_size == 455 and pf.footer.flags == 0
    assert len(pf.blobs) == 1
    b = pf.blobs[0]
    assert (b.type, b.fields, b.snapshot_id, b.sequence_number) == ("deletion-vector-v1", [DV_FIELD], -1, -1)
    assert (b.offset, b.length, b.compression_codec) == (4, 46, None)
    assert b.properties["cardinality"] == "3"
    assert b.properties["referenced-data-file"].startswith("file:/var/folders/")
    assert "/region-" in b.properties["referenced-data-file"]

    with s3_server.record_requests() as wire:
        dv = b.decode()
    assert wire == []  # the blob was inside the tail already read: no second request
    assert (pf.source.read_count, pf.source.bytes_read) == (1, 521)
    assert dv.positions().tolist() == [0, 2, 4]
    assert dv.cardinality == 3
    assert dv.length_prefix == 38
    assert dv.crc_stored == 0x3065D8B8 and dv.crc_ok
    assert pf.findings == []


def test_java_dv_shapes_over_s3(s3_server, puffin_prefix):
    url = f"{puffin_prefix}/iceberg-java-writer/java-dv-shapes.puffin"
    with s3_server.record_requests() as wire:
        pf = PuffinFile(url, storage_options=s3_server.storage_options)
    assert pf.size == 17_662
    assert (pf.source.read_count, pf.source.bytes_read) == (1, 17_662)
    assert _gets(wire) == [("bytes 0-17661/17662", 17_662)]
    assert pf.properties["created-by"].startswith("Apache Iceberg Java")
    assert [b.type for b in pf.blobs] == ["deletion-vector-v1"] * 4
    for b, (name, offset, length, card, positions) in zip(pf.blobs, JAVA_DV_SHAPES):
        assert (b.offset, b.length, b.compression_codec, b.fields) == (offset, length, None, [DV_FIELD])
        assert b.properties == {"referenced-data-file": f"s3://bucket/wh/db/t/data/{name}.parquet",
                                "cardinality": str(card)}
        dv = b.decode()
        assert dv.cardinality == card
        np.testing.assert_array_equal(dv.positions(), positions)
        assert dv.crc_ok and dv.findings == []
    # 17,662 bytes < 64 KiB: every blob came out of the one tail read
    assert (pf.source.read_count, pf.source.bytes_read) == (1, 17_662)
    high = pf.blobs[3].decode()
    assert [bk.key for bk in high.buckets] == [0, 1, 2]  # Java writes an empty bucket below the max key
    assert all(high.contains(p) for p in HIGH) and not high.contains(2**32 + 8)
    assert pf.blobs[1].decode().containers()["type"].tolist() != []
    assert pf.findings == []


@pytest.mark.parametrize("name, offset, length, card, positions", JAVA_DV_SHAPES)
def test_read_dv_over_s3_reads_exactly_length_bytes(s3_server, puffin_prefix, name, offset, length, card,
                                                    positions):
    url = f"{puffin_prefix}/iceberg-java-writer/java-dv-shapes.puffin"
    with s3_server.record_requests() as wire:
        dv = read_dv(url, offset=offset, length=length, storage_options=s3_server.storage_options)
    # one ranged GET of exactly the DV, and nothing else (not even a size probe)
    assert [(r.operation, r.content_range, r.bytes_sent) for r in wire] == [
        ("GetObject", f"bytes {offset}-{offset + length - 1}/17662", length)]
    assert dv.cardinality == card
    np.testing.assert_array_equal(dv.positions(), positions)
    assert dv.findings == []


def test_read_dv_past_the_end_is_a_clear_error(s3_server, puffin_prefix):
    url = f"{puffin_prefix}/iceberg-java-writer/java-dv-shapes.puffin"
    with pytest.raises(SourceError, match="ends before the DV"):
        read_dv(url, offset=17_600, length=200, storage_options=s3_server.storage_options)


def test_theta_stats_file_over_s3(s3_server, puffin_prefix):
    pf = PuffinFile(f"{puffin_prefix}/trino/apache-datasketches-theta-v1.puffin",
                    storage_options=s3_server.storage_options)
    assert pf.size == 843 and (pf.source.read_count, pf.source.bytes_read) == (1, 843)
    assert [(b.offset, b.length, b.compression_codec, b.fields) for b in pf.blobs] == [
        (4, 69, "zstd", [1]), (73, 69, "zstd", [2]), (142, 69, "zstd", [3])]
    for b in pf.blobs:
        assert (b.snapshot_id, b.sequence_number, b.properties) == (3906904963261072048, 1, {"ndv": "5"})
        assert len(b.read()) == 56
        assert b.decode().estimate == 5.0


@pytest.mark.parametrize("name, code", [("magic-only.puffin", "footer.missing"),
                                        ("blobs-without-footer.puffin", "footer.magic-end")])
def test_truncated_files_over_s3_open_and_say_what_is_wrong(s3_server, puffin_prefix, name, code):
    pf = PuffinFile(f"{puffin_prefix}/truncated/{name}", storage_options=s3_server.storage_options)
    assert pf.blobs == []
    assert [f.code for f in pf.findings] == [code]


def _big_blob_file(path: Path) -> tuple[bytes, bytes]:
    """A 2 MiB raw blob followed by a DV: the footer is far from the first blob."""
    raw = os.urandom(2 << 20)
    w = PuffinWriter(properties={"created-by": "puffin_explorer tests"})
    w.add_blob(raw, "test-raw-v1", [1])
    w.add_dv(np.arange(0, 200_000, 3, dtype=np.uint64), "s3://bucket/wh/data/big.parquet")
    data = w.to_bytes()
    path.write_bytes(data)
    return data, raw


def test_open_large_file_over_s3_reads_one_64k_tail(s3_server, tmp_path):
    data, raw = _big_blob_file(tmp_path / "big.puffin")
    url = s3_server.upload(tmp_path / "big.puffin", "generated")
    size = len(data)
    with s3_server.record_requests() as wire:
        pf = PuffinFile(url, storage_options=s3_server.storage_options)
    assert pf.size == size
    assert (pf.source.read_count, pf.source.bytes_read) == (1, TAIL)
    assert _gets(wire) == [(f"bytes {size - TAIL}-{size - 1}/{size}", TAIL)]
    assert [b.type for b in pf.blobs] == ["test-raw-v1", "deletion-vector-v1"]

    dv_blob = pf.blobs[1]
    assert dv_blob.offset >= size - TAIL  # the DV sits inside the tail already read
    with s3_server.record_requests() as wire:
        dv = dv_blob.decode()
    assert wire == []
    assert dv.cardinality == len(range(0, 200_000, 3))
    with s3_server.record_requests() as wire:
        assert pf.blobs[0].read() == raw
    # the raw blob is outside the tail: exactly its bytes, one request
    assert _gets(wire) == [(f"bytes 4-{4 + len(raw) - 1}/{size}", len(raw))]
    assert (pf.source.read_count, pf.source.bytes_read) == (2, TAIL + len(raw))


def test_validating_a_file_over_s3_reads_it_about_once(s3_server, tmp_path):
    data, _raw = _big_blob_file(tmp_path / "big.puffin")
    url = s3_server.upload(tmp_path / "big.puffin", "generated-validate")
    with s3_server.record_requests() as wire:
        pf = PuffinFile(url, storage_options=s3_server.storage_options)
        assert pf.findings == []
    gets = [r for r in wire if r.operation == "GetObject"]
    assert all(r.status == 206 for r in gets)
    assert sum(r.bytes_sent for r in gets) == pf.source.bytes_read
    # every blob is read; the blob-area fetch may overlap the tail already read, never more
    assert len(data) - TAIL <= pf.source.bytes_read <= len(data) + TAIL
    assert pf.source.read_count == len(gets) <= 3


def test_footer_larger_than_the_tail_takes_one_more_exact_read(s3_server, tmp_path):
    w = PuffinWriter(properties={"created-by": "puffin_explorer tests"})
    for i in range(600):  # about 120 KiB of footer JSON
        w.add_dv([i, i + 10], f"s3://bucket/warehouse/db/table/data/part-{i:05d}-a-much-longer-file-name.parquet")
    data = w.to_bytes()
    (tmp_path / "many.puffin").write_bytes(data)
    url = s3_server.upload(tmp_path / "many.puffin", "generated")
    with s3_server.record_requests() as wire:
        pf = PuffinFile(url, storage_options=s3_server.storage_options)
    footer = pf.footer_size
    assert footer > TAIL
    size = len(data)
    assert (pf.source.read_count, pf.source.bytes_read) == (2, footer)
    assert _gets(wire) == [(f"bytes {size - TAIL}-{size - 1}/{size}", TAIL),
                           (f"bytes {size - footer}-{size - TAIL - 1}/{size}", footer - TAIL)]
    assert len(pf.blobs) == 600
    assert pf.blobs[599].decode().positions().tolist() == [599, 609]
    assert pf.findings == []


def test_lz4_footer_and_blobs_over_s3(s3_server, tmp_path):
    text = b"lz4 over s3 " * 1000
    w = PuffinWriter(properties={"created-by": "puffin_explorer tests"}, compress_footer=True)
    w.add_blob(text, "some-blob", [7], snapshot_id=11, sequence_number=3, codec="lz4")
    w.add_dv(DeletionVector.from_positions(np.array([3, 1, 2], dtype=np.uint64)), "s3://b/f.parquet")
    (tmp_path / "lz4.puffin").write_bytes(w.to_bytes())
    url = s3_server.upload(tmp_path / "lz4.puffin", "generated")
    pf = PuffinFile(url, storage_options=s3_server.storage_options)
    assert pf.footer.compressed
    assert pf.properties == {"created-by": "puffin_explorer tests"}
    assert (pf.blobs[0].compression_codec, pf.blobs[0].snapshot_id) == ("lz4", 11)
    assert pf.blobs[0].length < len(text)
    assert pf.blobs[0].read() == text
    assert pf.blobs[1].decode().positions().tolist() == [1, 2, 3]
    assert pf.findings == []
