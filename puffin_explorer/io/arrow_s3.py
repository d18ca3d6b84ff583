"""S3 reads through Arrow's C++ client when the options allow it.

Reading many small ranges (page headers, DVs, manifests) is bound by the client's
work per request, not by bytes: measured on loopback, s3fs spends about 3.4 ms of
CPU on each ranged GET and Arrow's client about 0.7 ms, and Arrow releases the GIL
while it waits, so concurrent requests really run at once.

Only the happy path goes through Arrow: options with explicit credentials (``key`` /
``secret``, optionally ``token``) or ``anon=True``, and an endpoint and region given
or left to the defaults.  Anything else (profiles, extra client configuration,
credentials from the environment) stays on fsspec.  A request Arrow fails is made
again through fsspec, so every error a user sees is the one fsspec reports and
:func:`~puffin_explorer.io.errors.storage_error` explains.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Optional
from urllib.parse import urlparse

#: Options that only tune fsspec's own caches: harmless to Arrow.
_FSSPEC_ONLY = {"skip_instance_cache", "use_listings_cache", "listings_expiry_time", "max_paths",
                "default_block_size", "default_fill_cache", "default_cache_type", "max_concurrency"}
_CLIENT_KEYS = {"endpoint_url", "region_name"}

_lock = threading.Lock()
_filesystems: dict[tuple, Any] = {}
_in_flight = 0  # Arrow requests running now (on any thread)
_exit_hook = False
#: At exit, how long to let Arrow requests still running (abandoned by Ctrl-C) finish.
EXIT_GRACE_S = 1.0


def request(fn):
    """``fn()``, one Arrow request: counted while it runs, and on the main thread waited for in a way
    Ctrl-C ends at once (:func:`.retry.interruptible`)."""
    from .retry import interruptible

    def counted():
        global _in_flight
        with _lock:
            _in_flight += 1
        try:
            return fn()
        finally:
            with _lock:
                _in_flight -= 1

    return interruptible(counted)


def _at_exit() -> None:
    """Registered after pyarrow's own exit hook, so it runs first: pyarrow's shutdown of its S3 client
    waits for every request still running, and a request abandoned by Ctrl-C on a stalled server runs
    until its timeout.  When such requests outlive a short grace, the process ends at once (status 130,
    as after an uncaught Ctrl-C), its output flushed."""
    import sys
    import time

    deadline = time.monotonic() + EXIT_GRACE_S
    while _in_flight and time.monotonic() < deadline:
        time.sleep(0.02)
    if _in_flight:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed or broken stream: nothing more to write
                pass
        os._exit(130)


def _settings(storage_options: dict[str, Any]) -> Optional[tuple]:
    """The Arrow settings for these fsspec S3 options, or None when they need fsspec."""
    from .retry import OPTION_KEYS

    opts = {k: v for k, v in storage_options.items() if k not in OPTION_KEYS}
    client = dict(opts.pop("client_kwargs", None) or {})
    if set(client) - _CLIENT_KEYS:
        return None
    anon = bool(opts.pop("anon", False))
    key, secret, token = opts.pop("key", None), opts.pop("secret", None), opts.pop("token", None)
    endpoint = opts.pop("endpoint_url", None) or client.get("endpoint_url")
    region = client.get("region_name")
    if set(opts) - _FSSPEC_ONLY:
        return None
    if not anon and not (key and secret):
        return None  # credentials from the environment or instance metadata: leave the lookup to fsspec
    scheme = netloc = None
    if endpoint:
        parsed = urlparse(str(endpoint))
        if parsed.scheme not in ("http", "https") or not parsed.netloc or parsed.path not in ("", "/"):
            return None
        scheme, netloc = parsed.scheme, parsed.netloc
    return (anon, key, secret, token, scheme, netloc, region)


def enabled() -> bool:
    """False while ``PUFFIN_EXPLORER_ARROW_S3=0`` (checked on every request, so it can be turned off at any time)."""
    return os.environ.get("PUFFIN_EXPLORER_ARROW_S3", "1") != "0"


def arrow_s3(storage_options: Optional[dict[str, Any]], policy=None):
    """A shared ``pyarrow.fs.S3FileSystem`` for these options, or None (then use fsspec).

    Its connect and request timeouts are the ``policy``'s timeout (:func:`.retry.policy` of the
    options when not given) and it makes one request per call: :func:`.retry.call` retries.
    On Linux the request timeout is curl's "slower than 1 byte/s for that long" (measured against
    a stalled server: the read fails after the timeout, not at Arrow's 3 s default)."""
    from .retry import policy as policy_of

    settings = _settings(storage_options or {})
    if settings is None:
        return None
    timeout = (policy or policy_of(storage_options)).timeout
    settings = settings + (timeout,)
    with _lock:
        fs = _filesystems.get(settings)
        if fs is None:
            try:
                from pyarrow import fs as pafs
            except ImportError:
                return None
            global _exit_hook
            if not _exit_hook:
                import atexit

                atexit.register(_at_exit)  # after pyarrow.fs registered its own: runs before it
                _exit_hook = True
            anon, key, secret, token, scheme, netloc, region, timeout = settings
            kwargs: dict[str, Any] = {"anonymous": True} if anon else {
                "access_key": key, "secret_key": secret, "session_token": token}
            if netloc:
                kwargs.update(endpoint_override=netloc, scheme=scheme)
            kwargs["region"] = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") \
                or "us-east-1"
            try:
                fs = pafs.S3FileSystem(connect_timeout=timeout, request_timeout=timeout,
                                       retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=1), **kwargs)
            except Exception:  # noqa: BLE001 - an Arrow build without S3, or options it refuses
                return None
            _filesystems[settings] = fs
        return fs


class ArrowRangeReader:
    """Ranged GETs of one S3 object through Arrow (Arrow asks for the object's size once, on the first read)."""

    def __init__(self, fs, path: str, size: Optional[int]) -> None:
        self.fs = fs
        self.path = path
        self.size = size
        self._file = None
        self._open_lock = threading.Lock()

    def _handle(self):
        if self._file is None:
            with self._open_lock:
                if self._file is None:
                    self._file = self.fs.open_input_file(self.path)  # one HEAD, then ranged GETs
        return self._file

    def read(self, offset: int, end: int) -> bytes:
        """Bytes ``[offset, end)``; raises OSError on any failure (the caller falls back)."""
        return request(lambda: self._handle().read_at(end - offset, offset))

    def read_all(self) -> bytes:
        def whole():
            with self.fs.open_input_stream(self.path) as stream:
                return stream.read()
        return request(whole)
