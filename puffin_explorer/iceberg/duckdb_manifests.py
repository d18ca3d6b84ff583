"""DuckDB's ``read_avro`` over manifests whose container structure is intact, in the background, straight to
Arrow; and why a process cannot use it (then fastavro decodes every manifest).

Decoder, chosen by measurement (``benchmarks/bench_entry_index.py decoders``): the 20 manifests of a
100,000-data-file + 100,000-DV table (40 MB of Avro, 200,000 entries), one fresh process each, CPU
seconds and peak RSS, on a shared 2-core machine — see :data:`.manifest_decoder.DECODER_FIGURES`, and
:mod:`.manifest_decoder` for how the extension is found and the other decoders weighed.  DuckDB's ``read_avro``
is about four times faster than fastavro and hands back Arrow columns, where fastavro hands back a
dict per entry that the index then walks in Python (another ~10 µs per entry); a reader schema that
drops the metrics saves fastavro little (the metrics of three columns are a small part of an entry)
but a third of its memory.  DuckDB reads a file whole or fails and reads only paths, so intact
manifests (a structural scan checks magic, blocks, sizes and sync markers first) go through DuckDB
from :data:`.manifest_chunks.DUCKDB_FROM_BYTES` on, written to a private temporary folder; damaged ones,
small tables and anything DuckDB refuses go through fastavro (:mod:`.chunk_decoder`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional

from .index import FILE_FIELDS, METRIC_FIELDS, TOP_FIELDS


#: DuckDB queries decoding one batch of manifests at once: one per core this process may run on, at most 4.
DECODE_WORKERS = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else
                            (os.cpu_count() or 1)))


class DuckDBReader:
    """DuckDB's ``read_avro`` over manifests whose container structure is intact, straight to Arrow.

    The bytes come from the table's I/O layer and are written to a private temporary folder (DuckDB
    reads paths), which exists only while reads are running (a Spark worker's reader outlives many reads, and
    its process may end without running exit handlers); files of one writer schema are read in one query.
    Any DuckDB error sends those manifests to the fastavro path, which says what is wrong record by record.
    The connection reads that folder and nothing else (``allowed_directories``, no external access, the
    configuration locked): the folder's path is chosen once, and made again there (private to this user) when
    a read starts after it was removed.
    """

    def __init__(self) -> None:
        import os
        import tempfile
        from concurrent.futures import ThreadPoolExecutor

        import duckdb

        from .._engine import locked_duckdb
        from .manifest_decoder import load_avro

        self.scratch = tempfile.mkdtemp(prefix="puffin-explorer-manifests-")  # its name, kept for the connection
        os.rmdir(self.scratch)
        # one thread: rows come back in file order; its scratch files are read once (no file cache)
        self.con = locked_duckdb([self.scratch], setup=["SET enable_external_file_cache = false", load_avro])
        self.error = duckdb.Error
        self.folder: Optional[str] = None  # made by start(), removed when no read is running
        self.written = 0
        self.pool = ThreadPoolExecutor(DECODE_WORKERS, thread_name_prefix="puffin-explorer-avro")
        self.running: list[DuckDBRead] = []

    def close(self) -> None:
        """Interrupt the reads still running, wait for their threads, and remove the scratch folder."""
        import shutil

        for read in self.running:
            read.interrupt()
        self.pool.shutdown(wait=True, cancel_futures=True)
        for read in self.running:
            read.close()
        self.con.close()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def start(self, datas: list[bytes], writer: dict, metrics: bool) -> "DuckDBRead":
        """Start reading the projected columns of these manifests (one writer schema) in the background:
        up to :data:`DECODE_WORKERS` queries at once, each over a consecutive share of the manifests
        (DuckDB decodes without holding the GIL, so the caller goes on turning the last batch into chunks)."""
        import os

        if self.folder is None:
            os.mkdir(self.scratch, 0o700)  # raises when something else is there now: fastavro decodes then
            self.folder = self.scratch
        paths = []
        for data in datas:
            path = os.path.join(self.folder, f"{self.written}.avro")
            self.written += 1
            with open(path, "wb") as fh:
                fh.write(data)
            paths.append(path)
        sql = _read_avro_sql(writer, metrics)
        step = -(-len(paths) // min(len(paths), DECODE_WORKERS))
        shares = [paths[i:i + step] for i in range(0, len(paths), step)]
        cursors = [self.con.cursor() for _ in shares]
        futures = [self.pool.submit(lambda c, s: _arrow_table(c.execute(sql, [s])), cur, share)
                   for cur, share in zip(cursors, shares)]
        read = DuckDBRead(paths, cursors, futures)
        self.running.append(read)
        return read

    def collect(self, read: "DuckDBRead"):
        """The paths and the columns of a started read, with a ``filename`` column; rows in the order of the
        manifests, each manifest's contiguous.  Ctrl-C (or any error) interrupts its other queries."""
        import os
        from concurrent.futures import wait

        import pyarrow as pa

        try:
            tables = [f.result() for f in read.futures]
        except BaseException:
            read.interrupt()
            wait(read.futures)  # interrupted queries end at once; their cursors and files go after
            raise
        finally:
            if read in self.running:
                self.running.remove(read)
            read.close()
            if not self.running and self.folder is not None:
                try:
                    os.rmdir(self.folder)  # its files went with their reads
                    self.folder = None
                except OSError:
                    pass
        return read.paths, pa.concat_tables(tables) if len(tables) > 1 else tables[0]


