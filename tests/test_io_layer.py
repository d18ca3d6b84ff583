"""The one I/O layer: planned range reads, the cache, counters, concurrency, and storage errors as
this project's errors (local files and a real S3 server on loopback)."""

from __future__ import annotations

import socket

import pytest

from puffin_explorer import PuffinFile, read_dv
from puffin_explorer.errors import (AccessDeniedError, EndpointUnreachableError, NoCredentialsError, NotAFileError,
                                    NotFoundError, PuffinError, SourceError, TableNotFoundError)
from puffin_explorer.iceberg import Table, Warehouse
from puffin_explorer.io import ByteSource, FileIO, coalesce, read_range

from conftest import FIXTURES

try:
    from _warehouse_fixtures import WAREHOUSE, read_delete_files_csv
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import WAREHOUSE, read_delete_files_csv

JAVA_DVS = FIXTURES / "puffin" / "iceberg-java-writer" / "java-dv-shapes.puffin"


# ---------------------------------------------------------------- planning and caching

def test_coalesce_merges_neighbours_only():
    assert coalesce([(100, 10), (0, 10), (15, 5), (5000, 1)], gap=10) == [(0, 20), (100, 10), (5000, 1)]
    assert coalesce([(0, 10), (5, 10), (30, 0)], gap=0) == [(0, 15)]
    assert coalesce([(0, 10), (20, 10)], gap=100, max_request=25) == [(0, 10), (20, 10)]


def test_read_ranges_plans_one_request_and_serves_later_reads():
    data = JAVA_DVS.read_bytes()
    src = ByteSource(JAVA_DVS)
    got = src.read_ranges([(4, 100), (200, 50), (len(data) - 8, 100)], gap=1 << 20)
    assert got == [data[4:104], data[200:250], data[-8:]]
    assert (src.read_count, src.bytes_read) == (1, len(data) - 4)
    assert src.read(300, 40) == data[300:340] and src.read_count == 1  # from the cache
    far = src.read_ranges([(4, 8), (len(data) - 4, 4)], gap=0)
    assert far == [data[4:12], data[-4:]] and src.read_count == 1
    src.forget()
    assert src.read(4, 8) == data[4:12] and src.read_count == 2


def test_read_range_is_exact_and_short_reads_are_errors():
    data = JAVA_DVS.read_bytes()
    assert read_range(str(JAVA_DVS), 4, 20) == data[4:24]
    with pytest.raises(SourceError, match="ends before byte"):
        read_range(data, len(data) - 4, 10)


def test_a_range_past_bytes_in_memory_is_short_without_copying_them():
    """read_dv(bytes, offset, 2**40) copied everything after offset before saying it was short: 20,000 footer
    entries of a 5 MB file spent 4 s copying."""
    data = JAVA_DVS.read_bytes()
    src = ByteSource(data)
    with pytest.raises(SourceError, match=rf"asked for \[4, 1,099,511,627,780\), got {len(data) - 4:,} bytes"):
        read_range(src, 4, 1 << 40)
    with pytest.raises(SourceError, match="got 0 bytes"):
        read_range(src, len(data) + 10, 8)
    assert src.bytes_read == 0 and src.read_count == 0
    with pytest.raises(SourceError, match="ends before the DV"):
        read_dv(data, 4, 1 << 40)


# ---------------------------------------------------------------- local storage errors

def test_local_missing_file_and_folder(tmp_path):
    with pytest.raises(NotFoundError) as missing:
        PuffinFile(tmp_path / "nope.puffin")
    assert str(missing.value) == f"no such file: {tmp_path / 'nope.puffin'}: check the path (a moved table needs relocate=)"
    assert missing.value.location == str(tmp_path / "nope.puffin") and isinstance(missing.value, PuffinError)
    with pytest.raises(NotAFileError, match="is a folder, not a file"):
        PuffinFile(tmp_path)
    with pytest.raises(NotFoundError):
        read_dv(tmp_path / "nope.puffin", 4, 10)


