"""A location is resolved once per process (io/resolve.py): a path already seen costs no fsspec resolution,
different options never share a filesystem, and the environment's retry settings still apply to the next read.

Resolutions are counted by a real fsspec filesystem registered under its own protocol: fsspec asks the class
for the options a URL carries (``_get_kwargs_from_urls``) once per resolution of a location, and never when a
file is read.
"""

from __future__ import annotations

import shutil

import fsspec
import pytest
from fsspec.implementations.local import LocalFileSystem

from puffin_explorer import PuffinFile, read_dv
from puffin_explorer.errors import StorageUnavailableError
from puffin_explorer.io import ByteSource, filesystem, read_range, resolve, retry

from conftest import FIXTURES

JAVA_DVS = FIXTURES / "puffin" / "iceberg-java-writer" / "java-dv-shapes.puffin"
SPARSE = [0, 2, 4, 1000, 65535, 65536, 70000, 1048576]  # blob 0 of java-dv-shapes.puffin (fixtures README)
HIGH = [5, 2 ** 32 + 7, 2 ** 33 + 1, 3 * 2 ** 32 - 1]  # blob 3


class CountingFileSystem(LocalFileSystem):
    """Local files under ``pecount://``, counting how often fsspec resolves a location of this protocol."""

    protocol = ("pecount",)
    resolutions = 0

    @classmethod
    def _get_kwargs_from_urls(cls, path):
        CountingFileSystem.resolutions += 1
        return {}

    @classmethod
    def _strip_protocol(cls, path):
        path = fsspec.utils.stringify_path(path)
        return super()._strip_protocol(path[len("pecount://"):] if path.startswith("pecount://") else path)


class FlakyFileSystem(CountingFileSystem):
    """Local files under ``peflaky://`` whose reads fail with a reset connection while ``failures`` lasts."""

    protocol = ("peflaky",)
    failures = 0
    reads = 0

    @classmethod
    def _strip_protocol(cls, path):
        path = fsspec.utils.stringify_path(path)
        return super()._strip_protocol(path[len("peflaky://"):] if path.startswith("peflaky://") else path)

    def cat_file(self, path, start=None, end=None, **kwargs):
        FlakyFileSystem.reads += 1
        if FlakyFileSystem.failures > 0:
            FlakyFileSystem.failures -= 1
            raise ConnectionResetError("connection reset by peer")
        return super().cat_file(path, start=start, end=end, **kwargs)


fsspec.register_implementation("pecount", CountingFileSystem, clobber=True)
fsspec.register_implementation("peflaky", FlakyFileSystem, clobber=True)


@pytest.fixture
def puffin(tmp_path):
    """A copy of java-dv-shapes.puffin under a fresh path (no earlier test resolved it) and its blobs."""
    path = tmp_path / "dvs.puffin"
    shutil.copyfile(JAVA_DVS, path)
    return path, [(b.offset, b.length) for b in PuffinFile(JAVA_DVS).blobs]


def test_a_path_already_seen_is_read_without_resolving_it_again(puffin):
    path, blobs = puffin
    url = f"pecount://{path}"
    before, cached = CountingFileSystem.resolutions, resolve.counters()["cached"]
    assert read_dv(url, *blobs[0]).positions().tolist() == SPARSE
    first = CountingFileSystem.resolutions
    assert first > before  # the first read resolves the location
    for _ in range(3):
        assert read_dv(url, *blobs[3]).positions().tolist() == HIGH
        assert read_range(url, blobs[0][0], 8) == JAVA_DVS.read_bytes()[blobs[0][0]:blobs[0][0] + 8]
    assert CountingFileSystem.resolutions == first  # the next ones do not
    assert resolve.counters()["cached"] == cached + 6


def test_an_open_puffin_file_reads_its_dvs_without_resolving(puffin):
    path, blobs = puffin
    pf = PuffinFile(f"pecount://{path}")
    before = CountingFileSystem.resolutions
    assert [pf.read_dv(*blobs[i]).positions().tolist() for i in (0, 3)] == [SPARSE, HIGH]
    assert pf.read_dv(*blobs[2]).cardinality == 60_000
    assert CountingFileSystem.resolutions == before
    assert pf.read_dv(*blobs[0]).referenced_data_file is None
    assert pf.read_dv(*blobs[0], referenced_data_file="s3://b/x.parquet").referenced_data_file == "s3://b/x.parquet"


def test_another_path_reuses_the_filesystem_of_the_same_options(puffin, tmp_path):
    path, blobs = puffin
    other = tmp_path / "other.puffin"
    shutil.copyfile(JAVA_DVS, other)
    fs_a, path_a = filesystem(f"pecount://{path}")
    fs_b, path_b = filesystem(f"pecount://{other}")
    assert fs_a is fs_b and (path_a, path_b) == (str(path), str(other))
    assert read_dv(f"pecount://{other}", *blobs[0]).positions().tolist() == SPARSE


def test_different_options_do_not_share_a_filesystem(puffin):
    path, blobs = puffin
    url = f"pecount://{path}"
    made = fsspec.filesystem("pecount", auto_mkdir=False)  # fsspec's own instance for these options
    fs_off, _ = filesystem(url, {"auto_mkdir": False})
    fs_on, _ = filesystem(url, {"auto_mkdir": True})
    assert fs_off is not fs_on
    assert (fs_off.auto_mkdir, fs_on.auto_mkdir) == (False, True)
    assert fs_off is made  # the layer adds no client of its own beside fsspec's
    assert filesystem(url, {"auto_mkdir": True})[0] is fs_on  # the same options again: the same one
    # the layer's own keys (timeout, retries) give a policy, not a client option, and a policy of their own
    assert ByteSource(url, {"timeout": 5}).policy == retry.Policy(5.0, ByteSource(url).policy.retries)
    assert read_dv(url, *blobs[0], storage_options={"auto_mkdir": True}).positions().tolist() == SPARSE


