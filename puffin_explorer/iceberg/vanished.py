"""A snapshot is a promise: a file the pinned snapshot needs that is gone when read is a finding.

Maintenance jobs (``expire_snapshots``, ``remove_orphan_files``, ``rewrite_data_files``, Delta's
``VACUUM``) delete files that older metadata still names; a reader holding that metadata then
meets a missing manifest list, manifest, Puffin DV file or position-delete file.  Each such file
is one ``table.file-vanished`` finding, kept per ``(metadata file, snapshot id)`` on the table's source,
so every answer about that snapshot (delete debt, DVs, the doctor, ``check()``, the card) names
it, and the counts that depend on it are unknown (None), never smaller
(:mod:`puffin_explorer.coverage`).  When a vanished file is met the
metadata folder is listed once: a newer metadata version means the table changed while it was
read, and ``refresh()`` opens that version.

A path that is not found under the folder the table was found in (or the location its paths are
mapped to) is the table's own file gone, and never blames relocation; a path outside it may have
moved instead, and keeps the reader's own error, whose hint points at ``relocate=``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Optional

from ..errors import FileVanishedError, NotFoundError, SourceError
from ..regions import Finding, Severity, TableFinding
from .paths import basename, normalize, parent

if TYPE_CHECKING:  # pragma: no cover
    from .source import TableSource

CODE = "table.file-vanished"

_VERSION = re.compile(r"^v(\d+)(?:\.gz)?\.metadata\.json$|^(\d+)-[^/]*\.metadata\.json$")

_HINT = ("a maintenance job (expire_snapshots, remove_orphan_files, rewrite_data_files) deleted it after this "
         "snapshot was written: t.refresh() reads the newest metadata")


def metadata_version(name: str) -> Optional[int]:
    """N of ``vN.metadata.json`` / ``NNNNN-uuid.metadata.json`` (None for any other name)."""
    m = _VERSION.match(basename(name))
    return int(m.group(1) or m.group(2)) if m else None


def newest_metadata(io: Any, meta_dir: str) -> Optional[str]:
    """The highest-numbered metadata file in ``meta_dir`` (a location), None when it holds none."""
    best: Optional[tuple[int, str]] = None
    for name, kind, _ in io.listdir(meta_dir):
        n = metadata_version(name) if kind == "file" else None
        if n is not None and (best is None or n > best[0]):
            best = (n, name)
    return None if best is None else f"{meta_dir.rstrip('/')}/{best[1]}"


def newer_metadata(source: "TableSource") -> Optional[str]:
    """The newest metadata file beside the one ``source`` opened when it is a later version, else None.
    Lists the metadata folder once per table (only when a vanished file is met)."""
    caches = source.caches
    if caches.newer_metadata == ():
        newer = None
        opened = metadata_version(source.metadata_location)
        if opened is not None:
            try:
                newest = newest_metadata(source.io, parent(source.metadata_location))
            except (SourceError, OSError):
                newest = None
            if newest is not None and (metadata_version(newest) or 0) > opened:
                newer = newest
        caches.newer_metadata = newer
    return caches.newer_metadata


def looks_moved(source: "TableSource", path: str) -> bool:
    """Whether a path written in the metadata is read from outside the table's own location: the folder
    holding its ``metadata/`` folder (else where its written location is mapped to).  So a moved table opened
    without ``relocate`` looks moved, a deleted file of a table read where it is does not."""
    meta_dir = parent(source.metadata_location)
    root = parent(meta_dir) if basename(meta_dir) == "metadata" else source.locate(source.metadata.location or "")
    p, r = normalize(source.locate(str(path))), normalize(root).rstrip("/")
    return not (r and (p == r or p.startswith(r + "/")))


def snapshot_findings(source: "TableSource", snapshot_id: Optional[int]) -> list[Finding]:
    """The ``table.file-vanished`` findings met so far for one snapshot of the table's metadata file."""
    return list(source.caches.vanished.get((source.metadata_location, snapshot_id), {}).values())


