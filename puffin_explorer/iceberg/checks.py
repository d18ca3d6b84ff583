"""Cross-checks between a snapshot's manifests, its Puffin files and the table's statistics entries.

Each problem is a :class:`~.findings.TableFinding`: a :class:`Finding` that also names the file it is about
(offsets are in that file).  :func:`check_table` runs the checks, each of which lives with its concern:
:mod:`.manifest_checks` (the summary's totals, files listed twice, writer quirks, row lineage), :mod:`.dv_checks`
(DV references, each DV file's footer and bytes; :mod:`.dv_screen` clears the common DVs as arrays),
:mod:`.statistics_checks` and :mod:`.file_checks` (every file the snapshot names against a listing of its folder);
what they share is in :mod:`.check_base`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from ..errors import PuffinError
from ..regions import Finding, FindingList, Severity
from . import vanished
from .check_base import CheckColumns, arrow_mask, file_finding
from .deletes import snapshot_position_delete_counts
from .dv_checks import check_dvs
from .file_checks import check_files_listed
from .index_build import build_index
from .manifest_checks import check_listed_twice, check_quirks, check_row_lineage, check_summary
from .statistics_checks import check_statistics

if TYPE_CHECKING:  # pragma: no cover
    from .source import TableSource


def findings_frame(findings: list[Finding]):
    """Findings as a DataFrame (one row each)."""
    import pandas as pd

    cols = ["severity", "code", "file", "offset", "length", "message", "hint"]
    rows = [{**f.to_dict(), "file": getattr(f, "file", "")} for f in findings]
    return pd.DataFrame.from_records(rows, columns=cols)


#: Index findings that a check reading the files leaves to the checks that open them.
_SAID_BY_FILE_CHECKS = ("iceberg.entry-range-beyond-file",)


def check_snapshot(source: "TableSource", snapshot_id: Optional[int] = None, check_files_exist: bool = True,
                   progress: Optional[Callable[[int, int], None]] = None, read_files: bool = True) -> FindingList:
    """What ``Table.check()`` returns: what reading the manifests found (damage, impossible values), then the
    cross-checks of :func:`check_table`, then the files of the snapshot that vanished while it was read."""
    try:
        found = build_index(source, snapshot_id).findings
        if read_files:  # a DV range past its file: the checks that read the file say what is there instead
            found = [f for f in found if f.code not in _SAID_BY_FILE_CHECKS]
        out = FindingList(found)
    except PuffinError:
        out = FindingList()  # the manifest list itself: check_table reports it
    out.extend(check_table(source, snapshot_id, check_files_exist=check_files_exist and read_files,
                           progress=progress, read_files=read_files))
    sid = source.metadata.current_snapshot_id if snapshot_id is None else snapshot_id
    out.extend(dict.fromkeys(f for f in vanished.snapshot_findings(source, sid) if f not in out))
    return out


def check_table(source: "TableSource", snapshot_id: Optional[int] = None, check_files_exist: bool = True,
                progress: Optional[Callable[[int, int], None]] = None, read_files: bool = True) -> list[Finding]:
    """Run every cross-check on one snapshot (current by default) and the table's statistics files.

    The metadata file's own findings come first. ``progress(done, total)`` is called as DVs
    are checked. ``read_files=False`` runs only the checks that need no Puffin byte (summary
    totals, DV references). A table with no current snapshot gets the checks that need none.
    The checks are queries over the snapshot's entry index: one Python step per finding, per
    manifest or per file read, none per entry.
    """
    out: list[Finding] = list(source.metadata.findings)
    if snapshot_id is None and source.metadata.current_snapshot_id is None:
        if read_files:
            check_statistics(source, out)
        return out
    snap = source.snapshot(snapshot_id)
    try:
        ix = build_index(source, snap.snapshot_id)
    except PuffinError as exc:
        return out + [file_finding("iceberg.manifest-unreadable", Severity.ERROR, snap.manifest_list or "", str(exc),
                                   exc.offset)]
    if not ix.manifests and any(f.code in ("iceberg.manifest-unreadable", "table.file-vanished")
                                for f in ix.findings):
        if read_files:  # no manifest list to check against (the index's finding says why)
            check_statistics(source, out)
        return out
    cols = CheckColumns(ix)
    counts: dict[str, Any] = {}

    def position_delete_counts() -> dict[str, dict[str, int]]:
        """Per data file, rows named by the live position-delete files (read once; an unreadable one is a finding)."""
        if "v" not in counts:
            try:
                counts["v"] = snapshot_position_delete_counts(source, ix)
            except (PuffinError, OSError) as exc:
                counts["v"] = {"rows": {}, "files": {}}
                code = "iceberg.position-delete-unreadable" if getattr(exc, "code", "") == \
                    "iceberg.position-delete-unreadable" else "iceberg.file-missing"
                what = "" if code != "iceberg.file-missing" else "cannot read position deletes: "
                paths = ix.table.column("file_path").filter(arrow_mask(cols.deletes & cols.kind_is("position-deletes")))
                named = [p for p in paths.to_pylist() if source.locate(p) in str(exc)]
                out.append(file_finding(code, Severity.ERROR, named[0] if named else "", f"{what}{exc}"))
        return counts["v"]

    try:
        if not any(f.code == "table.file-vanished" for f in ix.findings):  # partial counts say nothing
            check_summary(snap, cols, out)
        if read_files:  # a hash of every live path: 0.3 s at 2,000,000 entries, kept out of the card
            check_listed_twice(snap, cols, out)
        check_quirks(source, snap, cols, out, position_delete_counts)
        check_row_lineage(source, snap, out)
        check_dvs(source, snap.snapshot_id, cols, out, progress, read_files)
        if read_files and (cols.deletes & cols.kind_is("position-deletes")).any():
            position_delete_counts()
        if read_files:
            check_statistics(source, out)
        if check_files_exist:
            check_files_listed(source, snap.snapshot_id, cols, out)
    except PuffinError as exc:  # what the checks read themselves (a manifest list, a statistics file)
        out.append(file_finding("iceberg.manifest-unreadable", Severity.ERROR, getattr(exc, "location", None) or "",
                                str(exc), exc.offset))
    return out
