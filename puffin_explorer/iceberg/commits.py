"""One commit of a table: the snapshot with its manifests and changed files, and the rows it deleted.

Nothing here reads a data file; :class:`CommitDeletes` reads exactly the two DVs
it compares per data file (the commit's new DV and the one it replaced) and the
Parquet position-delete files the commit added.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from .._answers import tabular
from .._repr import RichRepr
from ..errors import FileVanishedError, NotFoundError, PuffinError
from ..regions import FindingList, Severity
from .columns import int_columns
from .dvreads import dv_reader
from .entry_cache import listed_once
from .index_build import build_index
from .manifest_chunks import manifest_entries
from .metadata import Snapshot
from .paths import normalize

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .source import TableSource

CHANGE_COLUMNS = ["change", "kind", "file_path", "record_count", "file_size_in_bytes", "partition",
                  "referenced_data_file", "content_offset", "content_size_in_bytes", "first_row_id",
                  "sequence_number", "manifest_path"]


class TableSnapshot(Snapshot, RichRepr):
    """A snapshot of a table: the metadata entry (every :class:`Snapshot` attribute) plus what it changed.

    Only the manifests this snapshot wrote are read for ``files_added()`` / ``files_removed()``.
    """

    source: "TableSource"

    @classmethod
    def of(cls, source: "TableSource", snap: Snapshot) -> "TableSnapshot":
        out = cls(**{k: getattr(snap, k) for k in Snapshot.__dataclass_fields__})
        out.source = source
        return out

    @property
    def parent(self) -> Optional["TableSnapshot"]:
        """The parent commit (None for the first one, or when it was expired)."""
        if self.parent_snapshot_id is None or self.source.metadata.snapshot(self.parent_snapshot_id) is None:
            return None
        return TableSnapshot.of(self.source, self.source.snapshot(self.parent_snapshot_id))

    @property
    def is_current(self) -> bool:
        return self.snapshot_id == self.source.metadata.current_snapshot_id

    def _answer(self, frame: "pd.DataFrame") -> "pd.DataFrame":
        """A tabular answer of this snapshot, named in ``attrs`` (``table``, ``snapshot_id``)."""
        return tabular(frame, table=self.source.name, snapshot_id=self.snapshot_id)

    def manifest_files(self) -> "pd.DataFrame":
        """The snapshot's manifest list as a DataFrame (one row per manifest, ``written_here`` marks its own)."""
        from .overview import manifest_frame

        df = manifest_frame(self.source, self.snapshot_id)
        if len(df) and "added_snapshot_id" in df:
            df["written_here"] = df["added_snapshot_id"] == self.snapshot_id
        return self._answer(df)

    def _own_entries(self) -> list[dict[str, Any]]:
        out = []
        listed = self.source.manifest_records(self.snapshot_id)
        for i in listed_once(listed)[0]:  # one listed twice (a finding of the index): its entries are this commit's once
            m = listed[i]
            if m.get("added_snapshot_id") not in (None, self.snapshot_id):
                continue  # added/removed entries of this commit live only in manifests it wrote
            for e in manifest_entries(self.source, m):
                if e.get("snapshot_id") == self.snapshot_id and e["status_code"] in (1, 2):
                    out.append(e)
        return out

    def changes(self) -> "pd.DataFrame":
        """Files this commit added and removed: ``change`` is ``added`` or ``removed``; ``kind`` as in ``files()``."""
        import pandas as pd

        rows = []
        for e in self._own_entries():
            r = {c: e.get(c) for c in CHANGE_COLUMNS}
            r["change"] = "added" if e["status_code"] == 1 else "removed"
            rows.append(r)
        df = pd.DataFrame.from_records(rows, columns=CHANGE_COLUMNS)
        int_columns(df, rows, ("record_count", "file_size_in_bytes", "content_offset", "content_size_in_bytes",
                               "first_row_id", "sequence_number"))
        return self._answer(df)

    def files_added(self) -> "pd.DataFrame":
        """Data and delete files this commit added."""
        df = self.changes()
        return self._answer(df[df.change == "added"].reset_index(drop=True))

    def files_removed(self) -> "pd.DataFrame":
        """Data and delete files this commit removed (a replaced DV, a rewritten data file)."""
        df = self.changes()
        return self._answer(df[df.change == "removed"].reset_index(drop=True))

    def to_pandas(self) -> "pd.DataFrame":
        """:meth:`changes`."""
        return self.changes()

    def commit_deletes(self) -> "CommitDeletes":
        """What this commit deleted per data file (:class:`CommitDeletes`)."""
        return CommitDeletes(self.source, self.snapshot_id)

    def __repr__(self) -> str:
        return (f"TableSnapshot({self.source.name!r}, snapshot_id={self.snapshot_id}, "
                f"operation={self.operation!r}, sequence_number={self.sequence_number})")


