"""Storage errors (fsspec, s3fs, botocore, aiohttp, OS) turned into this project's errors.

:func:`storage_error` names the location and what to do, in one line, as a
:class:`~puffin_explorer.errors.SourceError` subclass.  :func:`check_endpoint`
fails fast when nothing listens at an explicit S3 endpoint, instead of the
minutes of retries a client library makes.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any, Optional
from urllib.parse import urlsplit

from .._text import plural
from ..errors import (AccessDeniedError, EndpointUnreachableError, NoCredentialsError, NotAFileError,
                      NotFoundError, SourceError, StorageUnavailableError)
from .failures import TEXT_SEARCHED, cause, exception_chain, is_transient

#: Seconds to wait for a TCP connection to an explicit endpoint before calling it unreachable.
CONNECT_TIMEOUT_S = 3.0

_CRED_HINT = ("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), or pass "
              "storage_options={'key': ..., 'secret': ...}")


def _error_code(exc: BaseException) -> str:
    """The S3 error code of a botocore ClientError somewhere in the chain ('' if none)."""
    for e in exception_chain(exc):
        resp = getattr(e, "response", None)
        if isinstance(resp, dict):
            code = (resp.get("Error") or {}).get("Code")
            if code:
                return str(code)
    return ""


_RETRY_HINT = ("the storage is busy or failing: try again later, or allow more time or attempts with "
               "storage_options={'timeout': seconds, 'retries': n} or PUFFIN_EXPLORER_TIMEOUT / "
               "PUFFIN_EXPLORER_RETRIES")


def shown(location: str, limit: int = 1_000) -> str:
    """``location`` for a message: whole up to ``limit`` characters, else its start and end around an ellipsis."""
    if not isinstance(location, str) or len(location) <= limit:
        return location
    return f"{location[:limit * 2 // 3]}…({len(location):,} characters)…{location[-limit // 3:]}"


def storage_error(exc: BaseException, location: str, action: str = "read", attempts: int = 1,
                  policy=None) -> SourceError:
    """The :class:`SourceError` subclass that says what went wrong reading ``location`` and what to do.

    A failure that may pass (see :func:`.failures.is_transient`), seen on the last of ``attempts``,
    is a :class:`StorageUnavailableError` naming the operation, the attempts and the cause (or an
    :class:`EndpointUnreachableError` when the connection was refused)."""
    if isinstance(exc, SourceError):
        return exc
    full, location = location, shown(location)  # messages name a location of any length in bounded text

    if is_transient(exc):
        why = cause(exc, policy)
        tries = plural(attempts, "attempt")
        if why == "connection refused":
            return EndpointUnreachableError(f"cannot connect to the storage endpoint for {location}: connection "
                                            f"refused ({tries})",
                                            location=full,
                                            hint="check the endpoint URL (client_kwargs.endpoint_url or "
                                                 "s3.endpoint) and that the server is running",
                                            code="source.unreachable")
        return StorageUnavailableError(f"cannot {action} {location}: {why} (gave up after {tries})",
                                       location=full, hint=_RETRY_HINT,
                                       code="source.timeout" if "timed out" in why else "source.unavailable",
                                       operation=action, attempts=attempts, cause=why)
    names = {type(e).__name__ for e in exception_chain(exc)}
    code = _error_code(exc)
    text = " ".join(str(e)[:TEXT_SEARCHED] for e in exception_chain(exc))
    scheme = location.split("://", 1)[0] if "://" in location else "file"
    if "NoCredentialsError" in names or "PartialCredentialsError" in names:
        return NoCredentialsError(f"no credentials to {action} {location}", location=full,
                                  hint=_CRED_HINT, code="source.no-credentials")
    if code in ("NoSuchBucket",) or "specified bucket does not exist" in text:
        bucket = location.split("://", 1)[-1].split("/", 1)[0]
        return NotFoundError(f"no such bucket {bucket!r} ({location})", location=full,
                             hint="check the bucket name and the endpoint", code="source.not-found")
    if isinstance(exc, (IsADirectoryError, NotADirectoryError)) or "IsADirectoryError" in names:
        return NotAFileError(f"{location} is a folder, not a file", location=full,
                             hint="give the path of a file inside it", code="source.not-a-file")
    if isinstance(exc, FileNotFoundError) or code in ("NoSuchKey", "404", "NotFound"):
        return NotFoundError(f"no such file: {location}", location=full,
                             hint="check the path (a moved table needs relocate=)", code="source.not-found")
    if isinstance(exc, PermissionError) or code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch",
                                                     "403", "Forbidden"):
        if scheme == "file":
            return AccessDeniedError(f"permission denied: {location}", location=full,
                                     hint="check the file's permissions", code="source.access-denied")
        return AccessDeniedError(f"access denied to {location} ({code or 'forbidden'})", location=full,
                                 hint="check the key and secret in storage_options or the environment, "
                                      "and the permissions on the bucket", code="source.access-denied")
    if names & {"EndpointConnectionError", "ConnectTimeoutError", "ClientConnectorError",
                "ConnectionRefusedError", "ServerDisconnectedError", "ConnectError"}:
        return EndpointUnreachableError(f"cannot connect to the storage endpoint for {location}",
                                        location=full,
                                        hint="check the endpoint URL (client_kwargs.endpoint_url or "
                                             "s3.endpoint) and that the server is running",
                                        code="source.unreachable")
    first = str(exc)[:TEXT_SEARCHED].strip()
    detail = first.splitlines()[0] if first else type(exc).__name__
    return SourceError(f"cannot {action} {location}: {detail[:300]}", location=full)


# ---------------------------------------------------------------- fail fast on a dead endpoint

_checked: dict[tuple[str, int], Optional[str]] = {}
_checked_lock = threading.Lock()


def endpoint_of(storage_options: Optional[dict[str, Any]]) -> Optional[str]:
    """The explicit endpoint URL in fsspec/s3fs options, if any."""
    if not storage_options:
        return None
    client = storage_options.get("client_kwargs") or {}
    url = client.get("endpoint_url") or storage_options.get("endpoint_url")
    return str(url) if url else None


def check_endpoint(location: str, storage_options: Optional[dict[str, Any]]) -> None:
    """Raise :class:`EndpointUnreachableError` at once when nothing accepts a TCP connection at
    the explicit endpoint of ``storage_options`` (checked once per endpoint and process).

    Without this an S3 client retries a refused connection for many seconds before
    it gives up.  Skipped when an HTTP proxy is configured (the endpoint may be
    reachable only through it).
    """
    url = endpoint_of(storage_options)
    if not url or any(os.environ.get(v) for v in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")):
        return
    parts = urlsplit(url if "://" in url else "http://" + url)
    host = parts.hostname
    if not host:
        return
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return
    key = (host, port)
    with _checked_lock:
        known = key in _checked
        problem = _checked.get(key)
    if not known:
        problem = None
        try:
            with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
                pass
        except OSError as exc:
            problem = f"{type(exc).__name__}: {exc.strerror or exc}"
        with _checked_lock:
            if problem is None:
                _checked[key] = None  # remember only successes: a server may come up later
    if problem is not None:
        raise EndpointUnreachableError(f"cannot connect to {url} for {location} ({problem})", location=location,
                                       hint="check the endpoint URL (client_kwargs.endpoint_url or s3.endpoint) "
                                            "and that the server is running", code="source.unreachable")
