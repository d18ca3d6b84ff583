"""The mutation fuzzer (tests/fuzz/fuzz_readers.py) as part of the suite, and the smallest reproducer of every
class of failure it found, each as a regression test."""

from __future__ import annotations

import json
import multiprocessing as mp
import resource
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from puffin_explorer import DeletionVector, InvalidFileError, ParquetLayout, PuffinFile, PuffinWriter
from puffin_explorer.errors import BlobDecodeError, PuffinError
from puffin_explorer.format import codecs
from puffin_explorer.format.footer import json_depth
from puffin_explorer.regions import Severity

from conftest import RESOURCES

sys.path.insert(0, str(Path(__file__).parent / "fuzz"))
import fuzz_readers as fuzz  # noqa: E402

#: The suite's run: fixed seed, 600 cases (1,000 took 54 s beside the rest of ``make test``); the long run is
#: `--cases 100000`.
SUITE_CASES = 600
#: CPU seconds per case before a case counts as a stall: a bound on the work a file can cause, far above
#: what any case needs (the long run uses 2 s), so a busy machine cannot make it fail.
SUITE_TIME_LIMIT = 10.0


def _summary(rep) -> str:
    return json.dumps({"outcomes": rep.counts, "failures": rep.failures[:10]}, indent=1, default=str)


@pytest.mark.long
def test_fixed_seed_run_lenient():
    rep = fuzz.run_pool(SUITE_CASES, seed=1, workers=2, time_limit=SUITE_TIME_LIMIT, chart_every=10)
    assert rep.cases == SUITE_CASES
    assert rep.counts["crash"] == rep.counts["stall"] == rep.counts["memory"] == 0, _summary(rep)
    assert rep.counts["ok"] > SUITE_CASES // 2 and rep.counts["documented"] > 0  # the run reached deep code


def test_fixed_seed_run_strict():
    """With strict=True only PuffinError subclasses may escape."""
    rep = fuzz.run_pool(400, seed=2, workers=2, strict=True, time_limit=SUITE_TIME_LIMIT, chart_every=20)
    assert rep.counts["crash"] == rep.counts["stall"] == rep.counts["memory"] == 0, _summary(rep)
    assert rep.counts["documented"] > 50


def test_cases_are_deterministic():
    corpus = fuzz.load_corpus()
    assert {b.kind for b in corpus} == {"puffin", "parquet", "dv"}
    assert len(corpus) > 40
    assert fuzz.make_case(corpus, 7, 123) == fuzz.make_case(corpus, 7, 123)
    assert fuzz.make_case(corpus, 7, 123) != fuzz.make_case(corpus, 7, 124)


def test_the_harness_classifies_crashes_stalls_and_memory(monkeypatch):
    """A fake reader that crashes, loops or allocates: the pool reports each and replaces the worker."""
    def bad(data, run, rng):
        mode = len(data) % 3
        if mode == 0:
            run.step("boom", lambda: {}["missing"])
        elif mode == 1:
            run.step("spin", lambda: [0 for _ in iter(int, 1)])
        else:
            run.step("grab", lambda: bytearray(3 << 30))

    monkeypatch.setitem(fuzz.RUNNERS, "puffin", bad)
    monkeypatch.setitem(fuzz.RUNNERS, "parquet", bad)
    monkeypatch.setitem(fuzz.RUNNERS, "dv", bad)
    rep = fuzz.run_pool(12, seed=3, workers=2, time_limit=0.5, mem_limit=2 << 30)
    assert rep.cases == 12
    assert rep.counts["ok"] == rep.counts["documented"] == 0
    kinds = {r["outcome"] for r in rep.failures}
    assert kinds == {"crash", "stall", "memory"}, rep.failures
    crash = next(r for r in rep.failures if r["outcome"] == "crash")
    assert crash["step"] == "boom" and crash["detail"].startswith("KeyError")


# ---------------------------------------------------------------------------- regressions, one per class
def _footer_only(text: str) -> bytes:
    return fuzz.assemble(b"PFA1", text)


