"""Time and peak memory of the table operations that read a snapshot's manifest entries.

    python benchmarks/bench_entry_index.py clone /tmp/pe-bench/bench/dv_10000 /tmp/pe-bench/clone_100k 10
    python benchmarks/bench_entry_index.py ops /tmp/pe-bench/clone_100k [--code /path/to/checkout]
    python benchmarks/bench_entry_index.py decoders /tmp/pe-bench/clone_100k

``clone`` writes a table whose manifests hold ``copies`` copies of every entry of a table built by
``generate_dv_table.py`` (data files renamed ``...-cK.parquet`` in partition ``file_no + K * n``,
each DV entry pointing at its data file's copy and at the same Puffin range: the operations
measured read no data or Puffin byte).  ``ops`` runs each operation in a fresh process under
``/usr/bin/time -v`` and prints seconds and peak RSS (``--code`` picks the checkout to import, to
compare before and after).  ``decoders`` compares ways to decode the manifests.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import uuid

OPS = {
    "card": "t._repr_mimebundle_()",
    "dvs": "t.dvs()",
    "deleted_rows_per_file": "t.deleted_rows_per_file()",
    "delete_debt": "d = t.delete_debt(); d.per_partition(); d.candidates()",
    "timeline": "t.timeline()",
    "files": "t.files()",
    "check_metadata": "t.check(read_files=False)",
    "check": "t.check()",
}


def _read_avro(path: str):
    import fastavro

    with open(path, "rb") as fh:
        reader = fastavro.reader(fh)
        return dict(reader.metadata), list(reader)


def _write_avro(path: str, meta: dict, records) -> int:
    import fastavro

    with open(path, "wb") as fh:
        fastavro.writer(fh, json.loads(meta["avro.schema"]), records, codec=meta.get("avro.codec", "null"),
                        metadata={k: v for k, v in meta.items() if not k.startswith("avro.")})
    return os.path.getsize(path)


def _copy_name(path: str, k: int) -> str:
    return re.sub(r"(\.parquet)$", f"-c{k}\\1", path)


def clone(src_root: str, dest_root: str, copies: int) -> str:
    """Write ``dest_root/metadata`` with ``copies`` copies of every entry (one manifest per copy and content)."""
    done = os.path.join(dest_root, "metadata", "v1.metadata.json")
    if os.path.exists(done):
        return done
    meta_dir = os.path.join(src_root, "metadata")
    hint = open(os.path.join(meta_dir, "version-hint.text")).read().strip()
    with open(os.path.join(meta_dir, f"v{hint}.metadata.json")) as fh:
        meta = json.load(fh)
    snap = next(s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"])
    out_dir = os.path.join(dest_root, "metadata")
    os.makedirs(out_dir, exist_ok=True)
    ml_meta, ml_records = _read_avro(snap["manifest-list"].replace("file:", ""))
    new_list, totals = [], {"data": 0, "records": 0, "deletes": 0, "deleted": 0}
    for m in ml_records:
        m_meta, entries = _read_avro(m["manifest_path"].replace("file:", ""))
        live = [e for e in entries if e["status"] != 2]
        n = len(live)
        for k in range(copies):
            def copy(e):
                df = dict(e["data_file"])
                if df.get("content", 0) == 0:
                    df["file_path"] = _copy_name(df["file_path"], k)
                elif df.get("referenced_data_file"):
                    df["referenced_data_file"] = _copy_name(df["referenced_data_file"], k)
                part = df.get("partition")
                if isinstance(part, dict) and isinstance(part.get("file_no"), int):
                    df["partition"] = {**part, "file_no": part["file_no"] + k * n}
                return {**e, "status": 0, "data_file": df}

            name = f"{uuid.uuid4()}-c{k}.avro"
            length = _write_avro(os.path.join(out_dir, name), m_meta, (copy(e) for e in live))
            rows = sum(e["data_file"]["record_count"] for e in live)
            rec = dict(m, manifest_path=os.path.join(out_dir, name), manifest_length=length, added_files_count=0,
                       existing_files_count=n, deleted_files_count=0, added_rows_count=0,
                       existing_rows_count=rows, deleted_rows_count=0)
            new_list.append(rec)
            if m.get("content") == 1:
                totals["deletes"] += n
                totals["deleted"] += rows
            else:
                totals["data"] += n
                totals["records"] += rows
    list_name = f"snap-{snap['snapshot-id']}-1-{uuid.uuid4()}.avro"
    _write_avro(os.path.join(out_dir, list_name), ml_meta, new_list)
    summary = dict(snap["summary"], **{"total-data-files": str(totals["data"]),
                                       "total-records": str(totals["records"]),
                                       "total-delete-files": str(totals["deletes"]),
                                       "total-position-deletes": str(totals["deleted"])})
    snap = dict(snap, **{"manifest-list": os.path.join(out_dir, list_name), "summary": summary})
    snap.pop("parent-snapshot-id", None)
    meta.update({"location": dest_root, "snapshots": [snap], "statistics": [], "partition-statistics": [],
                 "snapshot-log": [{"timestamp-ms": snap["timestamp-ms"], "snapshot-id": snap["snapshot-id"]}],
                 "metadata-log": [], "refs": {"main": {"snapshot-id": snap["snapshot-id"], "type": "branch"}}})
    meta.pop("next-row-id", None)
    with open(done + ".tmp", "w") as fh:
        json.dump(meta, fh)
    with open(os.path.join(out_dir, "version-hint.text"), "w") as fh:
        fh.write("1")
    os.replace(done + ".tmp", done)
    return done


def _timed(code: str, pythonpath: str) -> tuple[float, float, int]:
    """Seconds (wall, CPU) the statement takes after opening the table, and the process's peak RSS in bytes."""
    out = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": pythonpath}, cwd=pythonpath)  # -c puts cwd first
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    secs = re.search(r"SECONDS (\S+) (\S+)", out.stdout)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr).group(1)) * 1024
    return float(secs.group(1)), float(secs.group(2)), rss