DELETE_COLUMNS = ["data_file", "kind", "delete_file", "content_offset", "content_size_in_bytes",
                  "replaced_file", "replaced_offset", "replaced_cardinality", "cardinality",
                  "added_positions", "first_added", "last_added"]


class CommitDeletes(RichRepr):
    """What one commit deleted, per data file.

    For a DV: the positions the new DV holds beyond the DV it replaced (the DV of
    the same data file in the parent snapshot), reading only those two DVs. For a
    Parquet position-delete file: its rows. Equality deletes are listed, not resolved.
    """

    def __init__(self, source: "TableSource", snapshot_id: Optional[int] = None) -> None:
        self.source = source
        self.snapshot = TableSnapshot.of(source, source.snapshot(snapshot_id))
        self.snapshot_id = self.snapshot.snapshot_id
        self.findings = FindingList()
        self.dv_bytes_read = 0
        self._positions: dict[str, Any] = {}
        build_index(source, self.snapshot_id, content="deletes")  # a delete manifest or list gone: a vanished-file finding
        self._frame = self._compute()
        from .vanished import snapshot_findings  # files of this snapshot gone when read: the frame is partial

        self.findings.extend(f for f in snapshot_findings(source, self.snapshot_id) if f not in self.findings)

    def _previous_dvs(self, added: list[dict[str, Any]], removed: list[dict[str, Any]]) -> dict[str, dict]:
        """Data file -> the DV the commit replaced (its parent's live DV, else the entry it marked deleted)."""
        out: dict[str, dict] = {}
        for e in removed:
            if e["kind"] == "dv" and e.get("referenced_data_file"):
                out[normalize(e["referenced_data_file"])] = e
        parent = self.snapshot.parent_snapshot_id
        if parent is not None and self.source.metadata.snapshot(parent) is not None and added:
            try:
                ix = build_index(self.source, parent, content="deletes")
                for e in ix.to_dicts(ix.mask(live=True)):
                    if e["kind"] == "dv" and e.get("referenced_data_file"):
                        out[normalize(e["referenced_data_file"])] = e
            except PuffinError as exc:
                self._finding("iceberg.manifest-unreadable", f"parent snapshot {parent}: {exc}")
        return out

    def _finding(self, code: str, message: str, severity: Severity = Severity.ERROR) -> None:
        from ..regions import TableFinding

        self.findings.append(TableFinding(code=code, severity=severity, offset=None, message=message,
                                          file=self.snapshot.manifest_list or ""))

    def _read(self, entry: dict[str, Any]):
        dv = dv_reader(self.source).read_dv(entry, self.snapshot_id)
        self.dv_bytes_read += int(entry["content_size_in_bytes"])
        return dv

    def _compute(self):
        import numpy as np
        import pandas as pd

        try:
            own = self.snapshot._own_entries()
        except PuffinError as exc:
            if not isinstance(exc, NotFoundError):  # a list gone is the index's table.file-vanished
                self._finding("iceberg.manifest-unreadable", str(exc), Severity.ERROR)
            own = []
        added = [e for e in own if e["status_code"] == 1 and e["content"] != 0]
        removed = [e for e in own if e["status_code"] == 2 and e["content"] != 0]
        previous = self._previous_dvs([e for e in added if e["kind"] == "dv"], removed)
        rows, seen = [], set()
        for e in added:
            if (e["file_path"], e.get("content_offset")) in seen:
                continue  # an entry the commit lists twice deletes its rows once (check() reports the listing)
            seen.add((e["file_path"], e.get("content_offset")))
            if e["kind"] == "dv":
                ref = e.get("referenced_data_file") or ""
                old = previous.get(normalize(ref))
                try:
                    new_dv = self._read(e)
                    added_here = new_dv.positions()
                    if old is not None:  # positions, not a vector serialized and parsed again for the difference
                        added_here = np.setdiff1d(added_here, self._read(old).positions(), assume_unique=True)
                    positions = np.asarray(added_here, dtype=np.int64)
                except (PuffinError, OSError, ValueError) as exc:
                    if not isinstance(exc, FileVanishedError):  # a Puffin file gone: its own finding, added below
                        self._finding("iceberg.dv-unreadable", f"DV for {ref}: {exc}", Severity.ERROR)
                    positions = np.zeros(0, dtype=np.int64)
                    new_dv = None
                self._positions[ref] = positions
                rows.append({"data_file": ref, "kind": "dv", "delete_file": e["file_path"],
                             "content_offset": e.get("content_offset"),
                             "content_size_in_bytes": e.get("content_size_in_bytes"),
                             "replaced_file": old["file_path"] if old else None,
                             "replaced_offset": old.get("content_offset") if old else None,
                             "replaced_cardinality": old.get("record_count") if old else None,
                             "cardinality": e.get("record_count"),
                             "added_positions": len(positions),
                             "first_added": int(positions[0]) if len(positions) else None,
                             "last_added": int(positions[-1]) if len(positions) else None})
            elif e["kind"] == "position-deletes":
                try:
                    t = self.source.read_parquet(e["file_path"], columns=["file_path", "pos"]).to_pandas()
                except (PuffinError, OSError, ValueError) as exc:
                    unreadable = getattr(exc, "code", "") == "iceberg.position-delete-unreadable"
                    self._finding("iceberg.position-delete-unreadable" if unreadable else "iceberg.file-missing",
                                  str(exc) if unreadable else f"{e['file_path']}: {exc}", Severity.ERROR)
                    continue
                for ref, group in t.groupby("file_path", sort=True):
                    positions = np.sort(group["pos"].to_numpy(dtype=np.int64))
                    self._positions[str(ref)] = positions
                    rows.append({"data_file": str(ref), "kind": "position-deletes", "delete_file": e["file_path"],
                                 "cardinality": len(positions), "added_positions": len(positions),
                                 "first_added": int(positions[0]) if len(positions) else None,
                                 "last_added": int(positions[-1]) if len(positions) else None})
            else:
                rows.append({"data_file": None, "kind": e["kind"], "delete_file": e["file_path"],
                             "cardinality": e.get("record_count")})
        df = pd.DataFrame.from_records(rows, columns=DELETE_COLUMNS)
        int_columns(df, rows, ("content_offset", "content_size_in_bytes", "replaced_offset", "replaced_cardinality",
                               "cardinality", "added_positions", "first_added", "last_added"))
        return df.sort_values(["kind", "data_file"], na_position="last").reset_index(drop=True)

    def to_pandas(self) -> "pd.DataFrame":
        """One row per data file the commit deleted rows from (and one per equality-delete file)."""
        return tabular(self._frame.copy(), table=self.source.name, snapshot_id=self.snapshot_id)

    def positions(self, data_file: str):
        """The positions this commit deleted in one data file (numpy int64, sorted)."""
        import numpy as np

        if data_file in self._positions:
            return self._positions[data_file]
        for ref, pos in self._positions.items():
            if normalize(ref) == normalize(data_file) or ref.endswith("/" + data_file):
                return pos
        return np.zeros(0, dtype=np.int64)

    @property
    def total(self) -> int:
        """Positions deleted by this commit, over every data file."""
        return int(self._frame["added_positions"].fillna(0).sum())

    def chart(self):
        """A matplotlib Figure: positions deleted per data file, and where they fall in each file."""
        from .._repr import make_view

        return make_view("figure", self)

    def __repr__(self) -> str:
        return f"CommitDeletes({self.source.name!r}, snapshot_id={self.snapshot_id}, data_files={len(self._frame)})"
