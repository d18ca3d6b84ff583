"""Which manifest decoder runs in this process, and why: DuckDB's ``read_avro`` or the fastavro walker.

Chosen by measurement.  The index (:mod:`.index`) decodes manifests with DuckDB's Avro extension, which hands
back Arrow columns; without it, with fastavro, which hands back a dict per entry that the index walks in Python.
On a table of 1,000,000 data files with one DV each, one fresh process per operation:

=====================================================  ==========================  ==========================
install                                                card with its Health         ``health(list_files=False)``
=====================================================  ==========================  ==========================
``pip install ".[all]"`` with duckdb 2.0.1, no extension  222.1 s, 1,460 MB           211.5 s, 1,394 MB
the same with the extension (this module's default)       see :data:`DECODER_FIGURES`  see :data:`DECODER_FIGURES`
=====================================================  ==========================  ==========================

The options weighed (the measured ones in :data:`DECODER_FIGURES`):

- **DuckDB with its Avro extension as a package** (``duckdb-extension-avro``, the default dependency).  Each
  release of that package requires exactly the DuckDB release it was built for (``duckdb==X.Y.Z``), so pip
  resolves a pair that loads together; wheels exist for Linux (x86_64, aarch64), macOS arm64 and Windows, and
  are not tied to a Python version.  macOS on Intel has no wheel: the dependency is left out there (an
  environment marker) and the extension comes from DuckDB's own repository (below) or the slow path says so.
- **DuckDB's own extension repository**: ``INSTALL avro`` once (a download by DuckDB itself into
  ``~/.duckdb``); this module then loads it from there.  It never installs one itself: a library that fetches
  and loads a binary at run time, unasked, is not one a shared workspace can review.
- **polars' ``read_avro``** (polars 2.1) reads Iceberg manifests whole and right (nested ``data_file``,
  key/value arrays, ``fixed``/``bytes`` bounds), in about DuckDB's CPU time: 1,000,000 entries with full column
  metrics (ten copies of a 100,000-entry manifest), the index's projection, a fresh process each, a loaded
  2-core machine: DuckDB 10.8 / 11.7 s CPU and 276 MB peak, polars 9.6 / 11.0 s and 934 MB (it cannot project
  inside ``data_file``, so every metric is decoded and held).  It adds 180 MB installed, a second query engine
  beside the DuckDB the measures need, for no speed: not chosen.
- **A decoder of this project's own** in numpy cannot vectorise a format whose every field is a
  variable-length integer, and a compiled one would be a build this package does not have: not chosen.

Whatever runs, :func:`decoder` says which, why and what would make it fast, so the index can turn a slow decode
of a big table into one info finding (``iceberg.manifests-decoded-slowly``) and ``show_versions()`` can print it.
"""

from __future__ import annotations

import functools
import glob
import os
from dataclasses import dataclass
from typing import Any, Optional

#: Manifest bytes decoded by fastavro from which the index says so in a finding (about 25,000 entries: there
#: the slow path costs a second or more; below it the two decoders differ by less than DuckDB's start-up).
SLOW_FINDING_FROM_BYTES = 8 << 20

#: CPU seconds and peak RSS (MiB) of decoding the 200,000 entries of the 100,000-file benchmark table's
#: manifests, one fresh process each (decode only; ``benchmarks/bench_entry_index.py decoders``).
DECODER_FIGURES = {
    "duckdb read_avro, projected columns, to Arrow": (1.07, 211),
    "fastavro reader schema without metrics (the index's walker)": (4.11, 51),
    "fastavro full decode (the index's walker)": (4.50, 87),
    "fastavro.reader full decode": (3.71, 69),
}


@dataclass(frozen=True)
class Decoder:
    """The manifest decoder this process uses: ``name`` (``duckdb-avro`` or ``fastavro``), ``source`` (where the
    extension was loaded from), ``reason`` (why the fast one is not used; empty when it is) and ``remedy``."""

    name: str
    source: str = ""
    reason: str = ""
    remedy: str = ""

    @property
    def fast(self) -> bool:
        return self.name == "duckdb-avro"

    def __str__(self) -> str:
        if self.fast:
            return f"DuckDB read_avro ({self.source})"
        return f"fastavro, the slow path: {self.reason}"


def _remedy(duckdb_version: Optional[str]) -> str:
    if duckdb_version is None:
        return 'pip install "duckdb-extension-avro" (it brings the DuckDB it was built for)'
    return (f'pip install "duckdb-extension-avro=={duckdb_version}" (where that release exists), or pip install '
            '"duckdb-extension-avro" and let it choose its DuckDB, or once: '
            "python -c \"import duckdb; duckdb.sql('INSTALL avro')\"")


def _packaged_extension(duckdb_version: str) -> tuple[Optional[str], str]:
    """The path of the ``duckdb-extension-avro`` package's extension for this DuckDB, or None and why not."""
    try:
        import duckdb_extension_avro
    except ImportError:
        return None, "the duckdb-extension-avro package is not installed"
    base = os.path.join(os.path.dirname(duckdb_extension_avro.__file__), "extensions")
    mine = os.path.join(base, f"v{duckdb_version}", "avro.duckdb_extension")
    if os.path.isfile(mine):
        return mine, ""
    shipped = sorted(os.path.basename(os.path.dirname(p))
                     for p in glob.glob(os.path.join(base, "*", "avro.duckdb_extension")))
    return None, (f"duckdb-extension-avro ships the extension for DuckDB {', '.join(shipped) or 'no version'}, "
                  f"and this process has DuckDB {duckdb_version}; an extension loads only into its own release")


def load_avro(con: Any) -> str:
    """Load the Avro extension into the DuckDB connection ``con``: from the package built for this DuckDB, else
    from DuckDB's own extension directory (where ``INSTALL avro`` puts it); never downloads.  Returns where it came
    from; raises ``ImportError`` saying why when neither has it."""
    import duckdb

    con.execute("SET autoinstall_known_extensions = false")  # never a download behind the user's back
    path, why = _packaged_extension(duckdb.__version__)
    if path is not None:
        con.execute(f"LOAD '{path}'")
        return "the duckdb-extension-avro package"
    try:
        con.execute("LOAD avro")
    except duckdb.Error as exc:
        raise ImportError(f"{why}; DuckDB's own extension directory has none either "
                          f"({str(exc).splitlines()[0]})") from exc
    return "DuckDB's extension directory"


@functools.cache
def decoder() -> Decoder:
    """Which manifest decoder this process uses, found once (a locked DuckDB connection is opened and closed to
    try)."""
    try:
        import duckdb
    except ImportError:
        return Decoder("fastavro", reason="DuckDB is not installed", remedy=_remedy(None))
    from .._engine import locked_duckdb

    source: list[str] = []
    try:
        locked_duckdb(setup=[lambda con: source.append(load_avro(con))]).close()
    except ImportError as exc:
        return Decoder("fastavro", reason=str(exc), remedy=_remedy(duckdb.__version__))
    except Exception as exc:  # noqa: BLE001 - the extension is there but does not load (a broken file, a platform)
        return Decoder("fastavro", reason=f"the Avro extension does not load: {str(exc).splitlines()[0]}",
                       remedy=_remedy(duckdb.__version__))
    return Decoder("duckdb-avro", source=source[0])
