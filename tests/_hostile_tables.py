"""Hostile tables for the read-scope tests: copies of fixture tables whose metadata names a location outside the
table's read scope (an address on a counting HTTP listener, or a sentinel file beside the table), one place at a
time; the listener that counts every request; an audit hook that sees every file Python opens."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from _warehouse_fixtures import (FIXTURES, ORDERS_CURRENT_METADATA, ORDERS_MANIFEST_LIST, WAREHOUSE, WRITTEN_ROOT,
                                 edit_json, rewrite_avro)

LARGE_DELTA = FIXTURES / "engines" / "delta" / "delta-spark-table-with-dv-large"
LEGACY_CURRENT_METADATA = "legacy/metadata/v3.metadata.json"


class CountingListener:
    """A real HTTP server on 127.0.0.1 (a thread) that counts every request it gets and answers each with
    ``files[path]`` (200) or 404."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []
        self.files: dict[str, bytes] = {}
        listener = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self, body: bool) -> None:
                listener.requests.append((self.command, self.path))
                data = listener.files.get(self.path.split("?", 1)[0])
                if data is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body:
                    self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's names
                self._answer(True)

            def do_HEAD(self) -> None:  # noqa: N802
                self._answer(False)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class OpenAudit:
    """Every path Python's ``open`` (and ``os.open``) is asked for while :attr:`watching`, through one audit hook
    (``sys.addaudithook``: once per process, it cannot be removed)."""

    _instance: Optional["OpenAudit"] = None

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.watching = False

    @classmethod
    def get(cls) -> "OpenAudit":
        if cls._instance is None:
            cls._instance = cls()
            audit = cls._instance

            def hook(event: str, args) -> None:
                if audit.watching and event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
                    audit.opened.append(os.fsdecode(args[0]))

            sys.addaudithook(hook)
        return cls._instance

    def __enter__(self) -> "OpenAudit":
        self.opened = []
        self.watching = True
        return self

    def __exit__(self, *exc) -> None:
        self.watching = False

    def touched(self, folder: Path) -> list[str]:
        """The paths opened inside ``folder`` (resolved)."""
        root = os.path.realpath(folder)
        return [p for p in self.opened if os.path.realpath(p) == root or os.path.realpath(p).startswith(root + os.sep)]


@dataclass
class Hostile:
    """One hostile table: what it is, where to open it (``kind`` iceberg-warehouse / delta / iceberg-folder)."""

    case: str
    kind: str
    location: str  # the warehouse folder (with ``table``) or the table folder
    table: str = ""


def _meta(wh: Path, relative: str) -> Path:
    return wh / "shop" / relative


def _local(wh: Path, written: str) -> Path:
    """The file of the copy a location written under /data/warehouse stands for."""
    return Path(str(wh) + written[len(WRITTEN_ROOT):])


def _manifest_of(wh: Path, manifest_list: Path, content: int) -> tuple[Path, dict]:
    import fastavro

    with open(manifest_list, "rb") as fh:
        records = list(fastavro.reader(fh))
    m = next(r for r in records if r["content"] == content)
    return _local(wh, m["manifest_path"]), m


def _rewrite_manifest(wh: Path, manifest_list: Path, content: int, change: Callable[[list[dict]], None]) -> None:
    """Change the entries of the first manifest of ``content`` in ``manifest_list``, and its length in the list."""
    path, m = _manifest_of(wh, manifest_list, content)

    def apply(records):
        change(records)
        return records

    _set_manifest_length(manifest_list, m["manifest_path"], rewrite_avro(path, apply))


def _set_manifest_length(manifest_list: Path, manifest_path: str, length: int) -> None:
    """The ``manifest_length`` of ``manifest_path`` in ``manifest_list`` set to ``length`` (after a rewrite)."""
    def fix(records):
        for r in records:
            if r["manifest_path"] == manifest_path:
                r["manifest_length"] = length
        return records

    rewrite_avro(manifest_list, fix)


def _current_list(wh: Path, table: str, metadata: str) -> Path:
    data = json.loads(_meta(wh, metadata).read_text())
    snap = next(s for s in data["snapshots"] if s["snapshot-id"] == data["current-snapshot-id"])
    return _local(wh, snap["manifest-list"])


ICEBERG_PLACES = ("manifest-list", "manifest", "data-file", "dv-puffin", "position-deletes", "equality-deletes",
                  "statistics", "partition-statistics", "metadata-log")
