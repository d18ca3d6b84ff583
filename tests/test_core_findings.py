"""Each finding code triggered by a crafted file, with the byte offset where it is reported."""

from __future__ import annotations

import struct

import pytest

from make_samples import EXPECTED, assemble, build_samples, dv_entry
from puffin_explorer import (BlobDecodeError, DeletionVector, InvalidFileError, PuffinFile, ThetaSketch)
from puffin_explorer.regions import Severity


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_broken_sample_reports_its_finding(resources, name):
    pf = PuffinFile(resources / name)
    codes = [f.code for f in pf.findings]
    if EXPECTED[name] is None:
        assert codes == []
    else:
        assert EXPECTED[name] in codes
        assert all(f.offset is not None for f in pf.findings)
    pf.regions()  # the region tree is built whatever the file holds


def test_samples_are_what_the_generator_writes(resources):
    for name, data in build_samples().items():
        assert (resources / name).read_bytes() == data, name


@pytest.mark.parametrize("name", ["multi-dv.puffin", "stats-theta.puffin", "mixed-lz4.puffin",
                                  "trino-deletion-vector-v1.puffin", "trino-theta-v1.puffin",
                                  "iceberg-java-dv-shapes.puffin"])
def test_good_samples_are_valid(resources, name):
    pf = PuffinFile(resources / name, strict=True)
    assert pf.validate() == [] and pf.is_valid


def offsets(pf):
    return {f.code: f.offset for f in pf.findings}


def test_exact_offsets_of_footer_findings(resources):
    size = (resources / "broken-trailing-magic.puffin").stat().st_size
    assert offsets(PuffinFile(resources / "broken-trailing-magic.puffin"))["footer.magic-end"] == size - 4
    pf = PuffinFile(resources / "broken-negative-payload-size.puffin")
    assert offsets(pf)["footer.payload-size-negative"] == pf.size - 12
    pf = PuffinFile(resources / "broken-reserved-flags.puffin")
    assert offsets(pf)["footer.flags-reserved"] == pf.size - 8
    assert pf.footer_findings[0].severity is Severity.WARNING
    pf = PuffinFile(resources / "broken-footer-start-magic.puffin")
    assert offsets(pf)["footer.magic-start"] == pf.footer.offset == 4 + 48
    assert offsets(PuffinFile(resources / "broken-header-magic.puffin"))["magic.header"] == 0
    # JSON errors point at the byte in the payload where parsing stopped.
    pf = PuffinFile(resources / "broken-footer-not-json.puffin")
    assert offsets(pf)["footer.json"] == pf.footer.payload_offset + len('{"blobs":[{"type":"deletion-vector-v1",')


def test_exact_offsets_of_dv_findings(resources):
    # DV framing problems are reported inside the blob, which starts at byte 4.
    assert offsets(PuffinFile(resources / "broken-dv-magic.puffin"))["dv.magic"] == 4 + 4
    pf = PuffinFile(resources / "broken-dv-crc.puffin")
    assert offsets(pf)["dv.crc"] == 4 + pf.blobs[0].length - 4
    assert offsets(PuffinFile(resources / "broken-dv-length-prefix.puffin"))["dv.length-prefix"] == 4
    # keys: count (8) + bucket 0 (4-byte key + 18-byte bitmap) then bucket 1's key
    pf = PuffinFile(resources / "broken-dv-key-order.puffin")
    assert offsets(pf)["roaring.keys-order"] == 4 + 8 + 8 + 4 + 18
    pf = PuffinFile(resources / "broken-blob-overlap.puffin")
    assert offsets(pf)["blob.overlap"] == 20
    pf = PuffinFile(resources / "broken-unclaimed-bytes.puffin")
    [gap] = [f for f in pf.findings if f.code == "layout.unclaimed"]
    assert (gap.offset, gap.length) == (52, 64)


def test_cardinality_mismatch_names_both_numbers(resources):
    [f] = PuffinFile(resources / "broken-dv-cardinality.puffin").findings
    assert f.message == "blob 0: property cardinality says 5, the vector holds 4"


def test_huge_sizes_are_checked_before_allocating(resources):
    pf = PuffinFile(resources / "broken-dv-bucket-count.puffin")
    f = [f for f in pf.findings if f.code == "dv.bucket-count"][0]
    assert "1,099,511,627,776 buckets declared" in f.message
    pf = PuffinFile(resources / "broken-blob-out-of-bounds.puffin")
    assert not pf.blobs[0].readable
    with pytest.raises(InvalidFileError):
        pf.blobs[0].read()
    pf = PuffinFile(resources / "broken-payload-size-beyond-file.puffin")
    assert pf.source.bytes_read <= pf.size and pf.blobs == []


def test_strict_raises_first_error(resources):
    with pytest.raises(InvalidFileError, match="footer.magic-end"):
        PuffinFile(resources / "broken-trailing-magic.puffin", strict=True)
    # the footer is fine: strict opening checks the blobs too (a DV failing its CRC raises)
    with pytest.raises(InvalidFileError, match="dv.crc"):
        PuffinFile(resources / "broken-dv-crc.puffin", strict=True)
    pf = PuffinFile(resources / "broken-dv-crc.puffin")
    pf.strict = True
    with pytest.raises(InvalidFileError, match="dv.crc"):
        pf.validate()
    with pytest.raises(InvalidFileError, match="dv.crc"):
        pf.blobs[0].decode()
    bad = (resources / "broken-dv-magic.puffin").read_bytes()[4:52]
    with pytest.raises(BlobDecodeError, match="dv.magic"):
        DeletionVector.from_bytes(bad, strict=True)


