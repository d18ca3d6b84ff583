"""Storage that fails: bounded time, bounded retries and a clear error, against a real S3 server.

Every test reads through a fault-injecting proxy (``_faultproxy.py``) in front of the
SeaweedFS server: connections reset, answers of 503 SlowDown, answers cut short, stalls,
refused connections.  The readers are the ones a user meets: a Puffin file, an Iceberg
table's open and ``check()``, and the ``puffin-explorer`` command line.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from puffin_explorer import PuffinFile
from puffin_explorer.cli import main
from puffin_explorer.errors import EndpointUnreachableError, SourceError, StorageUnavailableError
from puffin_explorer.iceberg import Table
from puffin_explorer.io import ByteSource, failures, retry

from conftest import FIXTURES, ROOT

try:
    from _faultproxy import FaultProxy
    from _warehouse_fixtures import WAREHOUSE
except ImportError:  # tests/ imported as a package
    from tests._faultproxy import FaultProxy
    from tests._warehouse_fixtures import WAREHOUSE

PUFFIN = FIXTURES / "puffin" / "iceberg-java-writer" / "java-dv-shapes.puffin"
RETRIES = 2  # 3 attempts


@pytest.fixture(scope="module")
def proxy(s3_server):
    with FaultProxy(s3_server.endpoint_url) as p:
        yield p


@pytest.fixture(scope="module")
def remote(s3_server):
    """The Puffin file and the ``shop.events`` table, uploaded once."""
    return {"puffin": s3_server.upload(PUFFIN, "faults/puffin"),
            "table": s3_server.upload(WAREHOUSE / "shop" / "events", "faults/shop/events")}


@pytest.fixture(autouse=True)
def clean(request):
    if "proxy" in request.fixturenames:
        p = request.getfixturevalue("proxy")
        p.disarm()
        p.listen()
        p.reset_counts()
        yield
        p.disarm()
        p.listen()
    else:
        yield


def options(s3_server, proxy, timeout: float = 5, retries: int = RETRIES) -> dict:
    """Options that reach the server through the proxy, with this timeout and these retries."""
    return {**s3_server.storage_options, "timeout": timeout, "retries": retries,
            "client_kwargs": {"endpoint_url": proxy.endpoint_url, "region_name": "us-east-1"}}


def gets_of(name: str):
    return lambda method, path: method == "GET" and name in path


# ---------------------------------------------------------------- the three readers, as one answer each

def puffin_answer(url: str, opts: dict):
    """What a user learns from a Puffin file: each blob's positions and the findings, or the error that
    says why the file cannot be read."""
    try:
        pf = PuffinFile(url, storage_options=opts)
    except SourceError as exc:
        return None, [("error", str(exc))]
    blobs = [b.decode().positions().tolist() if not pf.findings else None for b in pf.blobs]
    return blobs, [(f.code, f.message) for f in pf.findings]


def open_table(url: str, opts: dict) -> Table:
    return Table.from_metadata(f"{url}/metadata/v6.metadata.json", storage_options=opts)


def table_answer(url: str, opts: dict):
    """A table opened and checked: its snapshot, its DVs and check()'s findings."""
    t = open_table(url, opts)
    dvs = t.dvs()
    rows = sorted(zip(dvs.location, dvs.content_offset.tolist(), dvs.content_size_in_bytes.tolist()))
    return t.metadata.current_snapshot_id, rows, [(f.code, f.message) for f in t.check()]


