"""Opening reads the footer only: one tail read, a second exact read only for a larger footer."""

from __future__ import annotations


import pytest

from make_samples import assemble
from puffin_explorer import PuffinFile, read_dv
from puffin_explorer.format.footer import DEFAULT_TAIL


def sparse_puffin(path, blob_area: int, blobs: int, pad_properties: int = 0) -> int:
    """A Puffin file with a ``blob_area``-byte hole (zeros, sparse on disk) described by ``blobs`` raw blobs."""
    each = blob_area // blobs
    entries = [{"type": "com.example.raw", "fields": [1], "snapshot-id": 1, "sequence-number": 1,
                "offset": 4 + i * each, "length": each} for i in range(blobs)]
    footer = assemble([], {"blobs": entries, "properties": {"pad": "x" * pad_properties}})[4:]
    with open(path, "wb") as f:
        f.write(b"PFA1")
        f.seek(4 + each * blobs)
        f.write(footer)
    return len(footer)


def test_open_1gib_file_reads_one_tail(tmp_path):
    path = tmp_path / "big.puffin"
    footer = sparse_puffin(path, 1 << 30, 64)
    pf = PuffinFile(path)
    assert pf.size == (1 << 30) + 4 + footer
    assert len(pf.blobs) == 64 and pf.footer_findings == []
    assert pf.source.read_count == 1
    assert pf.source.bytes_read == DEFAULT_TAIL
    data = pf.blobs[10].read_stored()
    assert len(data) == (1 << 30) // 64 and pf.source.read_count == 2


def test_footer_larger_than_tail_costs_one_exact_read(tmp_path):
    path = tmp_path / "bigfooter.puffin"
    footer = sparse_puffin(path, 1 << 20, 4, pad_properties=200_000)
    assert footer > DEFAULT_TAIL
    pf = PuffinFile(path)
    assert pf.properties["pad"] == "x" * 200_000
    assert pf.source.read_count == 2
    assert pf.source.bytes_read == footer  # tail + the exact rest of the footer, nothing more


def test_small_tail_size_still_reads_exactly(resources):
    pf = PuffinFile(resources / "multi-dv.puffin", tail_size=32)
    assert len(pf.blobs) == 4 and pf.source.read_count == 2
    assert pf.source.bytes_read == pf.footer.size


def test_read_dv_reads_only_its_range(resources):
    pf = PuffinFile(resources / "multi-dv.puffin")
    b = pf.blobs[2]
    from puffin_explorer.io import ByteSource

    src = ByteSource(resources / "multi-dv.puffin")
    dv = read_dv(src, b.offset, b.length)
    assert src.bytes_read == b.length and src.read_count == 1
    assert dv.cardinality == 200_000


def test_read_dv_past_end_is_a_clear_error(resources):
    from puffin_explorer import SourceError

    with pytest.raises(SourceError, match="ends before the DV"):
        read_dv(resources / "multi-dv.puffin", 60_000, 10_000)


def test_memory_and_bytes_locations(resources):
    import fsspec

    data = (resources / "trino-deletion-vector-v1.puffin").read_bytes()
    fs = fsspec.filesystem("memory")
    fs.pipe("/dv/x.puffin", data)
    pf = PuffinFile("memory://dv/x.puffin")
    assert pf.blobs[0].decode().positions().tolist() == [0, 2, 4]
    assert PuffinFile(data).blobs[0].decode().cardinality == 3


def test_missing_file_is_a_clear_error(tmp_path):
    from puffin_explorer import SourceError

    with pytest.raises(SourceError, match="no such file"):
        PuffinFile(tmp_path / "nope.puffin")


def test_a_decoded_blob_goes_with_its_file_without_a_collection(resources):
    """``PuffinFile(p).blobs[0].decode().positions()`` leaves no cyclic garbage: the decoded vector (its bytes and
    positions) is freed when the last reference goes, not at the next collection (a loop over files otherwise
    holds every file's positions until then); an open file keeps what it decoded while it is referenced."""
    import gc
    import weakref

    path = resources / "multi-dv.puffin"
    was = gc.isenabled()
    gc.disable()
    try:
        dv = PuffinFile(path).blobs[2].decode()
        gone = weakref.ref(dv)
        assert len(dv.positions()) == 200_000 and dv.metadata.index == 2 and dv.metadata.file is None
        del dv
        assert gone() is None
        pf = PuffinFile(path)
        kept = weakref.ref(pf.blobs[2].decode())
        assert kept() is not None and pf.blobs[2].decode() is kept()  # decoded once while the file is open
        del pf
        assert kept() is None
    finally:
        if was:
            gc.enable()