def test_writes_go_through_the_io_layer(tmp_path):
    from puffin_explorer.format.writer import PuffinWriter

    data = JAVA_DVS.read_bytes()
    io = FileIO()
    assert io.write(str(tmp_path / "a" / "b" / "copy.puffin"), data) == len(data)
    assert (tmp_path / "a" / "b" / "copy.puffin").read_bytes() == data
    with pytest.raises(NotAFileError):
        io.write(str(tmp_path / "a"), data)  # a folder is in the way
    size = PuffinWriter().write(str(tmp_path / "new" / "empty.puffin"))
    assert size == (tmp_path / "new" / "empty.puffin").stat().st_size
    assert PuffinFile(tmp_path / "new" / "empty.puffin").blobs == []


# ---------------------------------------------------------------- over S3

@pytest.fixture(scope="module")
def s3_puffin(s3_server):
    return s3_server.upload(JAVA_DVS, "io-errors")


def _options(s3_server, **overrides):
    return {**s3_server.storage_options, "skip_instance_cache": True, **overrides}


@pytest.mark.s3
def test_s3_no_credentials(s3_server, s3_puffin, monkeypatch, tmp_path):
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # never ask an instance-metadata address
    opts = {"skip_instance_cache": True, "client_kwargs": s3_server.storage_options["client_kwargs"]}
    with pytest.raises(NoCredentialsError) as err:
        PuffinFile(s3_puffin, storage_options=opts)
    assert str(err.value).startswith(f"no credentials to open {s3_puffin}: set AWS_ACCESS_KEY_ID")
    with pytest.raises(NoCredentialsError):
        read_dv(s3_puffin, 4, 10, storage_options=opts)


@pytest.mark.s3
def test_s3_wrong_key(s3_server, s3_puffin):
    with pytest.raises(AccessDeniedError) as err:
        PuffinFile(s3_puffin, storage_options=_options(s3_server, secret="not-the-secret"))
    assert str(err.value).startswith(f"access denied to {s3_puffin} (")
    assert "check the key and secret" in str(err.value)
    with pytest.raises(AccessDeniedError):
        FileIO(_options(s3_server, key="nobody")).read(s3_puffin)


@pytest.mark.s3
def test_s3_missing_bucket_and_key(s3_server, s3_puffin):
    opts = _options(s3_server)
    with pytest.raises(NotFoundError, match=r"^no such bucket 'no-such-bucket' \(s3://no-such-bucket/x.puffin\)"):
        PuffinFile("s3://no-such-bucket/x.puffin", storage_options=opts)
    with pytest.raises(NotFoundError, match="^no such bucket 'no-such-bucket'"):
        read_dv("s3://no-such-bucket/x.puffin", 4, 10, storage_options=opts)
    missing = s3_puffin + ".gone"
    with pytest.raises(NotFoundError, match=f"^no such file: {missing}"):
        PuffinFile(missing, storage_options=opts)
    with pytest.raises(NotFoundError, match=f"^no such file: {missing}"):
        read_dv(missing, 4, 10, storage_options=opts)
    gone = s3_puffin.rsplit("/", 1)[0] + "/v1.metadata.json"
    with pytest.raises(TableNotFoundError, match=f"^no such file: {gone}"):  # "no table here"
        Table.from_metadata(gone, storage_options=opts)


@pytest.mark.s3
def test_s3_folder_where_a_file_was_expected(s3_server, s3_puffin):
    folder = s3_puffin.rsplit("/", 1)[0]
    with pytest.raises(NotAFileError, match=f"^{folder} is a folder, not a file"):
        PuffinFile(folder, storage_options=_options(s3_server))


@pytest.mark.s3
def test_s3_nothing_listening_fails_fast(s3_server):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    opts = _options(s3_server, client_kwargs={"endpoint_url": f"http://127.0.0.1:{port}",
                                              "region_name": "us-east-1"})
    with pytest.raises(EndpointUnreachableError) as err:
        PuffinFile("s3://b/k.puffin", storage_options=opts)
    assert str(err.value).startswith(f"cannot connect to http://127.0.0.1:{port} for s3://b/k.puffin (")
    assert "check the endpoint URL" in str(err.value)
    with pytest.raises(EndpointUnreachableError):
        Warehouse("s3://b/wh", storage_options=opts).table_names()


