"""Writer → reader round trips (hypothesis) and the byte-for-byte reproduction of Iceberg Java files."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from puffin_explorer import DeletionVector, PuffinFile, PuffinWriter

positions_st = st.lists(
    st.one_of(st.integers(0, 70_000), st.integers(0, (1 << 34)), st.integers(0, (1 << 63) - 1)),
    max_size=300)
runs_st = st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 5000)), max_size=8)


@settings(max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(positions_st, runs_st)
def test_dv_roundtrip(points, runs):
    # the expected positions in numpy (a Python set of the runs' 40,000 values per example was most of the time)
    expected = np.unique(np.concatenate([np.array(points, dtype=np.uint64)] +
                                        [np.arange(start, start + n, dtype=np.uint64) for start, n in runs]))
    dv = DeletionVector.from_positions(expected.copy())
    assert dv.findings == []
    assert dv.cardinality == len(expected)
    assert np.array_equal(dv.positions(), expected)
    again = DeletionVector.from_bytes(dv.to_bytes())
    assert np.array_equal(again.positions(), expected)
    if len(expected):
        assert dv.min_position == int(expected[0]) and dv.max_position == int(expected[-1])
        probe = int(expected[len(expected) // 2])
        follows = len(expected) > len(expected) // 2 + 1 and int(expected[len(expected) // 2 + 1]) == probe + 1
        assert dv.contains(probe) and follows == dv.contains(probe + 1)
    ranges = dv.ranges()
    assert int(ranges["length"].sum()) == len(expected)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 200_000), max_size=200), st.lists(st.integers(0, 200_000), max_size=200))
def test_dv_set_operations(a, b):
    da, db = DeletionVector.from_positions(a), DeletionVector.from_positions(b)
    assert da.union(db).positions().tolist() == sorted(set(a) | set(b))
    assert da.intersection(db).positions().tolist() == sorted(set(a) & set(b))
    assert da.difference(db).positions().tolist() == sorted(set(a) - set(b))


blob_st = st.tuples(st.binary(max_size=3000), st.sampled_from([None, "zstd", "lz4"]),
                    st.text(min_size=1, max_size=20), st.lists(st.integers(-5, 1 << 31), max_size=3),
                    st.dictionaries(st.text(max_size=10), st.text(max_size=20), max_size=3))


@settings(max_examples=120, deadline=None)
@given(st.lists(blob_st, max_size=6), st.booleans(),
       st.dictionaries(st.text(max_size=10), st.text(max_size=30), max_size=3))
def test_puffin_roundtrip(blobs, compress_footer, props):
    w = PuffinWriter(properties=props, compress_footer=compress_footer)
    for data, codec, typ, fields, bprops in blobs:
        w.add_blob(data, typ, fields, 7, 3, codec, bprops)
    pf = PuffinFile(w.to_bytes(), strict=True)
    assert pf.properties == props
    assert pf.footer.compressed == compress_footer
    assert len(pf.blobs) == len(blobs)
    for meta, (data, codec, typ, fields, bprops) in zip(pf.blobs, blobs):
        assert (meta.type, meta.fields, meta.compression_codec, meta.properties) == (typ, fields, codec, bprops)
        assert meta.read() == data
    assert pf.footer_findings == []


def test_reproduces_iceberg_java_files(fixtures):
    text = "some blob \x00 binary data 🤯 that is not very very very very very very long, is it?".encode()
    for name, codec in [("sample-metric-data-uncompressed.bin", None),
                        ("sample-metric-data-compressed-zstd.bin", "zstd")]:
        w = PuffinWriter(properties={"created-by": "Test 1234"})
        w.add_blob(b"abcdefghi", "some-blob", [1], 2, 1, codec)
        w.add_blob(text, "some-other-blob", [2], 2, 1, codec)
        assert w.to_bytes() == (fixtures / "puffin/iceberg-java" / name).read_bytes()
    assert PuffinWriter().to_bytes() == (fixtures / "puffin/iceberg-java/empty-puffin-uncompressed.bin").read_bytes()


def test_writer_dv_blob_and_file(tmp_path):
    w = PuffinWriter(properties={"created-by": "test"})
    w.add_dv(np.arange(0, 100_000, 7), "s3://b/t/data/f.parquet")
    path = tmp_path / "x.puffin"
    assert w.write(str(path)) == path.stat().st_size
    pf = PuffinFile(path)
    b = pf.blobs[0]
    assert b.properties == {"referenced-data-file": "s3://b/t/data/f.parquet", "cardinality": str(len(range(0, 100_000, 7)))}
    assert b.fields == [2147483645] and b.snapshot_id == -1 and pf.findings == []


def _general_positions(data: bytes) -> np.ndarray:
    dv = DeletionVector.from_bytes(data)
    dv.buckets  # parse the structure first: positions() then takes the general path
    return dv.positions()


@given(st.integers(0, 5), st.integers(0, 65_535), st.lists(st.integers(0, 65_535), min_size=1, max_size=4096))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_one_array_container_fast_path_matches_the_general_reader(key, high, lows):
    base = (key << 32) | (high << 16)
    data = DeletionVector.from_positions(np.array(lows, dtype=np.uint64) + np.uint64(base)).to_bytes()
    fast = DeletionVector.from_bytes(data)
    assert np.array_equal(fast.positions(), _general_positions(data))
    assert np.array_equal(fast.positions(), np.unique(np.array(lows, dtype=np.uint64) + np.uint64(base)))


def test_fast_path_declines_what_it_does_not_read(fixtures):
    """Run containers, bitmaps, several buckets, unsorted or damaged arrays: the general reader decides."""
    import struct as st_

    assert DeletionVector.from_positions(range(10_000))._one_array_positions() is None  # a run
    assert DeletionVector.from_positions([1, 1 << 33])._one_array_positions() is None  # two buckets
    assert DeletionVector.from_positions([5])._one_array_positions().tolist() == [5]
    assert DeletionVector.from_positions([(3 << 16) + 1, (3 << 16) + 4])._one_array_positions().tolist() == [
        (3 << 16) + 1, (3 << 16) + 4]
    good = bytearray(DeletionVector.from_positions([3, 7, 9]).to_bytes())
    assert DeletionVector.from_bytes(bytes(good))._one_array_positions().tolist() == [3, 7, 9]
    swapped = bytearray(good)
    swapped[-10:-8], swapped[-8:-6] = good[-8:-6], good[-10:-8]  # 7 and 9 out of order
    assert DeletionVector.from_bytes(bytes(swapped))._one_array_positions() is None
    assert DeletionVector.from_bytes(bytes(swapped)).findings.errors
    longer = bytearray(good)
    st_.pack_into("<H", longer, 30, 3)  # cardinality 4 claimed for 3 values
    assert DeletionVector.from_bytes(bytes(longer))._one_array_positions() is None
    for blob in (fixtures / "dv-blobs").glob("*.bin"):
        data = blob.read_bytes()
        assert np.array_equal(DeletionVector.from_bytes(data).positions(), _general_positions(data))


def _damaged_dv(key: int, lows: list, damage: str) -> bytearray:
    """The bytes of a DV of ``lows`` in bucket ``key``, with one kind of damage: ``crc``, ``magic``, ``length``
    (a flipped bit in each), ``swap`` (the last two values of the last container, when they differ), ``short``
    (its last byte cut), or ``none``."""
    data = bytearray(DeletionVector.from_positions(np.array(lows, dtype=np.uint64) + np.uint64(key << 32)).to_bytes())
    if damage == "crc":
        data[-1] ^= 0x01
    elif damage == "magic":
        data[5] ^= 0x10
    elif damage == "length":
        data[3] ^= 0x02
    elif damage == "swap" and len(set(lows)) > 1:
        data[-6:-4], data[-8:-6] = data[-8:-6], data[-6:-4]
    elif damage == "short":
        data = data[:-1]
    return data


@given(st.integers(0, 3), st.lists(st.integers(0, (1 << 20) - 1), min_size=1, max_size=3000),
       st.sampled_from(["none", "crc", "magic", "length", "swap"]))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_validating_many_dvs_together_finds_what_each_parse_finds(key, lows, damage):
    """validate_many's one-pass checks agree with the full parse: same positions, findings and summary."""
    from puffin_explorer.format.dv import validate_many

    data = _damaged_dv(key, lows, damage)
    together = [DeletionVector.from_bytes(bytes(data)) for _ in range(3)]
    validate_many(together)
    alone = DeletionVector.from_bytes(bytes(data))
    for dv in together:
        assert [(f.code, f.offset) for f in dv.findings] == [(f.code, f.offset) for f in alone.findings]
        assert dv.summary() == alone.summary() and dv.cardinality == alone.cardinality
        assert np.array_equal(dv.positions(), alone.positions())
    if damage == "none" and key == 0 and data[20:24] == (12346).to_bytes(4, "little"):
        assert together[0]._fast_valid  # the common shape (array containers only) took the one-pass path


