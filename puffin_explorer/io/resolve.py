"""A location resolved once per process: its filesystem, the path inside it and the retry policy.

Resolving a location through fsspec (``url_to_fs``: the protocol, the options chained in the URL, the
filesystem's instance-cache token, the path stripped of its protocol) costs tens of microseconds, and the
retry policy reads the environment; paid on every call, that was most of a small DV's read
(``read_dv(path, offset=, length=)``, 2,000 times over one Puffin file).  So, in this process:

* a filesystem is made once per ``(protocol, storage options, policy)`` and kept, at most
  :data:`MAX_FILESYSTEMS` of them, the least recently used dropped first;
* a location's ``(filesystem, path)`` is found once per ``(location, storage options, policy)`` (a
  relative local path also per working folder), at most :data:`MAX_LOCATIONS`, least recently used dropped;
* the policy of options without ``timeout`` / ``retries`` comes from ``PUFFIN_EXPLORER_TIMEOUT`` /
  ``PUFFIN_EXPLORER_RETRIES``, which are read on every resolution (a change applies to the next file
  opened, as :mod:`.retry` promises) but parsed once per value (:func:`.retry.policy`).

The policy is part of both keys: a changed timeout gives a new client with that timeout.  Options that
cannot be compared as plain values (an object such as a credentials provider) and options asking fsspec for
a fresh client (``skip_instance_cache=True``) are resolved every time, as before.  A forked child (a Spark
Python worker) starts with empty caches: its parent's clients hold the parent's event loop and sockets.
:func:`counters` says how many resolutions reached fsspec and how many were answered from here.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Optional

from . import retry

#: Filesystems kept (one per protocol and set of options: a handful in practice).
MAX_FILESYSTEMS = 32
#: Locations kept (a Puffin file, a manifest, a data file's Parquet footer: each a few hundred bytes here).
MAX_LOCATIONS = 4096
#: Protocols whose bytes are on this machine (no request leaves it).
LOCAL_PROTOCOLS = {"file", "local", "memory"}


@dataclass(frozen=True)
class Resolved:
    """Where one location's bytes come from: the fsspec filesystem, the path inside it, the policy of every
    request, whether the storage is remote, and for a plain local file the path the OS reads directly."""

    fs: Any
    path: str
    policy: retry.Policy
    remote: bool
    local_path: Optional[str] = None


class _NotAValue(Exception):
    """Options holding something other than plain values: not cached."""


def _frozen(value: Any) -> Any:
    """``value`` as a hashable key that tells apart any two option values fsspec would tell apart."""
    if value is None or isinstance(value, (str, bytes, bool, int, float)):
        return (type(value).__name__, value)
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise _NotAValue
        return ("dict", tuple(sorted((k, _frozen(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_frozen(v) for v in value))
    params = getattr(type(value), "__dataclass_params__", None)
    if params is not None and params.frozen:  # an immutable value of the package's own (a ReadScope): itself
        return (type(value).__qualname__, value)
    raise _NotAValue


def options_key(storage_options: Optional[dict[str, Any]]) -> Optional[tuple]:
    """A hashable key for ``storage_options``, or None when they are not to be cached."""
    if not storage_options:
        return ()
    if storage_options.get("skip_instance_cache"):
        return None
    try:
        return _frozen(storage_options)
    except (_NotAValue, TypeError):  # TypeError: keys of mixed types that do not sort
        return None


class _Bounded:
    """A small mapping that forgets its least recently used item past ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.items: OrderedDict = OrderedDict()

    def get(self, key):
        value = self.items.get(key)
        if value is not None:
            self.items.move_to_end(key)
        return value

    def put(self, key, value) -> None:
        self.items[key] = value
        self.items.move_to_end(key)
        while len(self.items) > self.limit:
            self.items.popitem(last=False)


_lock = threading.Lock()
_filesystems = _Bounded(MAX_FILESYSTEMS)
_locations = _Bounded(MAX_LOCATIONS)
_counts = {"resolved": 0, "cached": 0}


def clear() -> None:
    """Forget every filesystem and location kept (the next open resolves through fsspec again)."""
    with _lock:
        _filesystems.items.clear()
        _locations.items.clear()


def _after_fork() -> None:
    """In a forked child: a new lock (the parent's may have been held by a thread that is not here) and
    empty caches."""
    global _lock
    _lock = threading.Lock()
    _filesystems.items.clear()
    _locations.items.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def counters() -> dict[str, int]:
    """``{"resolved": n, "cached": m}``: locations resolved through fsspec, and answered from the cache."""
    with _lock:
        return dict(_counts)


def _is_plain_local(fs) -> bool:
    from fsspec.implementations.local import LocalFileSystem

    return type(fs) is LocalFileSystem


def _protocol_of(fs) -> str:
    return fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]


def _through_fsspec(location: str, storage_options: Optional[dict[str, Any]], pol: retry.Policy,
                    opts_key: Optional[tuple]) -> Resolved:
    """Resolve through fsspec, the filesystem reused when one was made for the same protocol, options, policy
    and options read from the URL itself (an Azure account name, say); a chained URL (``a::b``) is not."""
    import fsspec

    from .errors import check_endpoint

    check_endpoint(location, storage_options)
    fs = fs_key = None
    if opts_key is not None and "::" not in location:
        protocol = fsspec.utils.get_protocol(location)
        cls = fsspec.get_filesystem_class(protocol)
        try:
            fs_key = (protocol, opts_key, pol, _frozen(cls._get_kwargs_from_urls(location)))
        except (_NotAValue, TypeError):
            fs_key = None
        if fs_key is not None:
            with _lock:
                fs = _filesystems.get(fs_key)
        if fs is not None:
            path = cls._strip_protocol(location)
    if fs is None:
        protocol = fsspec.utils.get_protocol(location)
        fs, path = fsspec.core.url_to_fs(location, **retry.fsspec_options(protocol, storage_options, pol))
        retry.prepare(fs)
        if fs_key is not None:
            with _lock:
                _filesystems.put(fs_key, fs)
    remote = _protocol_of(fs) not in LOCAL_PROTOCOLS
    local_path = path if _is_plain_local(fs) else None
    return Resolved(fs, path, pol, remote, local_path)


def resolve(location: str, storage_options: Optional[dict[str, Any]] = None,
            check: Optional[Callable[[str], None]] = None) -> Resolved:
    """The filesystem, path and policy of ``location`` (a local path or fsspec URL) with these options;
    found once, then kept (see the module's docstring).  ``check(location)`` runs before a location is resolved,
    not when it is answered from what is kept (it passed then).  Storage errors are raised as fsspec raises
    them: :func:`.source.filesystem` turns them into :class:`~puffin_explorer.errors.SourceError`."""
    pol = retry.policy(storage_options)
    opts_key = options_key(storage_options)
    if opts_key is None:
        if check is not None:
            check(location)
        with _lock:
            _counts["resolved"] += 1
        return _through_fsspec(location, storage_options, pol, None)
    if "://" in location or os.path.isabs(location):
        key = (location, opts_key, pol.timeout, pol.retries)
    else:  # fsspec makes a relative path absolute from the working folder
        key = (location, opts_key, pol.timeout, pol.retries, os.getcwd())
    with _lock:
        found = _locations.get(key)
        if found is not None:
            _counts["cached"] += 1
            return found
    if check is not None:
        check(location)
    with _lock:
        _counts["resolved"] += 1
    found = _through_fsspec(location, storage_options, pol, opts_key)
    with _lock:
        _locations.put(key, found)
    return found