@pytest.mark.s3
def test_manifests_are_fetched_concurrently(s3_server):
    root = s3_server.upload(WAREHOUSE, "io-concurrency/warehouse")
    t = Warehouse(root, storage_options=s3_server.storage_options).table("shop.orders")
    t = Table.from_metadata(t.metadata_location, io=type(t.io)(s3_server.storage_options))
    manifests = t.source.manifest_records()
    assert len(manifests) == 4
    t.io.reset_counters()
    with s3_server.record_requests() as wire:
        entries = t.entries()
    assert len(entries) > 0
    assert t.io.read_count == 4 == len([r for r in wire if r.operation == "GetObject"])
    assert [r for r in wire if r.operation != "GetObject"] == []  # one request per manifest, no HEAD
    assert t.io.peak_in_flight > 1  # more than one manifest GET was running at once
    again = Table.from_metadata(t.metadata_location, io=type(t.io)(s3_server.storage_options, max_workers=1))
    again.source.manifest_records()
    again.io.reset_counters()
    assert again.entries().equals(entries) and again.io.peak_in_flight == 1 and again.io.read_count == 4


def test_read_dvs_plans_one_request_per_puffin_file_and_loops_read_ahead():
    t = Warehouse(str(WAREHOUSE)).table("shop.orders")
    entries = t.entries(content="deletes").query("kind == 'dv'").to_dict("records")
    files = {t.locate(e["file_path"]) for e in entries}
    assert len(entries) > len(files) >= 1
    t.io.reset_counters()
    batch = t.read_dvs()
    assert t.io.read_count == len(files)  # neighbouring DV ranges of one file merged into one read
    assert [d.referenced_data_file for d in batch] == [e["referenced_data_file"] for e in entries]
    one_by_one = Warehouse(str(WAREHOUSE)).table("shop.orders")
    one_by_one.entries(content="deletes")
    one_by_one.io.reset_counters()
    singles = [one_by_one.read_dv(e) for e in entries]
    assert one_by_one.io.read_count == 2 * len(files)  # the first read exact, the next one reads ahead
    for a, b in zip(batch, singles):
        assert a == b and a.cardinality == b.cardinality > 0
    assert sum(d.cardinality for d in batch) == sum(int(e["record_count"]) for e in entries)


def test_read_dvs_arrow_holds_every_position_in_one_arrow_table():
    """read_dvs(arrow=True): a row per DV, positions as a list (per-DV offsets), the same values as the
    objects, with the same one request per Puffin file and no DeletionVector kept."""
    expected = read_delete_files_csv("orders_delete_files.csv")
    t = Warehouse(str(WAREHOUSE)).table("shop.orders")
    objects = t.read_dvs()
    t.io.reset_counters()
    col = t.read_dvs(arrow=True)
    assert t.io.read_count == 1  # the four DVs of the one Puffin file in one request
    fresh = Warehouse(str(WAREHOUSE)).table("shop.orders")
    fresh.dvs()
    fresh.io.reset_counters()
    again = fresh.read_dvs(arrow=True, progress=False)
    assert fresh.io.read_count == len({e[0] for e in expected}) == 1 and again.equals(col)
    assert col.column_names == ["entry", "file_path", "content_offset", "content_size_in_bytes",
                                "referenced_data_file", "cardinality", "positions"]
    assert sorted(col.column("cardinality").to_pylist()) == [6889, 6953, 6977, 7105]
    assert str(col.column("positions").type) == "large_list<item: int64>"
    for row in col.to_pylist():
        dv = objects[row["entry"]]
        assert row["referenced_data_file"] == dv.referenced_data_file
        assert row["positions"] == dv.positions().tolist() and row["cardinality"] == len(row["positions"])
    some = t.dvs().iloc[[3, 1]]  # the entries asked for, in their order
    picked = t.read_dvs(some, arrow=True)
    assert sorted(picked.column("entry").to_pylist()) == [0, 1]
    by_entry = {r["entry"]: r for r in picked.to_pylist()}
    assert [by_entry[i]["referenced_data_file"] for i in (0, 1)] == list(some["referenced_data_file"])