def test_decoding_many_dvs_in_chunks_gives_each_its_own_positions(monkeypatch):
    """decode_many in chunks smaller than the list: every vector gets exactly its own positions."""
    from puffin_explorer.format import dv as dv_module

    rng = np.random.default_rng(5)
    wanted = [np.unique(rng.integers(0, 60_000, size=int(n))).astype(np.uint64) for n in rng.integers(1, 400, 11)]
    dvs = [DeletionVector.from_bytes(DeletionVector.from_positions(p).to_bytes()) for p in wanted]
    monkeypatch.setattr(dv_module, "DECODE_MANY_CHUNK", 4)
    dv_module.decode_many(dvs)
    assert all(d._positions is not None for d in dvs)  # decoded together, in three chunks
    for d, p in zip(dvs, wanted):
        assert np.array_equal(d.positions(), p)


@given(st.lists(st.tuples(st.integers(0, 3), st.lists(st.integers(0, (1 << 17) - 1), min_size=1, max_size=600),
                          st.sampled_from(["none", "none", "crc", "magic", "length", "swap", "short"]),
                          st.binary(max_size=7)), min_size=1, max_size=6))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_common_positions_of_many_vectors_in_one_buffer_are_each_parse_s(vectors):
    """common_positions over vectors lying back to back (gaps between them): a vector is ok only when its own
    parse finds no error, and then its positions are the parse's (common_last_positions: its last one); every sound
    vector of the common shape (one bucket, one array container) is ok; each kind of damage is not."""
    from puffin_explorer.format import dv_batch as dv_module
    from puffin_explorer.format.dv_batch import common_last_positions, common_positions

    buf, starts, sizes, blobs = bytearray(), [], [], []
    for key, lows, damage, gap in vectors:
        data = _damaged_dv(key, lows, damage)
        buf += gap
        starts.append(len(buf))
        sizes.append(len(data))
        blobs.append(bytes(data))
        buf += data
    ok, cards, positions = common_positions(bytes(buf), starts, sizes)
    assert len(positions) == int(cards.sum())
    ok2, cards2, lasts = common_last_positions(bytes(buf), starts, sizes)
    assert ok2.tolist() == ok.tolist() and cards2.tolist() == cards.tolist()
    # the values gathered a few bytes at a time (a piece for each vector or two), and into a given array: the same
    was = dv_module._GATHER_BYTES
    dv_module._GATHER_BYTES = 600
    try:
        into = np.full(len(positions) + 5, 7, np.uint64)
        ok3, cards3, positions3 = common_positions(bytes(buf), starts, sizes, out=into)
        ok4, cards4, lasts4 = common_last_positions(bytes(buf), starts, sizes)
    finally:
        dv_module._GATHER_BYTES = was
    assert ok3.tolist() == ok4.tolist() == ok.tolist() and cards3.tolist() == cards4.tolist() == cards.tolist()
    assert np.array_equal(positions3, positions) and np.array_equal(lasts4, lasts)
    assert positions3.base is into or positions3.base is into.base  # written where it was asked to be
    assert into[len(positions):].tolist() == [7] * 5
    at = 0
    for (key, lows, damage, _), data, good, card, last in zip(vectors, blobs, ok.tolist(), cards.tolist(),
                                                              lasts.tolist()):
        alone = DeletionVector.from_bytes(data)
        assert last == (int(alone.positions()[-1]) if good else -1)
        # Java writes an empty bucket for each key below the highest: only key 0 makes one bucket; its one array
        # container may hold any high 16 bits (65,536 is container 1's value 0)
        one_array = key == 0 and len(set(lows)) <= 4096 and len({v >> 16 for v in lows}) == 1 and data[20:24] in (
            (12346).to_bytes(4, "little"), (12347).to_bytes(4, "little"))
        if good:
            assert not alone.findings.errors
            assert np.array_equal(positions[at:at + card], alone.positions())
            at += card
        else:
            assert card == 0
        if damage == "none" or (damage == "swap" and len(set(lows)) == 1):
            assert good == one_array
        else:
            assert not good
    assert at == len(positions)



