"""Every file a snapshot names (manifest list, manifests, live data and delete files, its statistics files)
against one listing per folder: missing, or of another size than written.  Column operations over the index's
paths; a Python value only for a file found wrong."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Optional

from .._text import plural
from ..regions import Finding, Severity
from . import vanished
from .check_base import CheckColumns, file_finding
from .paths import parent

if TYPE_CHECKING:  # pragma: no cover
    from .source import TableSource


class _NamedFiles(NamedTuple):
    """The files a snapshot names, a row each (Arrow arrays): the path as written, the size written (null: none)
    and what the file is (``manifest``, ``data file``, ``dv file``, ``table statistics file``, ...)."""

    written: Any
    size: Any
    what: Any

    def filter(self, mask: Any) -> "_NamedFiles":
        return _NamedFiles(*(a.filter(mask) for a in self))

    def take(self, rows: Any) -> "_NamedFiles":
        return _NamedFiles(*(a.take(rows) for a in self))


def check_files_listed(source: "TableSource", snapshot_id: int, cols: CheckColumns, out: list[Finding]) -> None:
    """Every file the snapshot names against one listing per folder (see the module docstring)."""
    loc, named = _one_per_location(source, _named_files(source, snapshot_id, cols))
    actual, unlisted = _listed_sizes(source, loc, out)
    _report(source, snapshot_id, loc, named, actual, unlisted, out)


def _named_files(source: "TableSource", snapshot_id: int, cols: CheckColumns) -> _NamedFiles:
    """The manifest list, the manifests, the live data and delete files (the last entry of each file) and the
    snapshot's statistics files, in the order a dict keyed by path keeps them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    snap = source.snapshot(snapshot_id)
    head: list[tuple[str, Optional[int], str]] = []  # (path as written, size, what)
    if snap.manifest_list:
        head.append((snap.manifest_list, None, "manifest list"))
    for m in source.manifest_records(snapshot_id):
        head.append((m["manifest_path"], m.get("manifest_length"), "manifest"))
    tail = [(s.path, s.file_size_in_bytes, f"{s.kind} statistics file") for s in source.metadata.statistics
            if s.snapshot_id == snapshot_id]
    files = _last_per_file(cols, (cols.data, cols.deletes), ["file_path", "file_size_in_bytes", "kind"])
    written = pa.concat_arrays([pa.array([h[0] for h in head], pa.string())]
                               + [c for f in files for c in f.column("file_path").chunks]
                               + [pa.array([t[0] for t in tail], pa.string())])
    size = pa.concat_arrays([pa.array([h[1] for h in head], pa.int64())]
                            + [c.cast(pa.int64()) for f in files for c in f.column("file_size_in_bytes").chunks]
                            + [pa.array([t[1] for t in tail], pa.int64())])
    what = pa.concat_arrays([pa.array([h[2] for h in head], pa.string())]
                            + [pc.binary_join_element_wise(pc.fill_null(c, "None"), " file", "")
                               for f in files for c in f.column("kind").chunks]
                            + [pa.array([t[2] for t in tail], pa.string())])
    return _NamedFiles(written, size, what)


def _last_per_file(cols: CheckColumns, masks, names: list[str]) -> list:
    """The ``names`` columns of the rows each mask selects (a table per mask), only the last of the rows naming one
    file (equal normalized paths, so one location) in the order of the masks' rows one after the other: what a
    dict keyed by location keeps of them.  A million DVs in 300 Puffin files are 300 rows here, not a million."""
    import numpy as np

    from .columns import last_of_each, path_codes

    paths = path_codes(cols.ix)
    rows = [np.flatnonzero(m) for m in masks]
    seq = paths.files[np.concatenate(rows)] if rows else np.zeros(0, dtype=np.int32)
    place = np.arange(len(seq))
    last = (last_of_each(seq, paths.size)[seq] == place) & (seq >= 0)  # a row without a path: no file
    out, at = [], 0
    for r in rows:
        out.append(cols.ix.take(r[last[at:at + len(r)]], names))
        at += len(r)
    return out