def cli_answer(url: str, opts: dict, capsys):
    code = main(["inspect", url, "--storage-options", json.dumps(opts)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def fault_free(s3_server, remote):
    """The answers read straight from the server, no proxy."""
    opts = s3_server.storage_options
    return {"puffin": puffin_answer(remote["puffin"], opts), "table": table_answer(remote["table"], opts)}


# ---------------------------------------------------------------- (a) resets, then success

@pytest.mark.s3
def test_two_resets_then_the_same_answer(s3_server, proxy, remote, fault_free, capsys):
    opts = options(s3_server, proxy)
    proxy.arm("reset", times=2)
    assert puffin_answer(remote["puffin"], opts) == fault_free["puffin"]
    assert proxy.count(fault="reset") == 2
    proxy.arm("reset", times=2)
    assert table_answer(remote["table"], opts) == fault_free["table"]
    want = cli_answer(remote["puffin"], options(s3_server, proxy), capsys)
    proxy.arm("reset", times=2)
    assert cli_answer(remote["puffin"], opts, capsys) == want
    assert want[0] == 0 and proxy.count(fault="reset") == 6


# ---------------------------------------------------------------- (b) persistent 503

@pytest.mark.s3
def test_persistent_503_is_one_clear_error_after_exactly_the_configured_attempts(s3_server, proxy, remote, capsys):
    url = remote["puffin"]
    opts = options(s3_server, proxy)
    proxy.arm("status", status=503, match=gets_of("java-dv-shapes"))
    blobs, findings = puffin_answer(url, opts)
    assert blobs is None and len(findings) == 1, findings
    assert url in findings[0][1] and "503 SlowDown" in findings[0][1] and "3 attempts" in findings[0][1]
    assert proxy.count("GET", "status") == RETRIES + 1
    proxy.reset_counts()
    with pytest.raises(StorageUnavailableError) as info:
        PuffinFile(url, storage_options=opts, strict=True)
    err = info.value
    assert (err.location, err.operation, err.attempts, err.code) == (url, "read", 3, "source.unavailable")
    assert "503 SlowDown" in err.cause and proxy.count("GET", "status") == 3
    proxy.reset_counts()
    assert ByteSource(url, {**opts, "retries": 0}) and proxy.count("GET") == 0  # opening is a HEAD
    with pytest.raises(StorageUnavailableError, match="1 attempt\\)"):
        ByteSource(url, {**opts, "retries": 0}).read(0, 4)
    assert proxy.count("GET", "status") == 1

    code, out, err_text = cli_answer(url, opts, capsys)
    assert code == 2 and url in err_text and "503 SlowDown" in err_text and "3 attempts" in err_text

    proxy.disarm()
    proxy.arm("status", status=503, match=gets_of("deletes.puffin"))  # the table's Puffin file only
    snapshot, _rows, found = table_answer(remote["table"], opts)
    bad = [(code, message) for code, message in found if "503" in message]
    assert bad and all(code == "iceberg.puffin-unreadable" and "3 attempts" in message for code, message in bad), found

    proxy.disarm()
    proxy.arm("status", status=503)  # everything: the table cannot be opened
    with pytest.raises(StorageUnavailableError, match="503 SlowDown") as info:
        open_table(remote["table"], opts)
    assert info.value.attempts == 3 and remote["table"] in str(info.value)


@pytest.mark.s3
def test_404_and_403_are_not_retried(s3_server, proxy, remote):
    opts = options(s3_server, proxy)
    with pytest.raises(SourceError, match="no such file"):
        ByteSource(remote["puffin"] + ".missing", opts)
    assert proxy.count("HEAD") == 1  # (s3fs then lists the prefix once, to tell a folder from nothing)
    proxy.reset_counts()
    with pytest.raises(SourceError, match="access denied"):
        ByteSource(remote["puffin"], {**opts, "secret": "wrong", "skip_instance_cache": True})
    assert proxy.count("HEAD") == 1


# ---------------------------------------------------------------- (c) answers cut short

@pytest.mark.s3
def test_an_answer_cut_short_is_read_again(s3_server, proxy, remote, fault_free, capsys):
    opts = options(s3_server, proxy)
    proxy.arm("cut", times=1, match=lambda method, path: method == "GET")
    assert puffin_answer(remote["puffin"], opts) == fault_free["puffin"]
    assert proxy.count(fault="cut") == 1
    proxy.arm("cut", times=2, match=lambda method, path: method == "GET")
    assert table_answer(remote["table"], opts) == fault_free["table"]
    want = cli_answer(remote["puffin"], opts, capsys)
    proxy.arm("cut", times=1, match=lambda method, path: method == "GET")
    assert cli_answer(remote["puffin"], opts, capsys) == want
    assert proxy.count(fault="cut") == 4


# ---------------------------------------------------------------- (d) a stall

@pytest.mark.s3
def test_a_stall_ends_within_the_timeout(s3_server, proxy, remote, capsys):
    """timeout 2 s, 1 retry: two stalled attempts, then an answer that says so (a stall without a timeout
    would hang here for good: the proxy never answers)."""
    opts = options(s3_server, proxy, timeout=2, retries=1)
    proxy.arm("stall", match=gets_of("java-dv-shapes"))
    _blobs, findings = puffin_answer(remote["puffin"], opts)
    assert len(findings) == 1 and "timed out" in findings[0][1] and "2 attempts" in findings[0][1]
    assert remote["puffin"] in findings[0][1]
    assert proxy.count("GET", "stall") == 2

    code, _out, err = cli_answer(remote["puffin"], opts, capsys)
    assert code == 2 and "no answer within 2 s" in err

    proxy.disarm()
    proxy.arm("stall", match=gets_of(".metadata.json"))
    with pytest.raises(StorageUnavailableError) as info:
        open_table(remote["table"], opts)
    assert info.value.code == "source.timeout" and info.value.attempts == 2


# ---------------------------------------------------------------- (e) the endpoint refuses, then comes back

@pytest.mark.s3
def test_a_refusing_endpoint_then_a_fresh_read_works(s3_server, proxy, remote, fault_free, capsys):
    opts = options(s3_server, proxy, timeout=2, retries=1)
    src = ByteSource(remote["puffin"], opts)
    proxy.refuse()
    with pytest.raises(EndpointUnreachableError, match="connection refused"):
        src.read(0, src.size)
    _blobs, findings = puffin_answer(remote["puffin"], opts)
    assert findings and "refused" in findings[0][1]
    with pytest.raises(EndpointUnreachableError):
        open_table(remote["table"], opts)
    code, _out, err = cli_answer(remote["puffin"], opts, capsys)
    assert code == 2 and "refused" in err
    proxy.listen()
    assert src.read(0, src.size) == PUFFIN.read_bytes()
    assert puffin_answer(remote["puffin"], opts) == fault_free["puffin"]
    assert table_answer(remote["table"], opts) == fault_free["table"]


# ---------------------------------------------------------------- a Delta log the storage does not return

@pytest.mark.s3
def test_a_delta_commit_the_storage_never_returns_is_an_error_not_a_smaller_table(s3_server, proxy):
    """The soak's class: a version rebuilt without one commit's actions counted other live rows than the
    version has. A commit the I/O layer gave up on now ends the open with the storage error."""
    from puffin_explorer.delta import DeltaTable

    url = s3_server.upload(FIXTURES / "engines" / "delta" / "kernel-rs-table-with-dv-small", "faults/delta")
    opts = options(s3_server, proxy, timeout=2, retries=1)
    proxy.arm("status", match=gets_of("00000000000000000001.json"))
    with pytest.raises(StorageUnavailableError) as info:
        DeltaTable(url, storage_options=opts)
    assert info.value.code == "source.unavailable" and "00000000000000000001.json" in str(info.value)
    assert proxy.count("GET", "status") == 2  # one retry, then the answer
    proxy.disarm()
    d = DeltaTable(url, storage_options=opts)
    assert (d.version, d.totals()["live_rows"], d.totals()["deleted_rows"]) == (1, 8, 2)
    assert [f.code for f in d.findings if f.severity.value == "error"] == []


# ---------------------------------------------------------------- Ctrl-C

_READ_SCRIPT = """
import json, sys
sys.path.insert(0, {root!r})
from puffin_explorer import PuffinFile
print("reading", flush=True)
PuffinFile({url!r}, storage_options=json.loads({opts!r}))
print("finished", flush=True)
"""


@pytest.mark.s3
def test_ctrl_c_ends_a_stalled_read_at_once(s3_server, proxy, remote):
    """SIGINT to a process stalled in a read with a 60 s timeout: it ends with KeyboardInterrupt in seconds."""
    opts = options(s3_server, proxy, timeout=60, retries=3)
    proxy.arm("stall", match=gets_of("java-dv-shapes"))
    script = _READ_SCRIPT.format(root=str(ROOT), url=remote["puffin"], opts=json.dumps(opts))
    # a test run started in the background (make test's second lane, some CI runners) ignores SIGINT, and a
    # Python started with SIGINT ignored never raises KeyboardInterrupt: the child gets the terminal's default
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 30
        while proxy.count("GET", "stall") == 0 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert proxy.count("GET", "stall") == 1, proc.stderr.read().decode() if proc.poll() is not None else ""
        time.sleep(0.3)  # inside the stalled request
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=40)  # it ends by the interrupt: the read's own timeout is 60 s
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "KeyboardInterrupt" in err.decode(), err.decode()[-2000:]
    assert b"finished" not in _out
    assert "timed out" not in err.decode() and "no answer" not in err.decode()
    assert proxy.count("GET", "stall") == 1  # no retry after Ctrl-C


def test_ctrl_c_ends_a_retry_wait_at_once():
    """The backoff between attempts is a plain sleep: SIGINT ends it, and no attempt follows."""
    calls = []

    def always_reset(attempt):
        calls.append(attempt)
        raise ConnectionResetError(104, "Connection reset by peer")

    # as a terminal's Python has it, even when this test run was started with SIGINT ignored
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            retry.call(always_reset, "s3://b/k", "read", retry.Policy(timeout=1, retries=50))
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert 1 <= len(calls) < 50  # the interrupt, not the 50 attempts, ended it


# ---------------------------------------------------------------- the settings

def test_settings_come_from_the_options_then_the_environment_then_the_defaults(monkeypatch):
    monkeypatch.delenv(retry.TIMEOUT_ENV, raising=False)
    monkeypatch.delenv(retry.RETRIES_ENV, raising=False)
    assert retry.policy() == retry.Policy(retry.DEFAULT_TIMEOUT_S, retry.DEFAULT_RETRIES) == retry.Policy(30.0, 2)
    monkeypatch.setenv(retry.TIMEOUT_ENV, "7.5")
    monkeypatch.setenv(retry.RETRIES_ENV, "0")
    assert retry.policy({}) == retry.Policy(7.5, 0)
    assert retry.policy({"timeout": 3, "retries": 5}) == retry.Policy(3.0, 5)
    for bad in ({"timeout": 0}, {"timeout": "soon"}, {"retries": -1}, {"retries": 1.5j}):
        with pytest.raises(ValueError):
            retry.policy(bad)
    monkeypatch.setenv(retry.TIMEOUT_ENV, "never")
    with pytest.raises(ValueError, match=retry.TIMEOUT_ENV):
        retry.policy({})


def test_the_clients_get_the_timeout_and_no_retries_of_their_own():
    pol = retry.Policy(4.0, 1)
    s3 = retry.fsspec_options("s3", {"key": "k", "timeout": 4, "retries": 1,
                                     "config_kwargs": {"read_timeout": 9}}, pol)
    assert "timeout" not in s3 and "retries" not in s3
    assert s3["config_kwargs"] == {"read_timeout": 9, "connect_timeout": 4.0, "retries": {"total_max_attempts": 1}}
    assert retry.fsspec_options("file", {"timeout": 4}, pol) == {}


@pytest.mark.parametrize("exc, transient", [
    (ConnectionResetError(104, "reset"), True),
    (TimeoutError("timed out"), True),
    (failures.ShortResponse("short"), True),
    (FileNotFoundError("nope"), False),
    (PermissionError("no"), False),
    (OSError("AWS Error SLOW_DOWN during GetObject operation: Please reduce your request rate."), True),
    (OSError("AWS Error ACCESS_DENIED during GetObject operation: Access Denied"), False),
    (ValueError("bad"), False),
])
def test_what_is_retried(exc, transient):
    assert failures.is_transient(exc) is transient