def test_read_dvs_of_a_local_file_reads_it_in_pieces_into_few_position_arrays(tmp_path, monkeypatch):
    """A local Puffin file's DVs are read a request of at most _LOCAL_REQUEST bytes at a time (each span decoded and
    let go before the next is read) and their positions written into arrays of at most _STORE_POSITIONS: every DV
    the same as read alone, whichever piece or array it fell in; a damaged one among them still reports itself."""
    import numpy as np

    from puffin_explorer import DeletionVector, PuffinWriter
    from puffin_explorer.iceberg import dvreads
    from puffin_explorer.io.ranges import request_groups

    rng = np.random.default_rng(11)
    wanted = [np.unique(rng.integers(0, 60_000, int(k))) for k in rng.integers(1, 300, 40)]
    w = PuffinWriter(properties={"created-by": "tests"})
    for i, p in enumerate(wanted):
        w.add_dv(p, referenced_data_file=f"s3://b/t/data/{i}.parquet")
    data = bytearray(w.to_bytes())
    blobs = PuffinFile(bytes(data)).blobs
    data[blobs[17].offset + 4] ^= 0xFF  # one damaged magic among them
    path = tmp_path / "many.puffin"
    path.write_bytes(bytes(data))
    offsets = np.array([b.offset for b in blobs])
    sizes = np.array([b.length for b in blobs])
    monkeypatch.setattr(dvreads, "_LOCAL_REQUEST", 2_000)
    monkeypatch.setattr(dvreads, "_STORE_POSITIONS", 700)
    src = ByteSource(str(path), size=len(data))
    dvs = dvreads._file_dvs(src, str(path), offsets[::-1], sizes[::-1], [f"ref-{i}" for i in range(40)][::-1])
    assert src.read_count == len(request_groups(offsets, sizes, max_request=2_000)) >= 7  # pieces, not one request
    bases = {id(d.positions().base) for i, d in enumerate(dvs[::-1]) if i != 17}
    assert 1 < len(bases) < 40  # a few position arrays shared by the DVs, not one each nor one for all
    for i, dv in enumerate(dvs[::-1]):
        assert dv.offset == blobs[i].offset and dv.referenced_data_file == f"ref-{i}"
        alone = DeletionVector.from_bytes(bytes(data[blobs[i].offset:blobs[i].offset + blobs[i].length]))
        assert [f.code for f in dv.findings] == [f.code for f in alone.findings]
        if i != 17:
            assert dv.positions().tolist() == wanted[i].tolist()
    assert dvs[::-1][17].findings.errors


def test_read_dvs_of_entries_given_as_dicts_or_a_dataframe(monkeypatch):
    """Entries given to read_dvs (dicts, a DataFrame with its nullable columns) come back as DVs in their order; a
    file size that is absent does not matter; an entry without its range, or with one that is not a number, is
    a clear error naming its Puffin file."""
    import pandas as pd

    from puffin_explorer.errors import InvalidFileError

    t = Warehouse(str(WAREHOUSE)).table("shop.orders")
    entries = t.entries(content="deletes").query("kind == 'dv'").to_dict("records")[::-1]
    want = [t.read_dv(e).positions().tolist() for e in entries]
    frame = pd.DataFrame(entries)
    frame["file_size_in_bytes"] = frame["file_size_in_bytes"].astype("Int64")
    frame.loc[1, "file_size_in_bytes"] = pd.NA
    for given in (entries, frame, [dict(e, file_size_in_bytes=None) for e in entries]):
        fresh = Warehouse(str(WAREHOUSE)).table("shop.orders")
        got = fresh.read_dvs(given, progress=False)
        assert [d.positions().tolist() for d in got] == want
        assert [d.referenced_data_file for d in got] == [e["referenced_data_file"] for e in entries]
    for bad in (None, "twelve"):
        broken = [dict(e) for e in entries]
        broken[2]["content_offset"] = bad
        with pytest.raises(InvalidFileError, match="DV entry without content_offset") as err:
            t.read_dvs(broken, progress=False)
        assert err.value.code == "dv-missing-range" and entries[2]["file_path"] in str(err.value)
    broken = frame.astype({"content_offset": "Int64"})
    broken.loc[2, "content_offset"] = pd.NA  # a DataFrame's plan is read column by column: the same error
    with pytest.raises(InvalidFileError, match="DV entry without content_offset") as err:
        t.read_dvs(broken, progress=False)
    assert err.value.code == "dv-missing-range" and entries[2]["file_path"] in str(err.value)


