"""Finding codes of the Iceberg table cross-checks (``Table.check()``).

Until version 0.1 these codes had no area (``dv-orphan``); the old spellings
are aliases.  A problem inside a DV or a statistics file that a check opens is
reported with the Puffin reader's own code (``dv.crc``, ``footer.json``, ...)
and the file it is in; the old composed form ``dv-invalid:<code>`` is an alias.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..findings import define, define_prefix_alias
from ..regions import Finding, Severity



@dataclass(frozen=True)
class TableFinding(Finding):
    """A finding about one file of a table (``file`` is the location as written in the metadata)."""

    file: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["file"] = self.file
        return d

    def __str__(self) -> str:
        return f"{super().__str__()} [{self.file}]" if self.file else super().__str__()


E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO
LAYER = "iceberg"

_CODES = [
    ("iceberg.table-relocated", I, "the table's location differs from where its metadata was found; paths are "
     "remapped", "pass relocate={old: new} to map other prefixes"),
    ("iceberg.manifest-unreadable", E, "a manifest list or manifest cannot be read", ""),
    ("iceberg.summary-mismatch", W, "a snapshot summary total disagrees with its manifests", ""),
    ("iceberg.dv-no-referenced-file", E, "a DV entry has no referenced_data_file", ""),
    ("iceberg.dv-orphan", E, "a DV references a data file that is not live in the snapshot", ""),
    ("iceberg.dv-duplicate", E, "more than one DV for one data file in a snapshot",
     "a snapshot may hold at most one DV per data file"),
    ("iceberg.dv-missing-range", E, "a DV entry has no content_offset / content_size_in_bytes", ""),
    ("iceberg.dv-offset-mismatch", E, "no DV starts at a DV entry's content_offset (no blob in the Puffin footer, "
     "no DV of a Delta DV file, or a bare blob not at 0)", ""),
    ("iceberg.dv-length-mismatch", E, "a DV entry's content_size_in_bytes differs from the blob's length", ""),
    ("iceberg.dv-blob-type", E, "the blob at a DV entry's offset is not a deletion-vector-v1", ""),
    ("iceberg.dv-cardinality-property-mismatch", E, "a DV entry's record_count differs from the blob's "
     "cardinality property", ""),
    ("iceberg.dv-reference-mismatch", E, "a DV entry's referenced_data_file differs from the blob's "
     "referenced-data-file property", ""),
    ("iceberg.dv-unreadable", E, "a DV's bytes cannot be read", ""),
    ("iceberg.dv-cardinality-mismatch", E, "a DV entry's record_count differs from the decoded cardinality", ""),
    ("iceberg.dv-position-out-of-range", E, "a DV deletes a position at or past its data file's row count", ""),
    ("iceberg.puffin-unreadable", E, "a Puffin file named by the metadata cannot be opened", ""),
    ("iceberg.file-missing", E, "a file the metadata references does not exist", ""),
    ("iceberg.file-size-mismatch", E, "a file's size differs from the size its manifest records", ""),
    ("iceberg.stats-snapshot-missing", E, "a statistics file is for a snapshot the table does not have", ""),
    ("iceberg.stats-file-size-mismatch", E, "a statistics file's size differs from file-size-in-bytes", ""),
    ("iceberg.stats-footer-size-mismatch", E, "a statistics file's footer size differs from "
     "file-footer-size-in-bytes", ""),
    ("iceberg.stats-field-unknown", E, "a statistics blob is for a field id no schema of the table has", ""),
    ("iceberg.stats-blob-mismatch", E, "the table metadata's blob list disagrees with the statistics file's "
     "footer", ""),
]

for _code, _sev, _meaning, _hint in _CODES:
    define(LAYER, _code, _sev, _meaning, _hint, aliases=(_code.split(".", 1)[1],))

#: Codes added after the area.name scheme: no old spelling.
_NEW_CODES = [
    ("iceberg.dv-in-delta-file", I, "DV entries point into a Delta deletion-vector file (Delta UniForm), not a "
     "Puffin file; each entry is checked against the DVs of that file",
     "Iceberg readers that seek to content_offset read these DVs; tools that open the file as Puffin do not"),
    ("iceberg.dv-bare-blob", W, "a DV entry's file is a bare deletion-vector blob with no Puffin container",
     "DuckDB 1.5.3 wrote these; readers that open the file as Puffin fail"),
    ("iceberg.summary-counts-deleted", W, "a snapshot summary total counts DELETED (status 2) manifest entries",
     "the writer counted superseded files; the live totals come from the manifests"),
    ("iceberg.referenced-data-file-empty", I, "entries carry referenced_data_file as an empty string; read as none",
     "DuckDB writes \"\" on data-file entries"),
    ("iceberg.deleted-entries-carried", I, "a snapshot's manifests carry DELETED (status 2) entries from earlier "
     "snapshots; they are skipped", "DuckDB keeps superseded DVs in later snapshots' manifests"),
    ("iceberg.position-deletes-superseded", I, "position deletes of data files that have a DV are ignored in every "
     "count", "the v3 spec: readers can ignore position delete files if there is a DV for a data file"),
    ("iceberg.row-lineage-next-row-id", W, "the table's next-row-id is below row ids its snapshots or manifests "
     "assign", "a writer that assigns more row ids must raise next-row-id"),
    ("iceberg.row-lineage-delete-manifest", W, "a delete manifest has a first_row_id in the manifest list",
     "only data manifests assign row ids; readers ignore it"),
    ("iceberg.metadata-field-missing", E, "a field the table metadata's format version requires is missing",
     "the message names the JSON path; what depends on it is read without it"),
    ("iceberg.metadata-field-type", E, "a table metadata field has the wrong JSON type (a string where the spec "
     "says an object, an id that is not an integer, ...); it is read as absent",
     "the message names the JSON path and the value seen"),
    ("iceberg.metadata-number-range", E, "a number in the table metadata is outside the range of its type (a long "
     "beyond int64, a negative size or count); it is read as absent", ""),
    ("iceberg.metadata-id-unresolved", E, "an id in the table metadata names a snapshot, schema, partition spec or "
     "sort order the metadata does not have", "the message names the JSON path and the id"),
    ("iceberg.metadata-id-duplicate", E, "two snapshots, schemas, specs or sort orders of the table metadata have "
     "the same id; the first one is read", ""),
    ("iceberg.metadata-format-version", E, "the table metadata's format-version is not 1, 2 or 3; it is read with "
     "the rules of the nearest known version", ""),
    ("iceberg.position-delete-unreadable", E, "a position-delete file is not a readable Parquet file", ""),
]

for _code, _sev, _meaning, _hint in _NEW_CODES:
    define(LAYER, _code, _sev, _meaning, _hint)

define_prefix_alias("dv-invalid:", "a DV's own error finding, now emitted with its own code")
