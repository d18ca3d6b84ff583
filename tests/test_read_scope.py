"""A table reads only its own storage: hostile tables whose metadata names a location outside the table's read
scope make no request to it (a real HTTP listener counts them) and open no file outside the table (an audit
hook sees every ``open``), through the card, ``check()``, ``health()`` with the listing, ``read_dvs()``, the
command line and the browser; each refused location is a ``source.outside-scope`` finding that names it, the
scope and ``allow=``; ``relocate=`` and ``allow=`` widen the scope; DuckDB connections are locked down; a
not-found location is asked for once."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from pathlib import Path

import pytest

from puffin_explorer import DeltaTable, Table, Warehouse
from puffin_explorer.errors import NotFoundError, SourceError
from puffin_explorer.io import FileIO
from puffin_explorer.io.scope import OUTSIDE_SCOPE, OutsideScopeError, ReadScope, canonical, storage_root

from _hostile_tables import PLACES, CountingListener, OpenAudit, build
from _warehouse_fixtures import WAREHOUSE, copy_warehouse

NOW = "2030-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def listener():
    server = CountingListener()
    yield server
    server.close()


@pytest.fixture
def audit():
    return OpenAudit.get()


# ---- the scope object ---------------------------------------------------------------------------------------------
def test_the_default_scope_is_the_storage_opened(tmp_path):
    s3 = ReadScope.around("s3a://Bucket/wh/t/metadata/v1.metadata.json")
    assert s3.roots == ("s3://bucket",)
    assert s3.allows("s3://bucket/other/x.parquet") and s3.allows("s3n://bucket/x")
    assert not s3.allows("s3://bucket2/x") and not s3.allows("gs://bucket/x") and not s3.allows("/etc/hostname")
    http = ReadScope.around("http://127.0.0.1:8765/t/metadata/v1.metadata.json")
    assert http.roots == ("http://127.0.0.1:8765",)
    assert http.allows("http://127.0.0.1:8765/t/data/x") and not http.allows("http://127.0.0.1:8766/t/data/x")
    assert not http.allows("https://127.0.0.1:8765/x") and not http.allows("http://169.254.169.254/latest")
    local = ReadScope.around(str(tmp_path / "t"), allow=["s3://other/prefix"], relocate={"/old": str(tmp_path / "new")})
    assert local.roots == (str(tmp_path / "t"), "s3://other/prefix", str(tmp_path / "new"))
    assert local.allows(str(tmp_path / "t" / "data" / "x")) and local.allows(f"file://{tmp_path}/t/x")
    assert not local.allows(str(tmp_path / "t" / ".." / "secret")) and not local.allows(str(tmp_path / "tt"))
    assert local.allows("s3://other/prefix/a") and not local.allows("s3://other/prefixed") \
        and not local.allows("s3://other/x")
    assert storage_root("HTTPS://Host:443/a") == "https://host:443" and canonical("file:/a/b/") == "/a/b"


def test_a_symlink_out_of_the_root_is_outside(tmp_path):
    (tmp_path / "t").mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    (tmp_path / "t" / "inside.txt").write_text("ok")
    os.symlink(secret, tmp_path / "t" / "link.txt")
    scope = ReadScope.around(str(tmp_path / "t"))
    assert scope.allows(str(tmp_path / "t" / "inside.txt")) and not scope.allows(str(tmp_path / "t" / "link.txt"))
    opts = {"read_scope": scope}
    with pytest.raises(OutsideScopeError) as err:
        FileIO(opts).read(str(tmp_path / "t" / "link.txt"))
    assert err.value.code == OUTSIDE_SCOPE
    assert FileIO(opts).read(str(tmp_path / "t" / "inside.txt")) == b"ok"


def test_refused_checks_a_column_at_once(tmp_path):
    import pyarrow as pa

    scope = ReadScope.around(str(tmp_path / "t"))
    col = pa.array([str(tmp_path / "t" / "a"), None, "http://127.0.0.1:1/x", str(tmp_path / "t2" / "b"),
                    f"file:{tmp_path}/t/c", str(tmp_path / "t" / ".." / "d"), "relative/x"], pa.string())
    assert scope.refused(col).tolist() == [False, False, True, True, False, True, True]


def test_the_error_names_the_location_the_scope_and_the_parameter():
    scope = ReadScope.around("s3://bucket/wh/t/metadata/v1.metadata.json")
    err = scope.error("http://169.254.169.254/latest/meta-data")
    text = str(err)
    assert text.startswith("http://169.254.169.254/latest/meta-data is outside the read scope of "
                           "s3://bucket/wh/t/metadata/v1.metadata.json (s3://bucket); not read")
    assert "allow=['http://169.254.169.254']" in text and "--allow http://169.254.169.254" in text
    assert err.code == OUTSIDE_SCOPE and isinstance(err, SourceError)


# ---- hostile tables: no request, no file outside --------------------------------------------------------------------
class Raised:
    """An error a call raised, kept with the findings (``read_dvs()`` raises for a DV file it cannot read)."""

    def __init__(self, exc: SourceError) -> None:
        self.code, self.message = exc.code, str(exc)


def _raises_or_reads(fn, found: list) -> None:
    try:
        fn()
    except OutsideScopeError as exc:
        found.append(Raised(exc))


def _run_everything(h, tmp_path: Path) -> list:
    """Every user path over one hostile table; the findings of each (in order)."""
    from puffin_explorer.cli import main

    found = []
    if h.kind == "delta":
        t = DeltaTable(h.location)
        t._repr_mimebundle_()
        found += list(t.check())
        t.health(now=NOW)
        _raises_or_reads(t.deletion_vectors, found)
        found += list(t.findings)
        cli = ["table", h.location, "check"]
    else:
        if h.kind == "iceberg-warehouse":
            wh = Warehouse(h.location)
            t = wh.table(h.table)
            cli = ["table", h.location, "--table", h.table, "check"]
        else:
            t = Table.from_folder(h.location)
            cli = ["table", h.location, "check"]
        t._repr_mimebundle_()
        found += list(t.check())
        health = t.health(now=NOW, list_files=True)
        found += list(health.findings)
        _raises_or_reads(t.read_dvs, found)
        t.summary()
        t.timeline()
        t.deleted_rows_per_file()
        found += list(t.findings)
        if h.kind == "iceberg-warehouse":
            wh.summary()
            wh.health(now=NOW)
            b = wh.browse(now=NOW).select(table=h.table)
            b.static_html()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(cli)
        main(["doctor", h.location] + (["--table", h.table] if h.table else []) + ["--now", NOW])
    return found


@pytest.mark.parametrize("place", PLACES)
def test_a_hostile_table_makes_no_request(place, listener, tmp_path):
    h = build(place, tmp_path, f"{listener.url}/secret/{place}")
    listener.requests.clear()
    found = _run_everything(h, tmp_path)
    assert listener.requests == []
    refused = [f for f in found if f.code == OUTSIDE_SCOPE]
    assert refused, [f"{f.code}: {f.message}" for f in found]
    assert f"{listener.url}/secret/{place}" in refused[0].message and "allow=" in refused[0].message


@pytest.mark.parametrize("place", PLACES)
def test_a_hostile_table_opens_no_file_outside(place, audit, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    sentinel = outside / "sentinel.bin"
    sentinel.write_bytes(b"PAR1" + b"\0" * 64)
    inside = tmp_path / "in"
    inside.mkdir()
    h = build(place, inside, str(sentinel))
    with audit:
        found = _run_everything(h, inside)
    assert audit.touched(outside) == []
    assert any(f.code == OUTSIDE_SCOPE for f in found)


def test_a_symlink_in_a_table_leads_nowhere(audit, tmp_path):
    """A data folder entry that links to a file outside the table: not opened, an outside-scope finding."""
    outside = tmp_path / "outside"
    outside.mkdir()
    sentinel = outside / "sentinel.puffin"
    inside = tmp_path / "in"
    wh = copy_warehouse(inside)
    from _warehouse_fixtures import ORDERS_DV_PUFFIN

    puffin = wh / "shop" / ORDERS_DV_PUFFIN
    shutil.copy(puffin, sentinel)
    puffin.unlink()
    os.symlink(sentinel, puffin)
    with audit:
        t = Warehouse(str(wh)).table("shop.orders")
        found = list(t.check())
        with pytest.raises(OutsideScopeError) as err:
            t.read_dvs()
    assert audit.touched(outside) == []
    assert f"(a symbolic link to {sentinel}) is outside the read scope of " in str(err.value)
    assert f"({wh / 'shop/orders'}, {wh})" in str(err.value)  # the table's root and its warehouse's
    assert f"allow=['{outside}']" in str(err.value)
    unreadable = [f for f in found if f.code == "iceberg.puffin-unreadable"]
    assert len(unreadable) == 1 and "(a symbolic link to" in unreadable[0].message


# ---- widening the scope: the same answers as before -----------------------------------------------------------
def test_relocate_and_allow_read_what_is_theirs(tmp_path):
    base = Warehouse(str(WAREHOUSE)).table("shop.orders")
    expected = (base.summary()["live_rows"], sorted(f.code for f in base.check()))
    # a moved table: its files named by a prefix that is elsewhere, read with relocate=
    moved = copy_warehouse(tmp_path / "moved")
    t = Table.from_metadata(str(moved / "shop/orders/metadata/v7.metadata.json"), auto_relocate=False,
                            relocate={"/data/warehouse": str(moved)})
    assert (t.summary()["live_rows"], sorted(f.code for f in t.check())) == expected
    # a table whose data and DV files were written in a second place (its metadata names them there): outside the
    # table's folder, refused; read with allow= (and --allow), the same answers
    from _spark import relocate_warehouse

    second = relocate_warehouse(WAREHOUSE, tmp_path / "second", old_root="/data/warehouse/shop/orders/data")
    for f in list((second / "shop/orders/data").iterdir()):
        shutil.move(str(f), str(second / f.name))
    meta = str(second / "shop/orders/metadata/v7.metadata.json")
    refused = Table.from_metadata(meta)
    codes = [f.code for f in refused.check()]
    assert OUTSIDE_SCOPE in codes and "iceberg.puffin-unreadable" in codes
    t = Table.from_metadata(meta, allow=[str(second)])
    assert t.scope.roots == (str(second / "shop/orders"), str(second))
    # the rewrite left the Puffin files' own referenced-data-file and the Puffin sizes as written: the same
    # findings as the table read through its warehouse, whose scope holds the second place anyway
    through = Warehouse(str(second)).table("shop.orders")
    assert t.summary()["live_rows"] == expected[0] == through.summary()["live_rows"]
    assert sorted(f.code for f in t.check()) == sorted(f.code for f in through.check())
    assert OUTSIDE_SCOPE not in {f.code for f in t.check()}
    from puffin_explorer.cli import main

    for extra, refusing in (([], True), (["--allow", str(second)], False)):
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert main(["table", meta, "check"] + extra) == 1  # the rewrite's own findings are errors
        assert (OUTSIDE_SCOPE in out.getvalue()) == refusing
        assert (f"--allow {second}" in out.getvalue()) == refusing


def test_a_table_opened_over_http_reads_its_own_host(listener, tmp_path):
    """Opened over HTTP, a table reads from that host (and only there)."""
    meta = (WAREHOUSE / "shop/orders/metadata/v7.metadata.json").read_bytes()
    listener.files["/wh/shop/orders/metadata/v7.metadata.json"] = meta
    listener.requests.clear()
    t = Table.from_metadata(f"{listener.url}/wh/shop/orders/metadata/v7.metadata.json")
    assert t.scope.roots == (listener.url,)
    assert t.scope.allows(f"{listener.url}/wh/shop/orders/data/x.parquet")
    assert t.metadata.current_snapshot_id is not None and len(listener.requests) >= 1


# ---- no retry where retrying cannot help ------------------------------------------------------------------------
def test_a_location_not_found_is_asked_for_once(listener):
    listener.requests.clear()
    with pytest.raises(NotFoundError):
        FileIO().read(f"{listener.url}/no/such/file")
    assert listener.requests == [("GET", "/no/such/file")]


# ---- DuckDB locked down ----------------------------------------------------------------------------------------
def test_the_packages_duckdb_connections_refuse_files_and_the_network(listener, tmp_path):
    import duckdb

    from puffin_explorer.iceberg.manifest_checks import _rows_hashed_alike  # noqa: F401 - its connection is made by locked()
    from puffin_explorer.iceberg.duckdb_manifests import _duckdb
    from puffin_explorer.iceberg.measures import LocalMeasures
    from puffin_explorer._engine import locked_duckdb

    duck = _duckdb()
    measures = LocalMeasures({})
    connections = [locked_duckdb(), measures.con] + ([duck.con] if duck is not None else [])
    listener.requests.clear()
    try:
        for con in connections:
            for sql in ("SELECT * FROM read_text('/etc/hostname')", f"SELECT * FROM read_text('{listener.url}/x')",
                        f"SELECT * FROM read_parquet('{listener.url}/x.parquet')", "SELECT * FROM glob('/etc/*')",
                        "SET enable_external_access = true"):
                with pytest.raises(duckdb.Error):
                    con.execute(sql).fetchall()
        assert listener.requests == []
    finally:
        measures.close()
        if duck is not None:
            duck.close()


# ---- Spark: the scope travels with the plan to the executors -------------------------------------------------------
@pytest.mark.spark
@pytest.mark.parametrize("place, mode, index_on", [("dv-puffin", "executors", "executors"),
                                                   ("manifest", "executors", "executors"),
                                                   ("dv-puffin", "driver", "driver")])
def test_spark_reads_only_the_scope(spark, listener, tmp_path, place, mode, index_on):
    """``pes.dv_positions`` and ``pes.check`` on a hostile table: the executors refuse what the driver refuses (no
    request reaches the listener from any process), and the job's one error names the refused location."""
    from puffin_explorer import spark as pes
    from puffin_explorer.errors import PuffinError

    target = f"{listener.url}/secret/spark-{place}"
    h = build(place, tmp_path, target)
    table = Warehouse(h.location).table(h.table)
    listener.requests.clear()
    for run in (lambda: pes.dv_positions(spark, table, mode=mode, index_on=index_on).count(),
                lambda: pes.check(spark, table, mode=mode, index_on=index_on, compare="record_count").collect()):
        try:
            with pes.spark_errors():
                run()
        except PuffinError as exc:
            assert "outside the read scope" in str(exc) and target in str(exc), str(exc)
            assert isinstance(exc, OutsideScopeError) and exc.code == OUTSIDE_SCOPE
    assert listener.requests == []


def test_a_listing_does_not_follow_a_link_out_of_the_table(tmp_path):
    """The doctor's listing (a walk) and a folder's listing skip a link that leads out of the scope: no name or
    size of a file outside ends up in an orphan report."""
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "private.txt").write_text("x" * 7)
    (outside / "alone.txt").write_text("y" * 3)
    wh = copy_warehouse(tmp_path / "in")
    data = wh / "shop/orders/data"
    os.symlink(outside / "deep", data / "linked-folder")
    os.symlink(outside / "alone.txt", data / "linked-file.txt")
    io_ = Warehouse(str(wh)).io
    names, _, _ = io_.walk(str(wh / "shop/orders"))
    assert not any("linked" in n for n in names) and any(n.endswith(".parquet") for n in names)
    assert not any("linked" in n for n, _, _ in io_.listdir(str(data)))
    health = Warehouse(str(wh)).table("shop.orders").health(now=NOW)
    assert "private.txt" not in str(health.frames.get("listing")) and "linked" not in str(health.frames.get("listing"))