DELTA_PLACES = ("delta-add-path", "delta-p-dv")
UNIFORM_PLACES = ("uniform-dv", "uniform-manifest-list")
PLACES = ICEBERG_PLACES + DELTA_PLACES + UNIFORM_PLACES


def build(place: str, tmp: Path, target: str) -> Hostile:
    """A copy of a fixture table under ``tmp`` whose metadata names ``target`` at ``place``."""
    if place in ICEBERG_PLACES:
        wh = tmp / "warehouse"
        shutil.copytree(WAREHOUSE, wh)
        table = "shop.legacy" if place in ("position-deletes", "equality-deletes") else "shop.orders"
        metadata = LEGACY_CURRENT_METADATA if table == "shop.legacy" else ORDERS_CURRENT_METADATA
        meta_path = _meta(wh, metadata)
        if place == "manifest-list":
            def change(d):
                next(s for s in d["snapshots"] if s["snapshot-id"] == d["current-snapshot-id"])["manifest-list"] = target
            edit_json(meta_path, change)
        elif place == "manifest":
            def point(records):
                records[0]["manifest_path"] = target
                return records
            rewrite_avro(_meta(wh, ORDERS_MANIFEST_LIST), point)
        elif place == "data-file":
            def data(records):
                records[0]["data_file"]["file_path"] = target
            _rewrite_manifest(wh, _current_list(wh, table, metadata), 0, data)
        elif place == "dv-puffin":
            def dv(records):
                live = [r for r in records if r["status"] != 2]
                live[0]["data_file"]["file_path"] = target
            _rewrite_manifest(wh, _current_list(wh, table, metadata), 1, dv)
        elif place in ("position-deletes", "equality-deletes"):
            def deletes(records):
                f = records[0]["data_file"]
                f["file_path"] = target
                if place == "equality-deletes":
                    f["content"] = 2
                    f["equality_ids"] = [1]
            _rewrite_manifest(wh, _current_list(wh, table, metadata), 1, deletes)
        elif place == "statistics":
            edit_json(meta_path, lambda d: d["statistics"][0].__setitem__("statistics-path", target))
        elif place == "partition-statistics":
            edit_json(meta_path, lambda d: d.__setitem__("partition-statistics", [
                {"snapshot-id": d["current-snapshot-id"], "statistics-path": target, "file-size-in-bytes": 64}]))
        elif place == "metadata-log":
            edit_json(meta_path, lambda d: d["metadata-log"][-1].__setitem__("metadata-file", target))
        return Hostile(place, "iceberg-warehouse", str(wh), table)
    root = tmp / "delta"
    shutil.copytree(LARGE_DELTA, root)
    for p in root.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    if place in DELTA_PLACES:
        commit = root / "_delta_log" / "00000000000000000003.json"
        lines = [json.loads(x) for x in commit.read_text().splitlines() if x.strip()]
        add = next(a["add"] for a in lines if "add" in a and a["add"].get("deletionVector"))
        if place == "delta-add-path":
            add["path"] = target
        else:
            dv = add["deletionVector"]
            dv.update(storageType="p", pathOrInlineDv=target, offset=1)
        commit.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
        return Hostile(place, "delta", str(root))
    from uniform_table import write_uniform_metadata

    write_uniform_metadata(str(root))
    meta_dir = root / "metadata"
    meta = sorted(meta_dir.glob("*.metadata.json"))[-1]
    if place == "uniform-manifest-list":
        def change(d):
            next(s for s in d["snapshots"] if s["snapshot-id"] == d["current-snapshot-id"])["manifest-list"] = target
        edit_json(meta, change)
    else:
        data = json.loads(meta.read_text())
        snap = next(s for s in data["snapshots"] if s["snapshot-id"] == data["current-snapshot-id"])
        manifest_list = Path(snap["manifest-list"].replace("file:", ""))

        def dv(records):
            records[0]["data_file"]["file_path"] = target

        def local(p: str) -> Path:
            return Path(p.replace("file:", ""))

        import fastavro

        with open(manifest_list, "rb") as fh:
            m = next(r for r in fastavro.reader(fh) if r["content"] == 1)
        _set_manifest_length(manifest_list, m["manifest_path"],
                             rewrite_avro(local(m["manifest_path"]), lambda rs: (dv(rs), rs)[1]))
    return Hostile(place, "iceberg-folder", str(root))