def _one_blob(footer_extra: dict | None = None, blob: bytes | None = None, **over) -> bytes:
    data = blob if blob is not None else DeletionVector.from_positions([1, 2]).to_bytes()
    e = dv_entry(4, data, 2, "f.parquet")
    e.update(over)
    doc = {"blobs": [e]}
    doc.update(footer_extra or {})
    return assemble([data], doc)


def codes(data: bytes) -> list[str]:
    return [f.code for f in PuffinFile(data).findings]


def test_crafted_footer_schema_problems():
    assert codes(assemble([], {"properties": {}})) == ["footer.schema"]
    assert codes(assemble([], "[1, 2]")) == ["footer.schema"]
    assert codes(assemble([], {"blobs": {}})) == ["footer.schema"]
    assert "footer.property-type" in codes(_one_blob({"properties": {"n": 5}}))
    assert "footer.blob-field" in codes(_one_blob(fields=["x"]))
    assert "footer.blob-field" in codes(_one_blob(offset=True))
    assert codes(b"PF") == ["file.too-small"]
    assert codes(b"PFA1" + b"\x00" * 10) == ["footer.missing"]


def test_crafted_dv_property_problems():
    data = DeletionVector.from_positions([1, 2]).to_bytes()
    e = dv_entry(4, data, 2, "f.parquet")
    e["properties"] = {"referenced-data-file": "f"}
    assert codes(assemble([data], {"blobs": [e]})) == ["dv.cardinality-missing"]
    e["properties"] = {"referenced-data-file": "f", "cardinality": "two"}
    assert codes(assemble([data], {"blobs": [e]})) == ["dv.cardinality-invalid"]


def test_crafted_roaring_problems():
    import zlib

    def frame(vector: bytes) -> bytes:
        body = b"\xd1\xd3\x39\x64" + vector
        return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))

    # unknown cookie
    dv = DeletionVector.from_bytes(frame(struct.pack("<QI", 1, 0) + b"\x99\x99\x00\x00" + b"\x00" * 8))
    assert [f.code for f in dv.findings] == ["roaring.cookie"] and dv.findings[0].offset == 20
    # array container whose values are not ascending: cookie 12346, 1 container, key 0 card 2, offset, values 5, 3
    bm = struct.pack("<IIHHI", 12346, 1, 0, 1, 16) + struct.pack("<HH", 5, 3)
    dv = DeletionVector.from_bytes(frame(struct.pack("<QI", 1, 0) + bm))
    assert [f.code for f in dv.findings] == ["roaring.container"]
    assert dv.positions().tolist() == [3, 5]  # still decoded, leniently
    # container count larger than the bytes left
    bm = struct.pack("<II", 12346, 5000)
    dv = DeletionVector.from_bytes(frame(struct.pack("<QI", 1, 0) + bm + b"\x00" * 4))
    assert "roaring.truncated" in [f.code for f in dv.findings]
    assert DeletionVector.from_bytes(b"\x00" * 7).findings[0].code == "dv.truncated"


def test_crafted_theta_problems():
    from make_samples import theta_bytes

    sk = ThetaSketch.from_bytes(theta_bytes(range(10))[:20])
    assert "theta.truncated" in [f.code for f in sk.findings]
    raw = bytearray(theta_bytes(range(10)))
    raw[2] = 2
    assert "theta.family" in [f.code for f in ThetaSketch.from_bytes(bytes(raw)).findings]
    data = theta_bytes(range(10))
    e = {"type": "apache-datasketches-theta-v1", "fields": [1], "snapshot-id": 1, "sequence-number": 1,
         "offset": 4, "length": len(data), "properties": {"ndv": "ten"}}
    assert codes(assemble([data], {"blobs": [e]})) == ["theta.ndv-invalid"]


def test_unknown_blob_types_are_kept_raw(resources):
    pf = PuffinFile(resources / "mixed-lz4.puffin")
    types = [b.type for b in pf.blobs]
    assert types == ["apache-datasketches-theta-v1", "deletion-vector-v1", "com.example.bloom-v1",
                     "com.example.binary"]
    assert pf.blobs[2].decode().text == "custom payload " * 200
    assert pf.blobs[3].decode().data == b"\x00\x01\x02" * 300
    assert pf.footer.compressed
    assert pf.blobs[0].decode().estimate == 1000.0
    assert pf.blobs[1].decode().cardinality == len(range(0, 5000, 3))


def test_decoder_registry_plugs_in_new_types(resources):
    from puffin_explorer import register_decoder
    from puffin_explorer.format.raw import RawBlob

    class Bloom(RawBlob):
        def summary(self):
            return f"bloom of {self.size} bytes"

    register_decoder("com.example.bloom-v1", Bloom)
    try:
        pf = PuffinFile(resources / "mixed-lz4.puffin")
        assert pf.blobs[2].decode().summary() == "bloom of 3000 bytes"
    finally:
        from puffin_explorer.format import registry

        registry._DECODERS.pop("com.example.bloom-v1")