def test_options_that_are_not_plain_values_are_resolved_every_time(puffin):
    path, _ = puffin
    url = f"pecount://{path}"
    marker = object()  # an object fsspec would take (a credentials provider, say): not compared as a value
    before = CountingFileSystem.resolutions
    filesystem(url, {"provider": marker})
    filesystem(url, {"provider": marker})
    filesystem(url, {"skip_instance_cache": True})
    filesystem(url, {"skip_instance_cache": True})
    assert CountingFileSystem.resolutions >= before + 4  # each call resolves (fsspec's own instances aside)
    assert resolve.options_key({"provider": marker}) is None
    assert resolve.options_key({"a": 1}) != resolve.options_key({"a": True}) != resolve.options_key({"a": "1"})
    assert resolve.options_key({"c": {"x": [1, 2]}}) == resolve.options_key({"c": {"x": [1, 2]}})


def test_a_relative_path_follows_the_working_folder(tmp_path, monkeypatch):
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        shutil.copyfile(JAVA_DVS, tmp_path / name / "dvs.puffin")
    monkeypatch.chdir(tmp_path / "one")
    assert filesystem("dvs.puffin")[1] == str(tmp_path / "one" / "dvs.puffin")
    monkeypatch.chdir(tmp_path / "two")
    assert filesystem("dvs.puffin")[1] == str(tmp_path / "two" / "dvs.puffin")


def test_the_environment_retry_settings_apply_to_a_path_already_seen(puffin, monkeypatch):
    path, blobs = puffin
    url = f"peflaky://{path}"
    monkeypatch.setenv(retry.RETRIES_ENV, "0")
    assert read_dv(url, *blobs[0]).positions().tolist() == SPARSE  # resolved now, with no retries
    FlakyFileSystem.failures, FlakyFileSystem.reads = 1, 0
    with pytest.raises(StorageUnavailableError, match="1 attempt"):
        read_dv(url, *blobs[0])
    assert FlakyFileSystem.reads == 1
    monkeypatch.setenv(retry.RETRIES_ENV, "2")  # the same path, now with two retries
    FlakyFileSystem.failures, FlakyFileSystem.reads = 2, 0
    assert read_dv(url, *blobs[0]).positions().tolist() == SPARSE
    assert FlakyFileSystem.reads == 3
    assert ByteSource(url).policy == retry.Policy(retry.DEFAULT_TIMEOUT_S, 2)
    monkeypatch.setenv(retry.TIMEOUT_ENV, "7.5")
    assert ByteSource(url).policy == retry.Policy(7.5, 2)


def test_a_changed_timeout_gives_a_client_with_that_timeout(monkeypatch):
    pytest.importorskip("s3fs")
    url = "s3://bucket/table/data/dvs.puffin"
    monkeypatch.setenv(retry.TIMEOUT_ENV, "7")
    fs7, _ = filesystem(url, {"anon": True})
    monkeypatch.setenv(retry.TIMEOUT_ENV, "9")
    fs9, path = filesystem(url, {"anon": True})
    assert fs7 is not fs9 and path == "bucket/table/data/dvs.puffin"
    assert (fs7.config_kwargs["connect_timeout"], fs9.config_kwargs["read_timeout"]) == (7.0, 9.0)
    monkeypatch.setenv(retry.TIMEOUT_ENV, "7")
    assert filesystem(url, {"anon": True})[0] is fs7


def test_the_caches_are_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(resolve._locations, "limit", 3)
    for i in range(5):
        filesystem(str(tmp_path / f"f{i}.puffin"))
    assert len(resolve._locations.items) == 3
    resolve.clear()
    assert len(resolve._locations.items) == 0 and len(resolve._filesystems.items) == 0


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork here")
def test_a_forked_child_starts_with_empty_caches(puffin):
    import os

    path, blobs = puffin
    filesystem(str(path))
    assert len(resolve._locations.items) > 0
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nothing kept from the parent, and it reads as the parent does
        try:
            ok = len(resolve._locations.items) == 0 and len(resolve._filesystems.items) == 0 \
                and read_dv(str(path), *blobs[0]).positions().tolist() == SPARSE
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.waitpid(pid, 0)
    os.close(read)
    assert answer == b"1"
    assert len(resolve._locations.items) > 0  # the parent keeps its own


def test_a_table_scope_in_the_options_is_a_value_and_is_still_checked_on_every_read(puffin, tmp_path):
    from puffin_explorer.errors import OutsideScopeError
    from puffin_explorer.io.scope import ReadScope

    path, blobs = puffin
    inside = {"read_scope": ReadScope.around(str(path.parent))}
    assert resolve.options_key(inside) == resolve.options_key({"read_scope": ReadScope.around(str(path.parent))})
    assert resolve.options_key(inside) != resolve.options_key({"read_scope": ReadScope.around(str(tmp_path / "x"))})
    first = read_dv(str(path), *blobs[0], storage_options=inside).positions().tolist()
    before = resolve.counters()["resolved"]
    for _ in range(3):  # a table's DVs: read with its scope in the options, resolved once
        assert read_dv(str(path), *blobs[0], storage_options=inside).positions().tolist() == first == SPARSE
    assert resolve.counters()["resolved"] == before
    elsewhere = {"read_scope": ReadScope.around(str(tmp_path / "another-table"))}
    with pytest.raises(OutsideScopeError):  # the same path, already resolved, under a scope that excludes it
        read_dv(str(path), *blobs[0], storage_options=elsewhere)
