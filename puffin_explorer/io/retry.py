"""Bounded time and bounded retries for every request of the I/O layer.

A request that receives nothing for ``timeout`` seconds fails (connect and every read of
the answer, headers or body: the clients' own socket timeouts, set here for S3 and HTTP);
a failure that may pass (throttling, 500/502/503/504, a connection reset or refused, a
timeout, an answer cut short) is made again up to ``retries`` times after an exponential
backoff with jitter; any other failure (404, 403, a malformed request) is final at once.
After the last attempt the caller gets one :class:`~puffin_explorer.errors.SourceError`
naming the location, the operation, the attempts and the cause.

The settings come from, first to last: the ``timeout`` / ``retries`` keys of
``storage_options`` (taken out before fsspec sees the options), the environment variables
``PUFFIN_EXPLORER_TIMEOUT`` / ``PUFFIN_EXPLORER_RETRIES`` (read each time a policy is asked for, so a
change applies to the next file opened), and the defaults below.  The
clients' own retries are turned off for S3 (botocore, s3fs and Arrow make one request per
attempt), so ``retries + 1`` is the number of requests a failing read makes.
"""

from __future__ import annotations

import os
import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypeVar

from .failures import is_transient

T = TypeVar("T")

#: Seconds a request may wait for a connection or for the next bytes of its answer.
DEFAULT_TIMEOUT_S = 30.0
#: Times a transient failure is retried (so ``DEFAULT_RETRIES + 1`` attempts in all).
DEFAULT_RETRIES = 2
#: The first wait before a retry; each next one doubles, up to :data:`MAX_BACKOFF_S`; each is
#: drawn between half and all of that (jitter, so many clients do not retry in step).
BACKOFF_S = 0.2
MAX_BACKOFF_S = 5.0
TIMEOUT_ENV = "PUFFIN_EXPLORER_TIMEOUT"
RETRIES_ENV = "PUFFIN_EXPLORER_RETRIES"
#: The keys of ``storage_options`` this layer reads (and does not pass on to fsspec); ``read_scope`` is
#: :data:`.scope.SCOPE_KEY`, the table's read scope.
OPTION_KEYS = ("timeout", "retries", "read_scope")


@dataclass(frozen=True)
class Policy:
    """How long one request may stall (``timeout``, seconds) and how often a transient failure is retried."""

    timeout: float = DEFAULT_TIMEOUT_S
    retries: int = DEFAULT_RETRIES

    @property
    def attempts(self) -> int:
        return self.retries + 1


def _number(value: Any, name: str, kind: type):
    try:
        out = kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a {'number of seconds' if kind is float else 'whole number'}, "
                         f"not {value!r}") from None
    if out < 0 or (kind is float and (out != out or out == 0)):
        raise ValueError(f"{name} must be {'more than 0' if kind is float else '0 or more'}, not {value!r}")
    return out


def _env(name: str, kind: type, default):
    """The number environment variable ``name`` holds (``default`` when unset or empty): read on every call, so
    a change applies to the next file opened."""
    raw = os.environ.get(name) or None
    return default if raw is None else _number(raw, name, kind)


#: Policies by what they are computed from (the options' ``timeout`` / ``retries`` and the environment's values as
#: read): the environment is read every time, each set of values parsed once (a DV read asks on every call).
_POLICIES: dict = {}


def policy(storage_options: Optional[dict[str, Any]] = None) -> Policy:
    """The policy for these options: their ``timeout`` / ``retries`` keys, else the environment, else the defaults."""
    opts = storage_options or {}
    key = (opts.get("timeout"), opts.get("retries"), os.environ.get(TIMEOUT_ENV), os.environ.get(RETRIES_ENV))
    try:
        found = _POLICIES.get(key)
    except TypeError:  # an option value that is not hashable: parsed (and refused) below, not kept
        found, key = None, None
    if found is None:
        timeout, retries = key[:2] if key else (opts.get("timeout"), opts.get("retries"))
        timeout = (_env(TIMEOUT_ENV, float, DEFAULT_TIMEOUT_S) if timeout is None
                   else _number(timeout, "storage option 'timeout'", float))
        retries = (_env(RETRIES_ENV, int, DEFAULT_RETRIES) if retries is None
                   else _number(retries, "storage option 'retries'", int))
        found = Policy(float(timeout), int(retries))
        if key is not None:
            if len(_POLICIES) > 64:
                _POLICIES.clear()
            _POLICIES[key] = found
    return found


def fsspec_options(protocol: str, storage_options: Optional[dict[str, Any]], pol: Policy) -> dict[str, Any]:
    """``storage_options`` for fsspec: this layer's keys taken out, the timeout given to the client and the
    client's own retries turned off (for S3 and HTTP; an option the user set stays as they set it)."""
    opts = {k: v for k, v in (storage_options or {}).items() if k not in OPTION_KEYS}
    if protocol in ("s3", "s3a"):
        config = dict(opts.get("config_kwargs") or {})
        config.setdefault("connect_timeout", pol.timeout)
        config.setdefault("read_timeout", pol.timeout)
        config.setdefault("retries", {"total_max_attempts": 1})
        opts["config_kwargs"] = config
    elif protocol in ("http", "https"):
        client = dict(opts.get("client_kwargs") or {})
        if "timeout" not in client:
            import aiohttp

            client["timeout"] = aiohttp.ClientTimeout(total=None, sock_connect=pol.timeout, sock_read=pol.timeout)
        opts["client_kwargs"] = client
    return opts


def prepare(fs) -> None:
    """Turn off a filesystem's own retry loop where it has one this layer knows (s3fs)."""
    if type(fs).__module__.startswith("s3fs"):
        fs.retries = 1


# ---------------------------------------------------------------- the loop

def backoff(attempt: int) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based): exponential, with jitter."""
    ceiling = min(MAX_BACKOFF_S, BACKOFF_S * (2 ** (attempt - 1)))
    return random.uniform(ceiling / 2, ceiling)


def call(fn: Callable[[int], T], location: str, operation: str, pol: Policy, first_attempt: int = 1) -> T:
    """``fn(attempt)`` until it succeeds, a non-transient failure, or ``pol.attempts`` attempts.

    Between attempts it sleeps (:func:`backoff`); the sleep, like a request on the main
    thread, ends at once on Ctrl-C.  The last failure is raised as a
    :class:`~puffin_explorer.errors.SourceError` (see :func:`.errors.storage_error`).
    """
    from .errors import storage_error

    attempt = first_attempt
    while True:
        try:
            return fn(attempt)
        except Exception as exc:  # noqa: BLE001 - every storage library raises its own types
            if attempt >= pol.attempts or not is_transient(exc):
                raise storage_error(exc, location, operation, attempts=attempt, policy=pol) from exc
        time.sleep(backoff(attempt))
        attempt += 1


def interruptible(fn: Callable[[], T]) -> T:
    """``fn()``, on a helper thread when called on the main thread, so that Ctrl-C ends the wait at once
    even while ``fn`` is blocked in C code that holds no Python frame (Arrow's S3 client).  The helper
    is a daemon thread: an abandoned request ends on its own timeout without holding up the exit."""
    if threading.current_thread() is not threading.main_thread():
        return fn()
    box: list = []
    done = threading.Event()

    def run() -> None:
        try:
            box.append((True, fn()))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=run, name="puffin-explorer-request", daemon=True).start()
    done.wait()
    ok, value = box[0]
    if ok:
        return value
    raise value