def test_common_positions_takes_the_common_shape_and_leaves_the_rest_to_their_parse():
    """Three vectors back to back: sparse positions below 65,536 (one array container: read together), positions
    over three containers and a run of 5,000 (a run container): both left for their own parse."""
    from puffin_explorer.format.dv_batch import common_positions

    wanted = [np.arange(0, 30_000, 64, dtype=np.uint64), np.arange(0, 200_000, 97, dtype=np.uint64),
              np.arange(10, 5_010, dtype=np.uint64)]
    blobs = [DeletionVector.from_positions(w).to_bytes() for w in wanted]
    starts = np.cumsum([0] + [len(b) for b in blobs[:-1]])
    ok, cards, positions = common_positions(b"".join(blobs), starts, [len(b) for b in blobs])
    assert ok.tolist() == [True, False, False] and cards.tolist() == [469, 0, 0]
    assert np.array_equal(positions, wanted[0])
    assert [DeletionVector.from_bytes(b).findings.errors for b in blobs[1:]] == [[], []]



def test_common_positions_leave_a_range_near_the_long_limit_to_its_parse():
    """Offsets and sizes come from manifests: a start or size near 2**63 is outside the buffer (no wrapped sum
    taken for inside), the sound vector beside it still read."""
    from puffin_explorer.format.dv_batch import common_last_positions, common_positions

    blob = DeletionVector.from_positions(np.array([3, 9, 27], dtype=np.uint64)).to_bytes()
    for start, size in ((2 ** 63 - 10, len(blob)), (0, 2 ** 63 - 1), (2 ** 62, 2 ** 62)):
        ok, cards, positions = common_positions(blob, [start, 0], [size, len(blob)])
        assert ok.tolist() == [False, True] and cards.tolist() == [0, 3] and positions.tolist() == [3, 9, 27]
        ok, cards, last = common_last_positions(blob, [start, 0], [size, len(blob)])
        assert ok.tolist() == [False, True] and last.tolist() == [-1, 27]
