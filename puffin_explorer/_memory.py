"""Giving back memory a phase freed.

Arrow allocates through its own pool (mimalloc or jemalloc, unless :func:`choose_arrow_pool` moved it to the C
heap), which keeps the pages of freed buffers for Arrow's next allocations; numpy, DuckDB and Python cannot use
them, so after a phase that built and dropped
large Arrow columns (decoding manifests, the doctor's measures) the process holds them until it exits.
Measured on a table card of 100,000 data files: 120 MB of 570 MB resident were such pages.  The C heap (numpy's
arrays, Python's large objects) keeps freed pages at its top the same way until it is trimmed: 60-80 MB after
each phase of the doctor at a million files.
"""

from __future__ import annotations

import functools

_LIBC: list = []  # glibc's handle once looked up (None where there is none)


@functools.cache  # once per process
def choose_arrow_pool() -> None:
    """Arrow's default memory pool switched from mimalloc to the C library's allocator, once per process, before
    the first index is read; never where ``ARROW_DEFAULT_MEMORY_POOL`` names a pool (``mimalloc`` keeps it).

    mimalloc gives the pages of freed buffers back to the system and faults them in again, each a zeroed
    transparent huge page where the kernel makes them: on a 1,000,000-file table (2 cores, one day) the card took
    21.6 to 27.6 s with mimalloc, 11 to 15 s of it in the kernel, and 15.1 to 17.3 s after this switch (13.1 to
    18.4 s with ``ARROW_DEFAULT_MEMORY_POOL=system`` from the process's start, which a library imported after
    pyarrow cannot set), at the same peak RSS; ``dvs()`` 2.8 to 8.4 s against 2.3 to 3.0 s, ``check()`` 42 s
    against 24 s (1.81 GB against 1.61 GB). Only ``read_dvs()``, whose 3.5 GB of positions are fresh pages either
    way, was faster with mimalloc (31 to 33 s against 38 s). Arrays made before keep the pool they came from."""
    import os

    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return  # chosen by whoever runs the process
    try:
        import pyarrow as pa

        if pa.default_memory_pool().backend_name == "mimalloc":
            pa.set_memory_pool(pa.system_memory_pool())
    except Exception:  # noqa: BLE001 - an older pyarrow without one of these: its default stays
        pass


def release_arrow_pages() -> None:
    """Return the pages Arrow's default pool holds for buffers already freed to the operating system."""
    try:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    except Exception:  # noqa: BLE001 - an older pyarrow without it, or a pool that cannot: nothing to give
        pass


def release_freed_memory() -> None:
    """:func:`release_arrow_pages`, and the C heap's freed pages returned too (glibc's ``malloc_trim``; a few
    milliseconds; nothing where the C library is not glibc)."""
    release_arrow_pages()
    if not _LIBC:
        try:
            import ctypes

            libc = ctypes.CDLL(None)  # the symbols the process has loaded: glibc's malloc_trim on Linux
            _LIBC.append(libc if hasattr(libc, "malloc_trim") else None)
        except (OSError, AttributeError, TypeError):
            _LIBC.append(None)
    if _LIBC[0] is not None:
        _LIBC[0].malloc_trim(0)