def test_read_dvs_lets_go_of_a_big_index_it_built_for_its_plan_and_keeps_one_built_before(monkeypatch):
    """The entries read_dvs builds for its plan alone are not kept beside the positions when there are more than
    KEEP_PLAN_INDEX_UP_TO (the next question builds them again); an index built before, by the card or dvs(),
    stays, and so does a small one."""
    from puffin_explorer.iceberg import dvreads
    from puffin_explorer.iceberg.entry_cache import built_index, entry_cache

    small = Warehouse(str(WAREHOUSE)).table("shop.orders")
    small.read_dvs(progress=False)
    assert built_index(small.source, None) is not None  # 8 entries: kept
    monkeypatch.setattr(dvreads, "KEEP_PLAN_INDEX_UP_TO", 7)
    t = Warehouse(str(WAREHOUSE)).table("shop.orders")
    col = t.read_dvs(arrow=True, progress=False)
    cache = entry_cache(t.source)
    assert built_index(t.source, None) is None and not cache.indexes and not cache.chunks
    objects = t.read_dvs(progress=False)
    assert not cache.indexes and [d.positions().tolist() for d in objects] == col.column("positions").to_pylist()
    assert len(t.dvs()) == 4 and cache.indexes  # built again for dvs(), and kept
    held = dict(cache.indexes)
    assert t.read_dvs(arrow=True, progress=False).equals(col) and cache.indexes == held


def test_a_read_dv_loop_decodes_the_next_dvs_of_a_file_together():
    """After ``batch_after`` calls on one Puffin file, read_dv decodes the following DVs of that
    file in one planned read and hands them out as asked: same vectors, one request."""
    from puffin_explorer.iceberg.dvreads import dv_reader

    expected = read_delete_files_csv("orders_delete_files.csv")
    t = Warehouse(str(WAREHOUSE)).table("shop.orders")
    entries = sorted(t.entries(content="deletes").query("kind == 'dv'").to_dict("records"),
                     key=lambda e: e["content_offset"])
    dv_reader(t.source).batch_after = 1  # this table only: batch from the first call
    t.io.reset_counters()
    looped = [t.read_dv(e) for e in entries]
    assert t.io.read_count == 1 and not dv_reader(t.source).ready  # one request; every decoded DV handed out
    fresh = Warehouse(str(WAREHOUSE)).table("shop.orders").read_dvs(entries)
    for e, a, b in zip(entries, looped, fresh):
        assert a.referenced_data_file == e["referenced_data_file"]
        assert a.positions().tolist() == b.positions().tolist()
        assert a.cardinality == int(e["record_count"]) == len(a.positions())
    assert sorted(d.cardinality for d in looped) == sorted(r[4] for r in expected) == [6889, 6953, 6977, 7105]
    # a table whose manifests were not read does not read them to read ahead
    other = Warehouse(str(WAREHOUSE)).table("shop.orders")
    dv_reader(other.source).batch_after = 1
    other.io.reset_counters()
    assert [other.read_dv(e).cardinality for e in entries] == [d.cardinality for d in looped]
    assert other.io.read_count == 2  # the DV reads only (exact, then read ahead): no manifest list, no manifest