def note(source: "TableSource", path: str, snapshot_id: Optional[int], what: str, partial: str) -> Finding:
    """The finding for a file of ``snapshot_id`` (``what``: "manifest", "Puffin file", ...) that is gone;
    ``partial`` says which counts are incomplete.  Kept per (metadata file, snapshot) and noted on the source."""
    kept = source.caches.vanished.setdefault((source.metadata_location, snapshot_id), {})
    got = kept.get(path)
    if got is not None:
        return got
    loc = source.locate(path)
    newer = newer_metadata(source)
    changed = f"; the table changed while it was read; newer metadata: v{metadata_version(newer)}" if newer else ""
    where = loc if loc == normalize(path) else f"{loc} (written as {path})"
    message = (f"{what} {where} of snapshot {snapshot_id} (metadata {basename(source.metadata_location)}) is gone"
               f"{': ' + partial if partial else ''}{changed}")
    f = TableFinding(code=CODE, severity=Severity.ERROR, offset=None, message=message, hint=_HINT, file=path)
    kept[path] = f
    source.note(f)
    return f


def error(source: "TableSource", exc: NotFoundError, path: str, snapshot_id: Optional[int], what: str,
          partial: str = "") -> NotFoundError:
    """The error ``read_dv`` / ``read_dvs`` raise for a vanished file (its finding is noted on the source);
    ``exc`` itself for a path that looks moved."""
    if looks_moved(source, path):
        return exc
    f = note(source, path, snapshot_id, what, partial)
    err = FileVanishedError(f"{CODE}: {f.message}", None, CODE, location=source.locate(path), hint=f.hint)
    err.finding = f  # type: ignore[attr-defined]
    return err


def manifest_raw(source: "TableSource", snapshot_id: Optional[int], manifest: dict[str, Any], raw: tuple,
                 metrics_only: bool = False) -> tuple:
    """An index's raw ``(code, severity, file, message, offset)`` for a manifest that vanished, with the snapshot
    and the counts it leaves partial."""
    deletes = manifest.get("content") == 1
    if metrics_only:
        partial = "its entries were read before it vanished, so the counts are whole; their column metrics are missing"
    elif deletes:
        partial = ("deleted rows, DVs and delete files of the snapshot are unknown (what the other manifests hold is "
                   "a lower bound)")
    else:
        partial = ("data files, rows and deleted rows of the snapshot are unknown (what the other manifests hold is "
                   "a lower bound)")
    f = note(source, str(manifest.get("manifest_path") or raw[2]), snapshot_id, "manifest", partial)
    return (f.code, f.severity, f.file, f.message, None)


def manifest_list_finding(source: "TableSource", snapshot_id: int, path: str) -> Finding:
    """The finding for a snapshot whose manifest list vanished: nothing of it can be counted."""
    return note(source, path, snapshot_id, "manifest list",
                "none of the snapshot's files are listed, so every count of it is unknown")


def as_noted(source: "TableSource", snapshot_id: Optional[int], findings: list[Finding]) -> list[Finding]:
    """``findings`` with each vanished-file finding replaced by the one noted for the snapshot (one object, so
    an answer that gathers both lists it once)."""
    kept = source.caches.vanished.get((source.metadata_location, snapshot_id), {})
    return [kept.get(getattr(f, "file", ""), f) if f.code == CODE else f for f in findings]


def mark(frame: Any, findings: list[Finding]) -> Any:
    """``frame`` with ``attrs["findings"]`` (the vanished files it was computed without) and ``attrs["partial"]``."""
    frame.attrs["findings"] = list(findings)
    frame.attrs["partial"] = bool(findings)
    return frame


__all__ = ["CODE", "as_noted", "error", "looks_moved", "manifest_list_finding", "manifest_raw", "mark", "metadata_version",
           "newer_metadata", "newest_metadata", "note", "dv_error", "snapshot_findings"]


def dv_error(source: "TableSource", exc: NotFoundError, snapshot_id: Optional[int]) -> NotFoundError:
    """What ``read_dv`` / ``read_dvs`` raise when a Puffin file they read is gone: the file named as the metadata
    writes it (found back through the table's remembered locations), the snapshot asked for (current by default)."""
    if isinstance(exc, FileVanishedError):
        return exc
    loc = exc.location or ""
    written = next((p for p, l in source.caches.located.items() if l == loc), loc)
    sid = source.metadata.current_snapshot_id if snapshot_id is None else snapshot_id
    return error(source, exc, written, sid, "Puffin file", "its DVs cannot be read")
