"""Cross-checks of a Delta table: DV descriptors against the DV files and the data files' numRecords.

Each problem is a :class:`~puffin_explorer.regions.TableFinding` naming
the file it is about (offsets are in that file).  A function of the version's
:class:`~.snapshot.DeltaSnapshot` (its log state, I/O and DV reads); problems of a
descriptor alone (its storageType, path, inline bytes, offset) were reported as
the log was read and are among ``snap.findings``.
"""

from __future__ import annotations

import re
from typing import Optional

from .._text import plural
from ..errors import PuffinError
from ..findings import lookup, make
from ..iceberg.paths import join, normalize, parent
from ..regions import Finding, Severity, TableFinding
from .snapshot import DeltaSnapshot

_DV_FILE = re.compile(r"^deletion_vector_[0-9a-fA-F-]{36}\.bin$")
#: Codes of a DV that ``read_dv`` could not read (it comes back empty with one of these).
_UNREAD = {"delta.dv-storage-type", "delta.dv-path", "delta.dv-inline", "delta.dv-range", "table.file-vanished",
           "delta.dv-unreadable"}


def _severity(code: str) -> Severity:
    return lookup(code).severity


def _f(code: str, file: str, message: str, offset: Optional[int] = None, length: Optional[int] = None,
       severity: Optional[Severity] = None) -> TableFinding:
    base = make(code, offset, message)
    return TableFinding(code=base.code, severity=severity or base.severity, offset=offset, message=message,
                        hint=base.hint, length=length, file=file)


def check_table(snap: DeltaSnapshot, check_files_exist: bool = True) -> list[Finding]:
    out: list[Finding] = list(snap.findings)
    live = snap.live()
    with_dv = [f for f in live if f.dv is not None]
    features = set(snap.reader_features)
    if with_dv and "deletionVectors" not in features:
        out.append(_f("delta.protocol-feature", snap.log.log_dir,
                      f"{plural(len(with_dv), 'live file', sep='')} have DVs but the protocol's readerFeatures are "
                      f"{sorted(features) or 'none'} (minReaderVersion {snap.protocol.get('minReaderVersion')})"))
    seen: dict[str, int] = {}
    for f in live:
        seen[f.path] = seen.get(f.path, 0) + 1
    for path, n in seen.items():
        if n > 1:
            out.append(_f("delta.duplicate-file", path, f"{n} live add actions for {path} (with different DVs)"))

    by_file: dict[str, list] = {}
    for f in with_dv:
        d = f.dv
        if f.num_records is None:
            out.append(_f("delta.dv-num-records-missing", f.path, f"{f.path} has a DV but no numRecords statistic"))
        if any(_severity(code) is Severity.ERROR for code, _, _ in d.problems()):
            continue  # the descriptor alone cannot be read: reported with its log line
        if d.storage_type == "i":
            _check_dv(snap, f, None, out)
        else:
            by_file.setdefault(snap.dv_location(d), []).append(f)

    for loc, files in sorted(by_file.items()):
        try:
            size = snap.io.size(loc)
        except PuffinError as exc:  # a location storage cannot even look up (a name too long, access denied)
            for f in files:
                out.append(_f("delta.dv-unreadable", loc, f"the DV file of {f.path} cannot be opened: {exc}"))
            continue
        if size is None:
            for f in files:
                out.append(_f("table.file-vanished", loc, f"{f.path}: {snap.vanished_message(loc, f.dv.cardinality)}"))
            continue
        try:
            dvf = snap.dv_file(loc)
        except (PuffinError, OSError) as exc:
            out.append(_f("delta.dv-unreadable", loc, f"cannot read the DV file: {exc}"))
            continue
        for fd in dvf.file_findings:
            out.append(_f(fd.code, loc, fd.message, fd.offset, fd.length, fd.severity))
        for f in files:
            _check_dv(snap, f, dvf, out, loc)

    if check_files_exist:
        _check_files(snap, live, out)
        _check_unreferenced(snap, set(by_file), out)
    return out