def ops(root: str, code_root: str, which: list[str]) -> None:
    for name in which:
        stmt = OPS[name]
        code = ("import time; from puffin_explorer import Table\n"
                f"t = Table.from_folder({root!r}); s, c = time.perf_counter(), time.process_time()\n{stmt}\n"
                "print('SECONDS', time.perf_counter() - s, time.process_time() - c)")
        wall, cpu, rss = _timed(code, code_root)
        print(f"{name:24} {wall:8.2f} s wall {cpu:8.2f} s CPU {rss / 2**20:8.0f} MiB peak RSS", flush=True)


DECODERS = {
    "fastavro-reader-schema": """
from puffin_explorer.iceberg.avro import read_records
from puffin_explorer.iceberg.chunk_decoder import _projection
n = sum(len(read_records(open(p, 'rb').read(), _projection(False), 'x').records) for p in paths)""",
    "fastavro-full": """
from puffin_explorer.iceberg.avro import read_records
n = sum(len(read_records(open(p, 'rb').read()).records) for p in paths)""",
    "fastavro-reader-full": """
import fastavro
n = sum(len(list(fastavro.reader(open(p, 'rb')))) for p in paths)""",
    "duckdb-read_avro": """
import duckdb, glob, duckdb_extension_avro, os
con = duckdb.connect()
ext = glob.glob(os.path.join(os.path.dirname(duckdb_extension_avro.__file__), 'extensions', '*', 'avro.duckdb_extension'))[0]
con.execute(f"LOAD '{ext}'")
t = con.execute("SELECT status, snapshot_id, sequence_number, file_sequence_number, data_file.content, "
                "data_file.file_path, data_file.file_format, data_file.partition, data_file.record_count, "
                "data_file.file_size_in_bytes, data_file.referenced_data_file, data_file.content_offset, "
                "data_file.content_size_in_bytes FROM read_avro(?)", [paths]).to_arrow_table()
n = t.num_rows""",
}


def decoders(root: str, code_root: str) -> None:
    from puffin_explorer import Table

    t = Table.from_folder(root)
    paths = [t.locate(m["manifest_path"]) for m in t.source.manifest_records()]
    for name, body in DECODERS.items():
        code = (f"import time\npaths = {paths!r}\ns, c = time.perf_counter(), time.process_time()\n{body}\n"
                "print('SECONDS', time.perf_counter() - s, time.process_time() - c)")
        wall, cpu, rss = _timed(code, code_root)
        print(f"{name:24} {wall:8.2f} s wall {cpu:8.2f} s CPU {rss / 2**20:8.0f} MiB peak RSS", flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("clone")
    c.add_argument("src")
    c.add_argument("dest")
    c.add_argument("copies", type=int)
    for name in ("ops", "decoders"):
        o = sub.add_parser(name)
        o.add_argument("root")
        o.add_argument("--code", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        if name == "ops":
            o.add_argument("--only", nargs="*", default=list(OPS))
    a = p.parse_args(argv)
    if a.cmd == "clone":
        s = time.perf_counter()
        print(clone(a.src, a.dest, a.copies), f"{time.perf_counter() - s:.1f} s")
    elif a.cmd == "ops":
        ops(a.root, a.code, a.only)
    else:
        decoders(a.root, a.code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
