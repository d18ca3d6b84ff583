"""Regenerate the sample Puffin files in this folder with the project's own writer.

    python resources/make_samples.py          # write the samples next to this script
    python resources/make_samples.py --check  # exit 1 if a committed sample differs

Every sample is deterministic (fixed seeds, fixed codecs), so the committed files
are exactly what this script writes.  ``broken-*.puffin`` files each break one
rule on purpose; ``EXPECTED`` names the finding code each must produce, and
``broken-*.findings.json`` beside each is the full list of findings the reader
reports for it (golden files: rewritten by this script, compared by the tests).
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from puffin_explorer import DeletionVector, PuffinWriter  # noqa: E402
from puffin_explorer.format.codecs import compress  # noqa: E402

CREATED_BY = "puffin_explorer sample generator"
DATA = "s3://warehouse/db/events/data"

#: finding code each broken sample must produce
EXPECTED = {
    "broken-header-magic.puffin": "magic.header",
    "broken-footer-start-magic.puffin": "footer.magic-start",
    "broken-trailing-magic.puffin": "footer.magic-end",
    "broken-negative-payload-size.puffin": "footer.payload-size-negative",
    "broken-payload-size-beyond-file.puffin": "footer.payload-size-beyond-file",
    "broken-reserved-flags.puffin": "footer.flags-reserved",
    "broken-footer-not-utf8.puffin": "footer.utf8",
    "broken-footer-not-json.puffin": "footer.json",
    "broken-footer-missing-field.puffin": "footer.blob-field",
    "broken-footer-lz4.puffin": "footer.decompress",
    "broken-blob-out-of-bounds.puffin": "blob.out-of-bounds",
    "broken-blob-overlap.puffin": "blob.overlap",
    "broken-unclaimed-bytes.puffin": "layout.unclaimed",
    "broken-unknown-codec.puffin": "blob.unknown-codec",
    "broken-zstd-frame.puffin": "blob.decompress",
    "broken-dv-compressed.puffin": "dv.codec",
    "broken-dv-snapshot-id.puffin": "dv.snapshot-id",
    "broken-dv-no-referenced-file.puffin": "dv.referenced-data-file",
    "broken-dv-cardinality.puffin": "dv.cardinality-mismatch",
    "broken-dv-fields.puffin": "dv.fields",
    "broken-dv-length-prefix.puffin": "dv.length-prefix",
    "broken-dv-magic.puffin": "dv.magic",
    "broken-dv-crc.puffin": "dv.crc",
    "broken-dv-key-order.puffin": "roaring.keys-order",
    "broken-dv-key-range.puffin": "roaring.key-range",
    "broken-dv-trailing-bytes.puffin": "roaring.trailing-bytes",
    "broken-dv-bucket-count.puffin": "dv.bucket-count",
    "broken-theta-ndv.puffin": "theta.ndv-mismatch",
    "broken-theta-seed.puffin": "theta.seed-hash",
    "broken-hostile-strings.puffin": None,  # valid file whose strings try to inject HTML/script
}


def theta_bytes(values, seed: int = 9001, lg_k: int = 12) -> bytes:
    import datasketches

    sk = datasketches.update_theta_sketch(lg_k=lg_k, seed=seed)
    for v in values:
        sk.update(v)
    return sk.compact().serialize()


def assemble(blobs: list[bytes], footer: dict | str | bytes, flags: int = 0, head: bytes = b"PFA1",
             payload_size: int | None = None, end_magic: bytes = b"PFA1", start_magic: bytes = b"PFA1") -> bytes:
    """Put a file together by hand, so a footer can say anything."""
    if isinstance(footer, dict):
        footer = json.dumps(footer, separators=(",", ":"))
    payload = footer.encode("utf-8") if isinstance(footer, str) else footer
    size = len(payload) if payload_size is None else payload_size
    return head + b"".join(blobs) + start_magic + payload + struct.pack("<iI", size, flags) + end_magic


def dv_entry(offset: int, data: bytes, card: int, ref: str, **over) -> dict:
    e = {"type": "deletion-vector-v1", "fields": [2147483645], "snapshot-id": -1, "sequence-number": -1,
         "offset": offset, "length": len(data),
         "properties": {"referenced-data-file": ref, "cardinality": str(card)}}
    e.update(over)
    return e


def _dv_bytes_from_buckets(buckets: list[tuple[int, bytes]], count: int | None = None, tail: bytes = b"") -> bytes:
    import zlib

    vector = struct.pack("<Q", len(buckets) if count is None else count)
    vector += b"".join(struct.pack("<I", k) + bm for k, bm in buckets) + tail
    body = b"\xd1\xd3\x39\x64" + vector
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def _roaring(values) -> bytes:
    from pyroaring import BitMap

    bm = BitMap(values)
    bm.run_optimize()
    return bm.serialize()


def build_samples() -> dict[str, bytes]:
    rng = np.random.default_rng(20261122)
    out: dict[str, bytes] = {}

    # A delete file of an events table: four data files, four deletion-vector shapes.
    w = PuffinWriter(properties={"created-by": CREATED_BY})
    w.add_dv(np.sort(rng.choice(1_000_000, 2_500, replace=False)), f"{DATA}/00000-scattered.parquet")
    w.add_dv(np.arange(10_000, 250_000), f"{DATA}/00001-range.parquet")
    w.add_dv(np.arange(1, 400_000, 2), f"{DATA}/00002-dense-odd.parquet")
    w.add_dv([7, 1 << 32, (1 << 32) + 99, 3 << 32], f"{DATA}/00003-over-4-billion.parquet")
    out["multi-dv.puffin"] = w.to_bytes()

    # A stats file: theta sketches per column, one exact and two in estimation mode.
    w = PuffinWriter(properties={"created-by": CREATED_BY})
    w.add_theta(theta_bytes(range(50)), 1, 3055729675574597004, 7, ndv=50)
    est = theta_bytes(range(200_000))
    import datasketches

    w.add_theta(est, 2, 3055729675574597004, 7,
                ndv=int(datasketches.compact_theta_sketch.deserialize(est).get_estimate()))
    strings = theta_bytes([f"user-{i}" for i in range(30_000)])
    w.add_theta(strings, 3, 3055729675574597004, 7,
                ndv=int(datasketches.compact_theta_sketch.deserialize(strings).get_estimate()))
    out["stats-theta.puffin"] = w.to_bytes()

    # lz4 everywhere: lz4 blobs and an LZ4-compressed footer (Iceberg Java cannot read this file).
    w = PuffinWriter(properties={"created-by": CREATED_BY, "note": "lz4 blobs and lz4 footer"},
                     compress_footer=True)
    w.add_theta(theta_bytes(range(1000)), 1, 42, 3, ndv=1000, codec="lz4")
    w.add_dv(np.arange(0, 5000, 3), f"{DATA}/00004-lz4-sibling.parquet")
    w.add_blob(("custom payload " * 200).encode(), "com.example.bloom-v1", [1, 2], 42, 3, codec="lz4",
               properties={"fpp": "0.01"})
    w.add_blob(b"\x00\x01\x02" * 300, "com.example.binary", [4], 42, 3, codec="zstd")
    out["mixed-lz4.puffin"] = w.to_bytes()

    out.update(_broken())
    return out


def _broken() -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    ref = f"{DATA}/00009-broken.parquet"
    good = DeletionVector.from_positions([1, 5, 9, 100]).to_bytes()
    entry = dv_entry(4, good, 4, ref)

    def one(**over) -> dict:
        e = dict(entry)
        e.update(over)
        return {"blobs": [e], "properties": {"created-by": CREATED_BY}}

    ok = assemble([good], one())
    out["broken-header-magic.puffin"] = b"PAR1" + ok[4:]
    out["broken-footer-start-magic.puffin"] = assemble([good], one(), start_magic=b"XXXX")
    out["broken-trailing-magic.puffin"] = ok[:-4] + b"PFA0"
    out["broken-negative-payload-size.puffin"] = assemble([good], one(), payload_size=-5)
    out["broken-payload-size-beyond-file.puffin"] = assemble([good], one(), payload_size=1 << 30)
    out["broken-reserved-flags.puffin"] = assemble([good], one(), flags=0x0100)
    out["broken-footer-not-utf8.puffin"] = assemble([good], b'{"blobs":[],"properties":{"x":"\xff\xfe"}}')
    out["broken-footer-not-json.puffin"] = assemble([good], '{"blobs":[{"type":"deletion-vector-v1",')
    missing = one()
    del missing["blobs"][0]["snapshot-id"]
    missing["blobs"][0]["length"] = "46"
    out["broken-footer-missing-field.puffin"] = assemble([good], missing)
    out["broken-footer-lz4.puffin"] = assemble([good], compress(json.dumps(one()).encode(), "lz4")[:-9], flags=1)
    out["broken-blob-out-of-bounds.puffin"] = assemble([good], one(length=1 << 40))
    two = one()
    two["blobs"].append({"type": "com.example.x", "fields": [1], "snapshot-id": 1, "sequence-number": 1,
                         "offset": 20, "length": 10})
    out["broken-blob-overlap.puffin"] = assemble([good], two)
    out["broken-unclaimed-bytes.puffin"] = assemble([good, b"\x00" * 64], one())
    out["broken-unknown-codec.puffin"] = assemble([b"brotli?"], {"blobs": [
        {"type": "com.example.x", "fields": [1], "snapshot-id": 1, "sequence-number": 1, "offset": 4,
         "length": 7, "compression-codec": "brotli"}]})
    out["broken-zstd-frame.puffin"] = assemble([b"\x28\xb5\x2f\xfd garbage"], {"blobs": [
        {"type": "com.example.x", "fields": [1], "snapshot-id": 1, "sequence-number": 1, "offset": 4,
         "length": 12, "compression-codec": "zstd"}]})
    zdv = compress(good, "zstd")
    out["broken-dv-compressed.puffin"] = assemble([zdv], {"blobs": [
        dict(dv_entry(4, zdv, 4, ref), **{"compression-codec": "zstd"})]})
    out["broken-dv-snapshot-id.puffin"] = assemble([good], one(**{"snapshot-id": 12345, "sequence-number": 3}))
    out["broken-dv-no-referenced-file.puffin"] = assemble([good], one(properties={"cardinality": "4"}))
    out["broken-dv-cardinality.puffin"] = assemble([good], one(properties={"referenced-data-file": ref,
                                                                           "cardinality": "5"}))
    out["broken-dv-fields.puffin"] = assemble([good], one(fields=[1]))
    bad_len = struct.pack(">I", 99) + good[4:]
    out["broken-dv-length-prefix.puffin"] = assemble([bad_len], one())
    bad_magic = good[:4] + b"\xd1\xd3\x39\x65" + good[8:]
    out["broken-dv-magic.puffin"] = assemble([bad_magic], one())
    flipped = bytearray(good)
    flipped[-8] ^= 0x01  # inside the array container: 100 becomes 101; CRC no longer matches
    out["broken-dv-crc.puffin"] = assemble([bytes(flipped)], one())
    keys = _dv_bytes_from_buckets([(1, _roaring([3])), (0, _roaring([5]))])
    out["broken-dv-key-order.puffin"] = assemble([keys], one(length=len(keys)))
    high = _dv_bytes_from_buckets([(1 << 31, _roaring([3]))])
    out["broken-dv-key-range.puffin"] = assemble([high], one(length=len(high), properties={
        "referenced-data-file": ref, "cardinality": "1"}))
    trailing = _dv_bytes_from_buckets([(0, _roaring([1, 5, 9, 100]))], tail=b"\x00\x00\x00")
    out["broken-dv-trailing-bytes.puffin"] = assemble([trailing], one(length=len(trailing)))
    huge = _dv_bytes_from_buckets([(0, _roaring([1, 5, 9, 100]))], count=1 << 40)
    out["broken-dv-bucket-count.puffin"] = assemble([huge], one(length=len(huge)))
    w = PuffinWriter(properties={"created-by": CREATED_BY})
    w.add_theta(theta_bytes(range(50)), 1, 1, 1, ndv=51)
    out["broken-theta-ndv.puffin"] = w.to_bytes()
    w = PuffinWriter(properties={"created-by": CREATED_BY})
    w.add_theta(theta_bytes(range(50), seed=12345), 1, 1, 1, ndv=50)
    out["broken-theta-seed.puffin"] = w.to_bytes()
    w = PuffinWriter(properties={"created-by": '<script>window.__pwned=1</script>',
                                 "\" onmouseover=\"window.__pwned=2": "<img src=x onerror=window.__pwned=3>"})
    w.add_dv([1, 2, 3], 'file:/x/"><script>window.__pwned=4</script>.parquet')
    w.add_blob(b"<b>bold?</b>", "<script>window.__pwned=5</script>", [1], 1, 1,
               properties={"<i>k</i>": "' onclick='window.__pwned=6"})
    out["broken-hostile-strings.puffin"] = w.to_bytes()
    return out


def findings_json(data: bytes) -> str:
    """The golden text of a sample: every finding the reader reports, in order, as JSON."""
    from puffin_explorer import PuffinFile

    return json.dumps([f.to_dict() for f in PuffinFile(data).findings], indent=1, ensure_ascii=False) + "\n"


def golden_name(name: str) -> str:
    return name[: -len(".puffin")] + ".findings.json"


def outputs() -> dict[str, bytes]:
    """Every file this script writes: the samples and the golden findings of the broken ones."""
    out = {}
    for name, data in build_samples().items():
        out[name] = data
        if name.startswith("broken-"):
            out[golden_name(name)] = findings_json(data).encode("utf-8")
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    differ = []
    for name, data in outputs().items():
        path = HERE / name
        if check:
            if not path.exists() or path.read_bytes() != data:
                differ.append(name)
        else:
            path.write_bytes(data)
    if check:
        for name in differ:
            print(f"differs: {name}")
        return 1 if differ else 0
    print(f"wrote {len(build_samples())} samples to {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