def _check_dv(snap: DeltaSnapshot, f, dvf, out: list[Finding], loc: Optional[str] = None) -> None:
    d = f.dv
    where = loc or f.path
    inside = dvf.dv_at(d.read_offset) if dvf is not None else None
    if dvf is not None and inside is None:
        # not at a DV start (reported by the file); try the bytes the descriptor names anyway
        if d.read_offset + d.read_length > dvf.size:
            out.append(_f("delta.dv-range", where,
                          f"{f.path}: DV range [{d.read_offset:,}, {d.read_offset + d.read_length:,}) runs past the "
                          f"end of the {dvf.size:,}-byte file", d.read_offset, d.read_length))
            return
    try:
        dv = inside.dv if inside is not None else snap.read_dv(f)
    except (PuffinError, OSError) as exc:  # strict tables raise what lenient ones report
        code = getattr(exc, "code", None) or "delta.dv-unreadable"
        out.append(_f(code if code.startswith("delta.") else "delta.dv-unreadable", where,
                      f"{f.path}: the DV cannot be read: {exc}", getattr(exc, "offset", None)))
        return
    for fd in dv.findings:
        if fd.severity is not Severity.INFO or fd.code.startswith("delta."):
            out.append(_f(fd.code, where, f"DV of {f.path}: {fd.message}", fd.offset, fd.length, fd.severity))
    if any(fd.code in _UNREAD for fd in dv.findings):
        return  # an empty stand-in: its cardinality says nothing
    if int(dv.cardinality) != int(d.cardinality):
        out.append(_f("delta.dv-cardinality-mismatch", where,
                      f"{f.path}: descriptor cardinality {d.cardinality:,} but the DV holds {dv.cardinality:,} "
                      f"positions", d.read_offset if loc else None, d.read_length if loc else None))
    if f.num_records is not None and dv.cardinality:
        highest = dv.max_position
        if highest is not None and highest >= f.num_records:
            out.append(_f("delta.dv-position-out-of-range", where,
                          f"the DV of {f.path} deletes position {highest:,} but the file has {f.num_records:,} "
                          f"rows (numRecords)", d.read_offset if loc else None, d.read_length if loc else None))


def _check_files(snap: DeltaSnapshot, live, out: list[Finding]) -> None:
    expected = {snap.locate(f.path): f for f in live}
    unlisted: dict[str, Exception] = {}
    sizes = snap.io.sizes_in((parent(loc) for loc in expected), failed=unlisted)
    for folder, exc in sorted(unlisted.items()):
        out.append(_f("delta.folder-unlisted", folder, f"{exc}; the data files in it are not checked"))
    for loc, f in sorted(expected.items()):
        if parent(loc) in unlisted:
            continue
        actual = sizes.get(normalize(loc))
        if actual is None:
            out.append(_f("delta.file-missing", f.path, f"data file {loc} does not exist"))
        elif f.size is not None and f.size != actual:
            out.append(_f("delta.file-size-mismatch", f.path,
                          f"the add action says size {f.size} but {loc} has {plural(actual, 'byte', sep='')}"))


def _check_unreferenced(snap: DeltaSnapshot, referenced: set, out: list[Finding]) -> None:
    folders = {snap.location} | {parent(loc) for loc in referenced if loc}
    for folder in sorted(folders):
        try:
            entries = snap.io.listdir(folder)
        except PuffinError as exc:  # a folder named by a damaged DV path that storage cannot list
            out.append(_f("delta.folder-unlisted", folder, f"{exc}; DV files in it are not checked"))
            continue
        for name, kind, _ in entries:
            loc = join(folder, name)
            if kind == "file" and _DV_FILE.match(name) and loc not in referenced:
                out.append(_f("delta.dv-file-unreferenced", loc,
                              f"{name} holds DVs no live add action of version {snap.version} references"))
