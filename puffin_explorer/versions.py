"""What this installation runs: every dependency's version and which fast paths are active.

``show_versions()`` follows pandas' convention: paste its output into a bug report.  The same text is
``puffin-explorer --version --verbose`` (``--json`` for a JSON object).
"""

from __future__ import annotations

import json
import platform
import sys
from typing import Any, Optional, TextIO

#: The distributions reported, in order: the required ones, then the optional ones (``None`` when absent).
DEPENDENCIES = ("numpy", "pandas", "pyarrow", "duckdb", "duckdb-extension-avro", "fastavro", "fsspec",
                "zstandard", "lz4", "pyroaring", "datasketches", "tqdm",
                "s3fs", "ipywidgets", "matplotlib", "ipython", "pyspark", "snowpark-connect-deps-iceberg",
                "deltalake", "pyiceberg")


def _version(dist: str) -> Optional[str]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _arrow_pool() -> str:
    """The pool Arrow allocates from now, and the one a table read moves it to (``_memory.choose_arrow_pool``)."""
    import os

    try:
        import pyarrow as pa
    except ImportError:
        return "pyarrow is not installed"
    now = pa.default_memory_pool().backend_name
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return f"{now} (ARROW_DEFAULT_MEMORY_POOL={os.environ['ARROW_DEFAULT_MEMORY_POOL']}, kept)"
    if now == "mimalloc":
        return "mimalloc now; the first table index moves it to system (the C library's allocator)"
    return now


def _s3_client() -> str:
    """Which client S3 reads go through: Arrow's C++ client where the options allow, else s3fs."""
    from .io import arrow_s3

    try:
        from pyarrow import fs as pafs

        arrow = hasattr(pafs, "S3FileSystem")
    except ImportError:
        arrow = False
    s3fs = _version("s3fs") is not None
    if arrow and arrow_s3.enabled():
        first = "Arrow's C++ S3 client for explicit keys or anon=True"
        return f"{first}, else s3fs" if s3fs else f"{first}; s3fs is not installed (pip install 'puffin-explorer[s3]')"
    if s3fs:
        return "s3fs (Arrow's S3 client is off: PUFFIN_EXPLORER_ARROW_S3=0)" if arrow else "s3fs"
    return "none: pip install 'puffin-explorer[s3]'"


def versions() -> dict[str, Any]:
    """The facts :func:`show_versions` prints, as a dict: ``puffin_explorer``, ``python``, ``platform``,
    ``dependencies`` (distribution → version or None) and ``fast_paths`` (name → what runs)."""
    from ._version import __version__
    from .iceberg.duckdb_manifests import slow_reason
    from .iceberg.manifest_decoder import decoder

    found = decoder()
    slow = slow_reason()
    return {
        "puffin_explorer": _version("puffin-explorer") or __version__,
        "python": sys.version.split()[0],
        "platform": f"{platform.system()} {platform.machine()} ({platform.platform()})",
        "dependencies": {name: _version(name) for name in DEPENDENCIES},
        "fast_paths": {
            "manifest decoder": str(found) if slow is None else f"fastavro, the slow path: {slow}",
            "Arrow memory pool": _arrow_pool(),
            "S3 client": _s3_client(),
        },
    }


def show_versions(as_json: bool = False, file: Optional[TextIO] = None) -> None:
    """Print the versions of Python, this package and every dependency, and which fast paths are active
    (the manifest decoder, Arrow's memory pool, the S3 client); ``as_json`` prints one JSON object."""
    facts = versions()
    out = file or sys.stdout
    if as_json:
        print(json.dumps(facts, indent=2), file=out)
        return
    width = max(len(name) for name in facts["dependencies"])
    lines = ["INSTALLED VERSIONS", "------------------"]
    lines += [f"{name:<{width}} : {facts[name]}" for name in ("puffin_explorer", "python", "platform")] + [""]
    lines += [f"{name:<{width}} : {ver or 'not installed'}" for name, ver in facts["dependencies"].items()]
    lines += ["", "FAST PATHS", "----------"]
    lines += [f"{name:<{width}} : {what}" for name, what in facts["fast_paths"].items()]
    print("\n".join(lines), file=out)