@pytest.mark.parametrize("text, message", [
    ("[" * 100_000 + "]" * 100_000, "nests arrays or objects 100,000 deep (a reader allows 64)"),
    ('{"blobs": ' + "[" * 5000 + "]" * 5000 + "}", "nests arrays or objects 5,001 deep"),
    ('{"p": "' + "[" * 5000 + '", "blobs": []}', None),  # brackets inside a string do not nest
    ('{"blobs": [{"offset": ' + "9" * 5000 + "}]}", "the footer JSON cannot be read: Exceeds the limit"),
])
def test_hostile_footer_json_is_a_finding(text, message):
    data = _footer_only(text)
    pf = PuffinFile(data)
    if message is None:
        assert pf.findings == [] and pf.properties == {}
        return
    assert [(f.code, f.offset) for f in pf.findings] == [("footer.json", 8)]
    assert message in pf.findings[0].message
    assert pf.to_text() and pf.to_html() and pf.hex().text()
    with pytest.raises(InvalidFileError, match="footer.json"):
        PuffinFile(data, strict=True)


def test_deep_footer_with_a_raised_recursion_limit_does_not_overflow_the_stack():
    """json.loads recursed in C once per level: with a raised recursion limit (as hypothesis or a notebook
    may set) a deeply nested footer crashed the interpreter with SIGSEGV instead of raising."""
    def run():
        sys.setrecursionlimit(1_000_000)
        return [f.code for f in PuffinFile(_footer_only('{"a":' * 200_000 + "1" + "}" * 200_000)).findings]

    assert _memory_limited(run, 1 << 30) == ["footer.json"]


@pytest.mark.parametrize("text, depth", [
    ('{"a": "' + "[" * 100 + '", "b": [[1]]}', 3),                # brackets inside a string do not count
    ('{"a": "\\\\", "b": ' + "[" * 70 + "]" * 70 + "}", 71),   # an escaped backslash ends before the quote
    ('{"a": "\\"[[[[", "b": ' + "[" * 70 + "]" * 70 + "}", 71),  # an escaped quote does not end the string
    ('[' * 65 + ']' * 65, 65),
])
def test_footer_nesting_depth_skips_strings_and_escapes(text, depth):
    assert json_depth(text) == depth


def _memory_limited(fn, headroom: int) -> str:
    """Run ``fn`` in a child whose address space may grow by only ``headroom`` bytes; its outcome."""
    def child(conn):
        with open("/proc/self/statm") as fh:
            vm = int(fh.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (vm + headroom, vm + headroom))
        try:
            conn.send(fn())
        except MemoryError:
            conn.send("MemoryError")

    ctx = mp.get_context("fork")
    parent, child_end = ctx.Pipe()
    p = ctx.Process(target=child, args=(child_end,))
    p.start()
    try:
        out = parent.recv() if parent.poll(120) else "no answer"
    except EOFError:
        out = "the child died"
    p.join(10)
    return out


def _decode_all(path: Path):
    def run():
        pf = PuffinFile(path)
        return [f.code for f in pf.findings], [len(b.read()) for b in pf.blobs]
    return run


@pytest.mark.parametrize("name", ["stats-theta.puffin", "mixed-lz4.puffin"])
def test_decompression_reserves_what_the_frame_holds_not_the_cap(name):
    """zstd read cap+1 bytes at once (about 1 GiB for the 35 KB theta blob); lz4 passed max_length=cap+1."""
    codes, sizes = _memory_limited(_decode_all(RESOURCES / name), 160 << 20)
    assert codes == [] and all(sizes)


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_decompression_streams_to_a_cap(codec):
    frame = codecs.compress(b"\0" * (8 << 20), codec)
    assert codecs.decompress(frame, codec) == b"\0" * (8 << 20)
    with pytest.raises(BlobDecodeError, match="more than the 1,048,576 bytes allowed|exceeds the 1,048,576"):
        codecs.decompress(frame, codec, max_output=1 << 20)
    if codec == "zstd":  # no content size in the frame: the cap is found while streaming
        import zstandard

        bare = zstandard.ZstdCompressor(write_content_size=False).compress(b"\0" * (8 << 20))
        with pytest.raises(BlobDecodeError, match="exceeds the 1,048,576 bytes allowed"):
            codecs.decompress(bare, "zstd", max_output=1 << 20)
    assert codecs.output_cap(35_000, codec=codec) == min(codecs.DEFAULT_MAX_OUTPUT,
                                                         35_000 * codecs._MAX_RATIO[codec])