@pytest.mark.s3
def test_s3_reads_go_through_arrow_when_the_options_allow(s3_server, s3_puffin):
    """Arrow's S3 client serves ranged and whole reads (a fifth of s3fs's CPU per request) when the
    options name credentials; the answers are the same bytes, and fsspec's client sends no GET."""
    from puffin_explorer.io.arrow_s3 import arrow_s3
    from puffin_explorer.io.source import filesystem

    opts = s3_server.storage_options
    assert arrow_s3(opts) is not None
    assert arrow_s3({**opts, "config_kwargs": {"s3": {"addressing_style": "path"}}}) is None
    assert arrow_s3({k: v for k, v in opts.items() if k not in ("key", "secret")}) is None  # credentials from the environment
    fs, _ = filesystem(s3_puffin, opts)  # the I/O layer's own client (its options carry the timeouts)
    fs.connect()
    gets = []

    def on_call(http_response, parsed, model, **_kwargs):
        if model.name == "GetObject":
            gets.append((model.name, parsed.get("ContentRange")))

    fs.s3.meta.events.register("after-call.s3", on_call)
    try:
        src = ByteSource(s3_puffin, opts)
        assert src.read(0, src.size) == JAVA_DVS.read_bytes() and src.read_count == 1
        assert gets == [], "ranged"
        assert FileIO(opts).read(s3_puffin) == JAVA_DVS.read_bytes()
        assert gets == [], "whole"
        remote, local = PuffinFile(s3_puffin, storage_options=opts), PuffinFile(JAVA_DVS)
        assert [b.decode().positions().tolist() for b in remote.blobs] == \
            [b.decode().positions().tolist() for b in local.blobs]
        assert gets == []
        with pytest.raises(NotFoundError):  # a failed Arrow read is made again through fsspec: its error
            ByteSource(s3_puffin + ".nope", opts)
    finally:
        fs.s3.meta.events.unregister("after-call.s3", on_call)


def test_a_source_opens_as_a_seekable_file_for_other_readers():
    """pyarrow reads a Parquet file through ByteSource.open(): counted range reads, the same table."""
    import pyarrow.parquet as pq

    from conftest import RESOURCES

    path = RESOURCES / "parquet-testing" / "alltypes_plain.parquet"
    src = ByteSource(str(path))
    with src.open() as fh:
        assert fh.seekable() and fh.seek(0, 2) == path.stat().st_size
        fh.seek(0)
        table = pq.ParquetFile(fh).read()
    assert table.equals(pq.read_table(path)) and table.num_rows == 8
    assert 0 < src.bytes_read <= 2 * path.stat().st_size and src.read_count >= 2


def test_a_storage_error_names_a_huge_location_in_bounded_text():
    """A location of 20 MB (table fuzzer seed 50, case 2401: a manifest list path made of one huge string) is named
    by its start and end in the message, and kept whole on the error."""
    from puffin_explorer.io.errors import storage_error

    location = "/t/metadata/" + "x" * 20_000_000 + ".avro"
    err = storage_error(FileNotFoundError(2, "No such file or directory", location), location)
    assert len(str(err)) < 1_200 and str(err).startswith("no such file: /t/metadata/xxx") and "xxx.avro:" in str(err)
    assert err.location == location


def test_request_groups_plans_what_coalesce_plans_for_arrays():
    """request_groups (numpy, thousands of a Puffin file's DVs) cuts sorted ranges into the requests coalesce
    merges them into; max_ranges caps a request's ranges too."""
    import numpy as np

    from puffin_explorer.io.ranges import request_groups

    rng = np.random.default_rng(7)
    for gap, max_request in ((0, 1 << 20), (64, 1 << 20), (4096, 10_000)):
        sizes = rng.integers(1, 2_000, 500)
        offsets = np.sort(rng.integers(0, 400_000, 500))
        groups = request_groups(offsets, sizes, gap=gap, max_request=max_request)
        assert np.array_equal(np.concatenate(groups), np.arange(500))
        spans = [(int(offsets[g[0]]), int((offsets[g] + sizes[g]).max()) - int(offsets[g[0]])) for g in groups]
        for g in groups:  # within a request: no gap wider than allowed, no range starting past max_request
            reach = np.maximum.accumulate(offsets[g] + sizes[g])
            assert (offsets[g][1:] - reach[:-1] <= gap).all() and (offsets[g] - offsets[g[0]] < max_request).all()
        merged = coalesce(list(zip(offsets.tolist(), sizes.tolist())), gap, max_request)
        if max_request == 1 << 20:  # nothing cut for size: coalesce's requests exactly
            assert spans == merged
        else:  # cut at fixed steps of max_request from the first offset, not greedily by the end: as many, within 2x
            assert len(merged) // 2 <= len(groups) <= 2 * len(merged)
    assert [g.tolist() for g in request_groups(np.arange(0, 50, 10), np.full(5, 5), max_ranges=2)] == \
        [[0, 1], [2, 3], [4]]
    assert request_groups(np.zeros(0, np.int64), np.zeros(0, np.int64)) == []