@dataclass
class DuckDBRead:
    """One started DuckDB read: its scratch files, cursors and queries."""

    paths: list[str]
    cursors: list[Any]
    futures: list[Any]

    def interrupt(self) -> None:
        for cur in self.cursors:
            try:
                cur.interrupt()
            except Exception:  # noqa: BLE001 - already finished
                pass

    def close(self) -> None:
        import os

        for f in self.futures:
            f.cancel()
        for cur in self.cursors:
            try:
                cur.close()
            except Exception:  # noqa: BLE001 - closed, or its query still ends on interrupt
                pass
        for path in self.paths:
            try:
                os.remove(path)
            except OSError:
                pass


def _read_avro_sql(writer: dict, metrics: bool) -> str:
    """DuckDB's query of the index's columns from manifests of the Avro ``writer`` schema."""
    top = {f.get("name"): f for f in writer.get("fields", [])}
    df_type = (top.get("data_file") or {}).get("type")
    sub = {f.get("name"): f for f in df_type.get("fields", [])} if isinstance(df_type, dict) else {}
    select = ["filename"]
    for name in TOP_FIELDS:
        select.append(f'"{name}"' if name in top else f'NULL AS "{name}"')
    wanted = FILE_FIELDS + (METRIC_FIELDS if metrics else ())
    for name in wanted:
        if name == "partition":
            ptype = (sub.get("partition") or {}).get("type")
            if isinstance(ptype, dict) and ptype.get("type") == "record" and not ptype.get("fields"):
                continue  # an unpartitioned spec's empty record: DuckDB has no empty struct
        select.append(f'data_file."{name}" AS "{name}"' if name in sub else f'NULL AS "{name}"')
    return f"SELECT {', '.join(select)} FROM read_avro(?, filename=true)"


#: Address space DuckDB needs free to start: under a lower ``ulimit -v`` its connect aborts the process
#: (a C++ ``terminate``, not an exception); measured: 64 MiB over a bare interpreter aborts, 128 MiB starts.
DUCKDB_HEADROOM = 512 << 20


def _address_space_headroom() -> Optional[int]:
    """Bytes this process may still map under its address-space limit (``ulimit -v``), or None without one."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/statm") as fh:
            used = int(fh.read().split()[0]) * resource.getpagesize()
        return soft - used
    except (ImportError, OSError, ValueError, IndexError):
        return None


def _arrow_table(cursor):
    """An executed DuckDB cursor's result as a ``pyarrow.Table``: ``to_arrow_table()`` from DuckDB 1.4 on, ``arrow()``
    before (1.3 has no ``to_arrow_table``; without this every read fell back to fastavro there)."""
    return cursor.to_arrow_table() if hasattr(cursor, "to_arrow_table") else cursor.arrow()


def _duckdb() -> Optional[DuckDBReader]:
    """A DuckDB manifest reader, or None where it cannot run (fastavro decodes then; :func:`slow_reason` says why)."""
    if slow_reason() is not None:
        return None
    try:
        return DuckDBReader()
    except Exception:  # noqa: BLE001 - it loaded once in this process and not now: fastavro decodes
        return None


def slow_reason() -> Optional[str]:
    """Why this process decodes manifests with fastavro rather than DuckDB, with the remedy; None when it need not."""
    from .manifest_decoder import decoder

    headroom = _address_space_headroom()
    if headroom is not None and headroom < DUCKDB_HEADROOM:  # DuckDB would abort the process rather than raise
        return (f"the process's address-space limit (ulimit -v) leaves {headroom >> 20:,} MiB, and DuckDB needs "
                f"{DUCKDB_HEADROOM >> 20:,} MiB to start; raise the limit")
    found = decoder()
    return None if found.fast else f"{found.reason}; to decode them fast: {found.remedy}"


def decoder_label() -> str:
    """``"duckdb-avro"``, or ``"fastavro: "`` and :func:`slow_reason`'s why: the decoder ``pes.plan`` names."""
    reason = slow_reason()
    return "duckdb-avro" if reason is None else f"fastavro: {reason}"


#: The info finding of an index whose manifests were decoded the slow way (:func:`slow_reason` says why).
SLOW_DECODE = "iceberg.manifests-decoded-slowly"