def _dv_bytes(vector: bytes) -> bytes:
    body = b"\xd1\xd3\x39\x64" + vector
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def _run_bitmap(runs_per_container: list[list[tuple[int, int]]], cards: list[int]) -> bytes:
    """A portable 32-bit Roaring bitmap of run containers (keys 0, 1, ...) with the given header cardinalities."""
    n = len(runs_per_container)
    out = struct.pack("<I", 12347 | ((n - 1) << 16)) + bytes([0xFF] * ((n + 7) // 8))
    out += b"".join(struct.pack("<HH", k, card - 1) for k, card in enumerate(cards))
    if n >= 4:
        out += b"\0" * (4 * n)  # offset header (values not checked as errors)
    for runs in runs_per_container:
        out += struct.pack("<H", len(runs)) + b"".join(struct.pack("<HH", s, ln) for s, ln in runs)
    return out


def test_empty_run_container_does_not_break_min_max_or_the_views():
    """min_position / max_position raised IndexError on a run container with no runs (and so did to_text)."""
    bitmap = _run_bitmap([[]], [1])
    dv = DeletionVector.from_bytes(_dv_bytes(struct.pack("<Q", 1) + struct.pack("<I", 0) + bitmap))
    assert dv.min_position is None and dv.max_position is None
    assert [f.code for f in dv.findings] == ["roaring.container"]
    assert len(dv.positions()) == 0 and len(dv.ranges()) == 0
    assert dv.to_text() and dv.to_html()


def test_overlapping_runs_never_expand_past_the_container_or_its_header():
    """360 containers of 900 overlapping full-width runs: 3.6 KB of runs claimed 16.6 M positions."""
    runs = [[(0, 0xFFFF)] * 900]
    bitmap = _run_bitmap(runs, [5])
    dv = DeletionVector.from_bytes(_dv_bytes(struct.pack("<Q", 1) + struct.pack("<I", 0) + bitmap))
    assert dv.cardinality == 5 and [f.code for f in dv.findings] == ["roaring.container"]
    assert dv.positions().tolist() == [0, 1, 2, 3, 4]
    assert dv.min_position == 0 and dv.max_position == 4
    assert dv.ranges().values.tolist() == [[0, 5, 5]]


def test_ranges_come_from_the_containers_and_match_the_positions():
    rng = np.random.default_rng(5)
    for _ in range(20):
        parts = [rng.integers(0, 1 << 34, 200), np.arange(70_000, 200_000), np.arange(1 << 32, (1 << 32) + 5000, 2),
                 rng.integers(0, 300_000, 5000)]
        pos = np.unique(np.concatenate([p for p in parts if rng.random() < 0.7] + [np.array([3])]))
        dv = DeletionVector.from_positions(pos)
        p = dv.positions().astype(np.int64)
        breaks = np.flatnonzero(np.diff(p) != 1)
        starts = np.concatenate(([p[0]], p[breaks + 1]))
        ends = np.concatenate((p[breaks], [p[-1]])) + 1
        r = dv.ranges()
        assert r.start.tolist() == starts.tolist() and r.end.tolist() == ends.tolist()


def _theta_file(ndv) -> bytes:
    src = PuffinFile(RESOURCES / "stats-theta.puffin")
    blob = src.blobs[0]
    w = PuffinWriter()
    w.add_blob(blob.read(), blob.type, blob.fields, blob.snapshot_id, blob.sequence_number,
               properties={"ndv": ndv})
    return w.to_bytes()


@pytest.mark.parametrize("ndv", [5, ["1"], "²", "9" * 5000])
def test_theta_ndv_that_is_not_a_digit_string(ndv):
    """ndv_agrees raised AttributeError for a non-string ndv (breaking the file's text and HTML)."""
    pf = PuffinFile(_theta_file(ndv))
    sk = pf.blobs[0].decode()
    assert sk.ndv_agrees is None
    expected = ["theta.ndv-invalid"] if isinstance(ndv, str) else ["footer.property-type", "theta.ndv-invalid"]
    assert [f.code for f in pf.findings] == expected
    assert max(len(f.message) for f in pf.findings) < 200
    assert pf.to_text() and pf.to_html() and sk.to_text() and sk.to_html()


def test_unreadable_theta_sketch_still_has_a_table():
    """to_pandas() raised BlobDecodeError for a sketch datasketches cannot read."""
    pf = PuffinFile(RESOURCES / "broken-theta-seed.puffin")
    sk = pf.blobs[0].decode()
    assert sk.sketch is None
    assert list(sk.to_pandas().columns) == ["std_devs", "lower", "estimate", "upper"] and sk.to_pandas().empty
    with pytest.raises(BlobDecodeError):
        sk.estimate
    assert pf.to_pandas() is not None and pf.to_text() and pf.to_html()


def test_values_quoted_in_messages_are_clipped():
    """A million-character property was copied into a finding's message (and every view repeated it)."""
    w = PuffinWriter()
    w.add_dv([1, 2], referenced_data_file="f.parquet")
    meta = json.loads(PuffinFile(w.to_bytes()).footer.text)
    meta["blobs"][0]["properties"]["cardinality"] = "\u202e" * 1_000_000
    body = w.to_bytes()[:PuffinFile(w.to_bytes()).footer.offset]
    pf = PuffinFile(fuzz.assemble(body, json.dumps(meta)))
    assert [f.code for f in pf.findings] == ["dv.cardinality-invalid"]
    meta["blobs"][0]["compression-codec"] = "x" * 100_000
    pf2 = PuffinFile(fuzz.assemble(body, json.dumps(meta)))
    assert [f.code for f in pf2.findings] == ["blob.unknown-codec"]
    assert max(len(f.message) for f in pf.findings + pf2.findings) < 300


def test_strict_open_raises_on_a_dv_failing_its_crc():
    with pytest.raises(InvalidFileError, match="dv.crc"):
        PuffinFile(RESOURCES / "broken-dv-crc.puffin", strict=True)
    with pytest.raises(PuffinError):
        PuffinFile(RESOURCES / "broken-dv-crc.puffin", strict=True)


def test_nested_thrift_lists_in_a_parquet_footer_are_a_finding():
    """RecursionError in the Thrift reader on a footer of nested lists."""
    data = (RESOURCES / "parquet-testing" / "null_list.parquet").read_bytes()
    start = len(data) - 8 - struct.unpack_from("<I", data, len(data) - 8)[0]
    footer = data[start:-8] + b""
    footer = footer[:2] + b"\x19" * 20_000 + footer[2:]
    pl = ParquetLayout(data[:start] + footer + struct.pack("<I", len(footer)) + b"PAR1")
    assert [f.code for f in pl.findings] == ["parquet.footer"]
    assert "nested deeper than 64" in pl.findings[0].message
    assert pl.to_text() and pl.to_html()


def test_footer_entries_naming_the_same_bytes_share_one_decode():
    """20,000 footer entries over 4 blobs made findings decode 20,000 blobs (seconds): work follows the bytes."""
    base = (RESOURCES / "multi-dv.puffin").read_bytes()
    pf = PuffinFile(base)
    meta = json.loads(pf.footer.text)
    meta["blobs"] = [dict(meta["blobs"][i % 4]) for i in range(20_000)]
    big = PuffinFile(fuzz.assemble(base[:pf.footer.offset], json.dumps(meta)))
    codes = [f.code for f in big.findings]
    # 19,996 overlaps: the first 1,000 listed, the rest counted in one finding (each view, sort and export
    # of the list is bounded); the footer's own list keeps them all
    assert codes.count("blob.overlap") == 1_000 and codes.count("findings.capped") == 1 and len(codes) == 1_001
    capped = next(f for f in big.findings if f.code == "findings.capped")
    assert capped.severity is Severity.INFO
    assert capped.message.startswith("18,996 more blob.overlap findings from byte ") and "(19,996 in all;" in capped.message
    assert [f.code for f in big.footer_findings].count("blob.overlap") == 19_996
    assert big.source.bytes_read < 2 * big.size  # each blob's bytes read once
    dv = big.blobs[4_001].decode()
    # one decoded object per range: its positions, regions and summary are computed once for all entries
    assert dv is big.blobs[1].decode() and dv.metadata == big.blobs[1]  # a copy without the handle to the file
    assert dv.cardinality == pf.blobs[1].decode().cardinality
    assert all(b.decode() is dv for b in big.blobs[1::4])
    rows = big.blob_summaries(limit=300)
    assert len(rows) == 300 and rows[1]["summary"] == rows[4_001 % 300]["summary"] == dv.summary()
    hx = big.hex()  # 20,000 blob regions over four ranges: each range annotated once
    assert hx.text().count("\n") < 400 and len(hx.to_html()) < 1_000_000


def test_a_megabyte_blob_type_is_cut_in_region_names_and_views():
    """A 4,000,000-character blob type (a 16 KB file with an LZ4 footer) was escaped whole by the strip,
    the legend and the hex view for each region named after it: seconds of HTML escaping, then a view
    over the size cap."""
    w = PuffinWriter()
    w.add_dv([0, 2, 4], referenced_data_file="f.parquet")
    pf0 = PuffinFile(w.to_bytes())
    meta = json.loads(pf0.footer.text)
    meta["blobs"][0]["type"] = "<b>&" * 1_000_000
    pf = PuffinFile(fuzz.assemble(w.to_bytes()[:pf0.footer.offset], json.dumps(meta), compressed=True))
    assert pf.footer.compressed and pf.size < 40_000
    blob_region = next(r for r in pf.regions().children if r.kind == "blob")
    assert blob_region.name == "blob 0: " + ("<b>&" * 20)[:77] + "..."
    html = pf.to_html()
    assert "&lt;b&gt;&amp;" in html and "<b>&" not in html  # escaped, and never the raw markup
    assert html.count("&lt;b&gt;&amp;") < 2_000 and len(html) < 1_000_000
    assert pf.hex().to_html().count("&lt;b&gt;&amp;") < 2_000


def test_theta_of_zero_is_a_finding_not_an_overflow():
    """A sketch whose theta was zeroed made the estimate infinite and expected_ndv raised OverflowError in
    findings (and so in every view of the file)."""
    src = PuffinFile(RESOURCES / "stats-theta.puffin")
    blob = src.blobs[1]
    data = bytearray(blob.read())
    assert data[0] == 3  # three preamble longs: theta is the long at byte 16
    data[16:24] = bytes(8)
    w = PuffinWriter()
    w.add_blob(bytes(data), blob.type, blob.fields, blob.snapshot_id, blob.sequence_number,
               properties={"ndv": "200947"})
    pf = PuffinFile(w.to_bytes())
    sk = pf.blobs[0].decode()
    assert sk.num_retained == 4601 and sk.expected_ndv is None and sk.ndv_agrees is None
    assert [(f.code, f.offset) for f in pf.findings] == [("theta.theta-range", pf.blobs[0].offset + 16)]
    assert "4,601 hashes retained" in pf.findings[0].message
    assert pf.to_text() and pf.to_html() and sk.to_text() and sk.to_html() and len(sk.to_pandas()) == 3


def test_collector_pause_nests_and_restores():
    """Bulk building pauses the cyclic collector (more than half the time of a 20,000-entry footer's views
    went to collections rescanning live objects) and always restores it."""
    import gc

    from puffin_explorer._gc import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block does not re-enable it early
    assert gc.isenabled()
    with pytest.raises(ValueError), gc_paused():
        raise ValueError
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # a caller's own choice is kept
    finally:
        gc.enable()
    pf = PuffinFile(RESOURCES / "multi-dv.puffin")
    assert pf.to_html() and pf.findings is not None and gc.isenabled()


def test_bytes_that_are_not_a_dv_get_one_finding_and_no_vector():
    """A footer entry pointing at the wrong bytes made the DV reader parse them as Roaring anyway: six or
    seven findings per entry (length, magic, CRC, bucket count, cookie, key range, cardinality), most of
    them noise, for each of thousands of entries."""
    base = (RESOURCES / "multi-dv.puffin").read_bytes()
    src = PuffinFile(base)
    meta = json.loads(src.footer.text)
    entry = meta["blobs"][1]
    entry["offset"] += 3  # three bytes into the DV: neither its length prefix nor its magic line up
    pf = PuffinFile(fuzz.assemble(base[:src.footer.offset], json.dumps(meta)))
    dv = pf.blobs[1].decode()
    assert not dv.vector_parsed and not dv.magic_ok and dv.length_prefix != entry["length"] - 8
    assert [f.code for f in dv.findings] == ["dv.magic"] and dv.findings[0].offset == entry["offset"] + 4
    assert "not a deletion vector" in dv.findings[0].message
    assert dv.cardinality == 0 and len(dv.positions()) == 0 and dv.min_position is None
    assert dv.summary() == "unreadable deletion vector (dv.magic)"
    assert [r.kind for r in dv.regions()] == ["dv-length", "dv-magic", "unparsed"]
    blob_codes = [f.code for f in pf.findings if f.offset is not None and entry["offset"] <= f.offset]
    assert "dv.cardinality-mismatch" not in [f.code for f in pf.findings]  # nothing to compare with
    assert "dv.magic" in blob_codes and "roaring.cookie" not in blob_codes
    assert pf.to_text() and pf.to_html() and dv.to_text() and dv.to_html()
    assert "Containers and runs" not in dv.to_html()  # nothing to tabulate: no empty tables
    # one damaged field is still a DV: its vector is read and every problem reported
    damaged = bytearray(base)
    damaged[src.blobs[1].offset + 4] ^= 0xFF
    dv2 = PuffinFile(bytes(damaged)).blobs[1].decode()
    assert dv2.vector_parsed and [f.code for f in dv2.findings] == ["dv.magic", "dv.crc"]
    assert dv2.cardinality == src.blobs[1].decode().cardinality


def test_an_opened_file_is_freed_without_the_cyclic_collector():
    """Blob entries referred to their file strongly, so every file with its decoded blobs, regions and
    findings (hundreds of thousands of objects for a large footer) waited for a full collection, which a
    later, unrelated call then paid for."""
    import gc

    def use(pf: PuffinFile) -> None:
        assert pf.findings is not None and pf.regions() and pf.hex().to_html() and len(pf.to_pandas())
        for blob in pf.blobs:
            try:
                blob.decode().regions()
            except PuffinError:
                pass

    import weakref

    use(PuffinFile(RESOURCES / "mixed-lz4.puffin"))  # first use imports modules (their classes are cycles)
    gc.collect()
    gc.disable()
    try:
        pf = PuffinFile(RESOURCES / "mixed-lz4.puffin")
        use(pf)
        assert pf.blobs[0].file is pf
        alive = weakref.ref(pf)
        del pf
        assert alive() is None  # freed by its reference count, with the collector off
        # Only this package's objects are looked at: a thread another test left running (an S3 client's
        # event loop) makes cyclic garbage of its own while this test runs, which is not this test's.
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        ours = sorted({type(o).__qualname__ for o in gc.garbage if type(o).__module__.startswith("puffin_explorer")})
        assert ours == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    # an entry outlives the file it came from: the file is opened again from the same source
    blob = PuffinFile(RESOURCES / "multi-dv.puffin").blobs[1]
    assert blob.decode().cardinality == 240_000 and blob.file.blobs[1].offset == blob.offset


def test_a_densely_annotated_hex_view_stops_hover_text_and_stays_under_the_cap():
    """Thousands of overlapping blobs made the hex view's HTML carry a hover text for almost every byte
    (1.5 MB for 8 KB shown, with 20,000 entries), over the output cap, so the view fell back to plain text."""
    from puffin_explorer.display import MAX_HTML_BYTES
    from puffin_explorer.display.hexview import HOVER_BUDGET

    base = (RESOURCES / "multi-dv.puffin").read_bytes()
    src = PuffinFile(base)
    meta = json.loads(src.footer.text)
    meta["blobs"] = [dict(meta["blobs"][i % 4], offset=4 + (i * 7) % src.size) for i in range(6_000)]
    pf = PuffinFile(fuzz.assemble(base[:src.footer.offset], json.dumps(meta)))
    body = pf.hex().html_body()
    assert "have no hover text" in body and f"{HOVER_BUDGET:,} characters" in body
    assert len(body.encode()) < MAX_HTML_BYTES
    html = pf.hex().to_html()
    assert "pe-hex" in html and not html.startswith("<pre>")


def test_a_footer_integer_beyond_float_range_keeps_the_blob_table():
    """pandas 2.x (the newest for Python 3.10) infers an integer column through float: 10**400 overflowed."""
    base = (RESOURCES / "multi-dv.puffin").read_bytes()
    pf = PuffinFile(base)
    meta = json.loads(pf.footer.text)
    meta["blobs"][0]["snapshot-id"] = 10 ** 400
    big = PuffinFile(fuzz.assemble(base[:pf.footer.offset], json.dumps(meta)))
    for df in (big.blob_table(), big.to_pandas()):
        assert len(df) == 4 and df["snapshot-id"][0] == 10 ** 400
        assert df["offset"].tolist() == [b.offset for b in pf.blobs]