def test_a_files_dvs_are_decoded_together_and_the_others_each_by_itself(tmp_path):
    """The DVs of one Puffin file read by read_dvs: those of the common shape (one container, positions past
    65,535 too) decoded together from the request's bytes, holding their positions and not their bytes (read
    again, equal, when asked); one with several containers, one whose magic is damaged and one whose values fall
    keep their bytes and decode or report themselves as a single read does; a file cut short is a clear error
    at the DV's offset."""
    import numpy as np

    from puffin_explorer import DeletionVector, PuffinWriter
    from puffin_explorer.iceberg.dvreads import _file_dvs

    shapes = {"low": [3, 4, 5, 41], "high": [70_000, 70_001, 131_071], "keyed": [(5 << 32) + 9, (5 << 32) + 10],
              "containers": [1, 65_536 * 3 + 2, 65_536 * 7 + 4], "magic": [10, 20, 30], "falls": [100, 200, 300]}
    w = PuffinWriter(properties={"created-by": "tests"})
    for name, positions in shapes.items():
        w.add_dv(positions, referenced_data_file=f"s3://b/t/data/{name}.parquet")
    data = bytearray(w.to_bytes())
    blobs = PuffinFile(bytes(data)).blobs
    at = {name: (b.offset, b.length) for name, b in zip(shapes, blobs)}
    data[at["magic"][0] + 4] ^= 0xFF  # the magic's first byte
    o, n = at["falls"]
    data[o + n - 6:o + n - 4] = (50).to_bytes(2, "little")  # its last value now below the one before
    path = tmp_path / "dvs.puffin"
    path.write_bytes(bytes(data))
    order = ["containers", "high", "magic", "low", "falls", "keyed"]  # not in file order: results in this order
    src = ByteSource(str(path), size=len(data))
    dvs = _file_dvs(src, str(path), np.array([at[k][0] for k in order]), np.array([at[k][1] for k in order]),
                    [f"ref-{k}" for k in order])
    singles = {k: DeletionVector.from_bytes(bytes(data[at[k][0]:sum(at[k])]), at[k][0]) for k in order}
    assert src.read_count == 1
    for name, dv in zip(order, dvs):
        assert dv.referenced_data_file == f"ref-{name}" and dv.offset == at[name][0]
        assert dv.positions().tolist() == singles[name].positions().tolist()
        assert (dv._bytes is None) == (name in ("low", "high")), name  # keyed: buckets 0 to 5, 0 to 4 empty
    assert dvs[order.index("high")].positions().tolist() == shapes["high"]
    assert dvs[order.index("keyed")].positions().tolist() == shapes["keyed"]
    for name in ("falls", "magic"):
        assert [f.code for f in dvs[order.index(name)].findings] == [f.code for f in singles[name].findings] != []
    low = dvs[order.index("low")]
    assert low.to_bytes() == bytes(data[at["low"][0]:sum(at["low"])]) and src.read_count == 2  # read again
    assert list(low.findings) == []
    short = ByteSource(str(path), size=len(data))
    path.write_bytes(bytes(data[:at["keyed"][0] + 5]))
    with pytest.raises(SourceError, match="ends before the DV") as err:
        _file_dvs(short, str(path), np.array([at["keyed"][0]]), np.array([at["keyed"][1]]), [None])
    assert err.value.offset == at["keyed"][0]