def _one_per_location(source: "TableSource", named: _NamedFiles) -> tuple[Any, _NamedFiles]:
    """The files' locations and the files, one row per location (the last written, as a dict keyed by location
    keeps), in location order (UTF-8 byte order is code point order, Python's string order); a file without a
    path (its manifest's finding says so) has nothing to look for."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from .columns import located_array

    loc = located_array(source, named.written)
    if loc.null_count:
        located = pc.is_valid(loc)
        loc, named = loc.filter(located), named.filter(located)
    n = len(loc)
    last = n - 1 - pc.index_in(pc.unique(loc), value_set=loc.take(pa.array(np.arange(n - 1, -1, -1)))) \
        .to_numpy(zero_copy_only=False).astype(np.int64)
    keep = pa.array(last, pa.int64()).take(pc.sort_indices(loc.take(pa.array(last, pa.int64()))))
    return loc.take(keep), named.take(keep)


def _listed_sizes(source: "TableSource", loc: Any, out: list[Finding]) -> tuple[Any, dict[str, Exception]]:
    """The size on storage of each location (null: not listed), from one listing of each folder; a folder that
    cannot be listed is a finding, and returned with its error."""
    import pyarrow.compute as pc

    from .columns import normalized

    # locations are normalized (no trailing slash) unless a mapped prefix ends with one: trimmed only then
    trimmed = pc.replace_substring_regex(loc, r"/+$", "") if pc.any(pc.ends_with(loc, "/")).as_py() else loc
    folders = pc.replace_substring_regex(trimmed, r"/[^/]*$", "")  # parent() depends on this part alone
    one_each = trimmed.take(pc.index_in(pc.unique(folders), value_set=folders))
    del trimmed, folders
    unlisted: dict[str, Exception] = {}
    names, sizes = source.io.listed_sizes((parent(x) for x in one_each.to_pylist()), failed=unlisted)
    for folder, exc in sorted(unlisted.items()):
        out.append(file_finding("iceberg.folder-unlisted", Severity.WARNING, folder,
                                f"{exc}; the files in it are not checked"))
    return sizes.take(pc.index_in(normalized(loc), value_set=names)), unlisted


def _report(source: "TableSource", snapshot_id: int, loc: Any, named: _NamedFiles, actual: Any,
            unlisted: dict[str, Exception], out: list[Finding]) -> None:
    """A finding for each file missing from its folder's listing (unless said already, or its folder unlisted)
    and each manifest, data or delete file of another size than written."""
    import numpy as np
    import pyarrow.compute as pc

    written, size, what = named
    missing = actual.is_null().to_numpy(zero_copy_only=False)
    claimed = pc.fill_null(size, -1).to_numpy()
    have = pc.fill_null(actual, -1).to_numpy()
    odd = missing | (size.is_valid().to_numpy(zero_copy_only=False) & ~missing & (claimed != have))
    said = {getattr(f, "file", None) for f in out if f.code in ("iceberg.file-missing", "table.file-vanished")}
    said |= {getattr(f, "file", None) for f in vanished.snapshot_findings(source, snapshot_id)}
    for i in np.flatnonzero(odd).tolist():
        w, where, kind = written[i].as_py(), loc[i].as_py(), what[i].as_py()
        if missing[i]:
            if w not in said and parent(where) not in unlisted:
                if vanished.newer_metadata(source) is not None and not vanished.looks_moved(source, w):
                    # the table's own file, gone while a newer metadata version exists: maintenance removed it
                    out.append(vanished.note(source, w, snapshot_id, kind, ""))
                else:
                    out.append(file_finding("iceberg.file-missing", Severity.ERROR, w,
                                            f"{kind} {where} does not exist"))
        elif kind == "manifest":
            out.append(file_finding("iceberg.file-size-mismatch", Severity.ERROR, w,
                                    f"manifest list says manifest_length {claimed[i]} but {where} has "
                                    f"{plural(have[i], 'byte', sep='')}"))
        elif kind.endswith("file") and "statistics" not in kind and kind != "dv file":
            out.append(file_finding("iceberg.file-size-mismatch", Severity.ERROR, w,
                                    f"manifest says file_size_in_bytes {claimed[i]} but {where} has "
                                    f"{plural(have[i], 'byte', sep='')}"))
