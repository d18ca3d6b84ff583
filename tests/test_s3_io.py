"""Range reads over a real S3-compatible server: exactly the bytes asked for, and the same bytes as on disk."""

from __future__ import annotations


import pytest

from puffin_explorer.errors import SourceError
from puffin_explorer.io import ByteSource

from conftest import FIXTURES


pytestmark = pytest.mark.s3

PUFFIN_FIXTURES = FIXTURES / "puffin"
FIXTURE_FILES = sorted(p.relative_to(PUFFIN_FIXTURES).as_posix() for p in PUFFIN_FIXTURES.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def puffin_prefix(s3_server):
    """The fixture folder ``puffin/`` uploaded to ``s3://<bucket>/fixtures/puffin``."""
    if not PUFFIN_FIXTURES.is_dir():
        pytest.fail(f"fixtures not found at {PUFFIN_FIXTURES}")
    return s3_server.upload(PUFFIN_FIXTURES, "fixtures/puffin")


def test_fixture_files_found():
    assert "trino/deletion-vector-v1.puffin" in FIXTURE_FILES
    assert "iceberg-java-writer/java-dv-shapes.puffin" in FIXTURE_FILES


def test_server_checks_credentials(s3_server, puffin_prefix):
    import s3fs

    wrong = dict(s3_server.storage_options, secret="not-the-secret")
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **wrong)
    with pytest.raises(PermissionError):
        fs.cat_file(f"{puffin_prefix}/trino/deletion-vector-v1.puffin")
    with pytest.raises(SourceError):
        ByteSource(f"{puffin_prefix}/trino/deletion-vector-v1.puffin", {**wrong, "skip_instance_cache": True})


def test_upload_places_every_file(s3_server, puffin_prefix):
    listed = sorted(p[len(f"{s3_server.bucket}/fixtures/puffin/"):] for p in s3_server.fs.find(puffin_prefix))
    assert listed == FIXTURE_FILES
    single = s3_server.upload(PUFFIN_FIXTURES / "trino" / "deletion-vector-v1.puffin", "single")
    assert single == f"s3://{s3_server.bucket}/single/deletion-vector-v1.puffin"
    assert s3_server.fs.cat_file(single) == (PUFFIN_FIXTURES / "trino" / "deletion-vector-v1.puffin").read_bytes()


def _ranges(size: int) -> list[tuple[int, int]]:
    """Header, trailer, a middle slice, the whole file, and one clipped at the end."""
    out = [(0, min(4, size)), (max(0, size - 12), min(12, size)), (size // 3, max(1, size // 4)), (0, size),
           (max(0, size - 3), 100)]
    return out


@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_range_reads_match_local_file_and_count_exact_bytes(s3_server, puffin_prefix, name):
    local = (PUFFIN_FIXTURES / name).read_bytes()
    url = f"{puffin_prefix}/{name}"
    with s3_server.record_requests() as wire:
        src = ByteSource(url, storage_options=s3_server.storage_options)
        assert src.size == len(local)
        assert (src.bytes_read, src.read_count) == (0, 0)
        expected_bytes = 0
        expected_reads = 0
        for offset, length in _ranges(len(local)):
            before = len(wire)
            got = src.read(offset, length)
            want = local[offset:offset + length]
            assert got == want, f"[{offset}, +{length})"
            expected_bytes += len(want)
            expected_reads += 1
            assert (src.bytes_read, src.read_count) == (expected_bytes, expected_reads)
            gets = [r for r in wire[before:] if r.operation == "GetObject"]
            assert len(gets) == 1
            assert gets[0].status == 206
            assert gets[0].bytes_sent == len(want)
            assert gets[0].content_range == f"bytes {offset}-{offset + len(want) - 1}/{len(local)}"
    assert sum(r.bytes_sent for r in wire) == expected_bytes


def test_tail_read_reads_only_the_tail(s3_server, puffin_prefix):
    local = (PUFFIN_FIXTURES / "iceberg-java-writer" / "java-dv-shapes.puffin").read_bytes()
    src = ByteSource(f"{puffin_prefix}/iceberg-java-writer/java-dv-shapes.puffin", s3_server.storage_options)
    with s3_server.record_requests() as wire:
        start, tail = src.tail(1000)
    assert start == len(local) - 1000
    assert tail == local[-1000:]
    assert (src.bytes_read, src.read_count) == (1000, 1)
    assert [(r.operation, r.bytes_sent) for r in wire] == [("GetObject", 1000)]


def test_empty_and_out_of_range_reads_send_nothing(s3_server, puffin_prefix):
    src = ByteSource(f"{puffin_prefix}/trino/deletion-vector-v1.puffin", s3_server.storage_options)
    with s3_server.record_requests() as wire:
        assert src.read(100, 0) == b""
        assert src.read(src.size, 10) == b""
        assert src.read(src.size + 5, 10) == b""
    assert wire == []
    assert (src.bytes_read, src.read_count) == (0, 0)
    with pytest.raises(ValueError):
        src.read(-1, 4)


def test_missing_object_is_a_source_error(s3_server, puffin_prefix):
    with pytest.raises(SourceError, match="no such file"):
        ByteSource(f"{puffin_prefix}/does-not-exist.puffin", s3_server.storage_options)
