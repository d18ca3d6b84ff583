"""An unknown count is not zero: what the counts of one snapshot (one Delta version) could read.

When a count depends on files that could not be read (an Iceberg manifest list, a manifest or a position-delete
file gone or damaged; a commit or checkpoint a Delta version needs), it is ``None`` in Python, ``null`` in the JSON
contract and :data:`UNKNOWN` in cards and text, and the findings name the files.  Never a smaller number.

A partial count is shown only labelled, as a lower bound with what it covers (:meth:`Coverage.at_least`:
``≥ 27,924: 3 of 4 manifests read``), and only where what was read is a lower bound: each manifest of an Iceberg
snapshot holds live files of its own, so the files of the manifests read are some of the snapshot's files and
their sums are at most the snapshot's.  A Delta version rebuilt across a gap in its log may hold files a missing
commit removed, so a Delta count is known or unknown, never partial.  Differences and ratios (live rows, the
deleted share) of a partial count have no bound and are only ever unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: What a card, a text view and the command line show for a count that is not known.
UNKNOWN = "unknown (see findings)"

#: The doctor's metrics that sum the data files (unknown when a data manifest or the manifest list was not read).
ROWS_METRICS = ("data_files", "data_bytes", "records", "small_files", "small_bytes", "partitions",
                "clustering_depth", "poorly_clustered_partitions", "columns_without_bounds")
#: The doctor's metrics that count delete files (unknown when a delete manifest or the manifest list was not read).
DELETES_METRICS = ("delete_files", "delete_bytes", "dvs", "position_delete_files", "equality_delete_files")
#: Metrics that join the data files to their deletes (unknown when either side is).
JOINED_METRICS = ("max_delete_files_per_data_file", "data_files_with_deletes", "dangling_deletes")
#: Metrics of deleted rows (unknown when either side is, or a position-delete file was not read).
DELETED_METRICS = ("deleted_rows", "live_rows", "deleted_share")
#: The metrics a partial count is given for (a lower bound, in the ``health.count-unknown`` finding's evidence).
LOWER_BOUND_METRICS = ("data_files", "records", "delete_files", "dvs", "deleted_rows")


@dataclass(frozen=True)
class Coverage:
    """Which counts of a snapshot are whole.  ``rows``: every data manifest was read (data files, records, bytes
    known); ``deletes``: every delete manifest was read (delete files and DVs known); ``positions``: every
    Parquet position-delete file was read.  ``covers`` says what was read when something was not
    (``3 of 4 manifests read``); ``lower_bound`` whether the counts of what was read are at most the whole ones
    (Iceberg: yes; Delta: no); ``because`` the finding codes that name the files not read."""

    rows: bool = True
    deletes: bool = True
    positions: bool = True
    covers: str = ""
    lower_bound: bool = False
    because: tuple[str, ...] = ()

    @property
    def whole(self) -> bool:
        """Whether every count is known."""
        return self.rows and self.deletes and self.positions

    @property
    def deleted_rows(self) -> bool:
        """Whether the deleted rows (and so the live rows and the deleted share) of the snapshot are known."""
        return self.whole

    @property
    def file_deletes(self) -> bool:
        """Whether each listed data file's deleted rows are known: every delete manifest and position-delete file
        was read (a data manifest not read leaves files out, not their deletes unknown)."""
        return self.deletes and self.positions

    def unknown_metrics(self) -> list[str]:
        """The doctor's metric keys that are not known, in :data:`ROWS_METRICS` ... order."""
        out: list[str] = []
        if not self.rows:
            out += ROWS_METRICS
        if not self.deletes:
            out += DELETES_METRICS
        if not (self.rows and self.deletes):
            out += JOINED_METRICS
        if not self.whole:
            out += DELETED_METRICS
        return out

    def at_least(self, n: Any) -> str:
        """The partial count ``n`` labelled: ``≥ 27,924: 3 of 4 manifests read``; '' where no partial count is
        meaningful (a Delta version, nothing read, a count of 0)."""
        if not self.lower_bound or not self.covers or not n:  # (a bound of 0 says nothing)
            return ""
        return f"≥ {int(n):,}: {self.covers}"


#: Every count known.
WHOLE = Coverage()


__all__ = ["Coverage", "DELETED_METRICS", "DELETES_METRICS", "JOINED_METRICS", "LOWER_BOUND_METRICS",
           "ROWS_METRICS", "UNKNOWN", "WHOLE"]
