"""Finding codes of the Iceberg table cross-checks (``Table.check()``).

Until version 0.1 these codes had no area (``dv-orphan``); the old spellings
are aliases.  A problem inside a DV or a statistics file that a check opens is
reported with the Puffin reader's own code (``dv.crc``, ``footer.json``, ...)
and the file it is in; the old composed form ``dv-invalid:<code>`` is an alias.
"""

from __future__ import annotations

from ..findings import define, define_prefix_alias
from ..regions import Severity



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
    ("iceberg.manifests-decoded-slowly", I, "a table's manifests were decoded by fastavro, about four times slower "
     "than DuckDB's read_avro, because the DuckDB Avro extension cannot be loaded here (the message says why)",
     'pip install "duckdb-extension-avro" (it brings the DuckDB release it was built for); '
     "puffin_explorer.show_versions() says which decoder runs"),
    ("iceberg.folder-unlisted", W, "a folder the metadata names files in cannot be listed (no such bucket, no "
     "credentials, access denied, endpoint unreachable); the files in it are not checked",
     "pass storage_options for that storage"),
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
    ("iceberg.manifest-listed-twice", E, "a manifest list names the same manifest more than once; its files are "
     "read once per listing", "rewrite the manifest list (rewrite_manifests)"),
    ("iceberg.file-listed-twice", E, "more than one live manifest entry of a snapshot names the same file (a DV: "
     "the same file and offset); engines read a data file once per entry, so its rows repeat",
     "rewrite the snapshot's manifests (rewrite_manifests) or the data files (rewrite_data_files); a delete file's "
     "deletes are counted once here"),
    ("iceberg.manifest-damaged", E, "a manifest's Avro is damaged (truncated, a bad sync marker or block count, a "
     "record that does not decode) from a byte on; the entries before it are kept",
     "rewrite the manifest from a healthy copy; the table's readers fail on it"),
    ("iceberg.entry-type", E, "a manifest entry has a field of the wrong type or lacks a required field; read as "
     "null", ""),
    ("iceberg.entry-unknown-status", E, "a manifest entry's status is not 0 (existing), 1 (added) or 2 (deleted)", ""),
    ("iceberg.entry-unknown-content", E, "a manifest entry's content is not 0 (data), 1 (position deletes) or 2 "
     "(equality deletes)", ""),
    ("iceberg.entry-negative", E, "a manifest entry's record_count, file_size_in_bytes, content_offset or "
     "content_size_in_bytes is negative", ""),
    ("iceberg.entry-range-beyond-file", E, "a manifest entry's content_offset + content_size_in_bytes is past its "
     "file_size_in_bytes", ""),
    ("iceberg.entry-partition-mismatch", W, "a manifest entry's partition record does not fit its partition spec "
     "(other field names, a bucket value outside the bucket count)", ""),
    ("iceberg.metadata-field-missing", E, "a field the table metadata's format version requires is missing",
     "the message names the JSON path; what depends on it is read without it"),
    ("iceberg.metadata-field-type", E, "a table metadata field has the wrong JSON type (a string where the spec "
     "says an object, an id that is not an integer, ...); it is read as absent",
     "the message names the JSON path and the value seen"),
    ("iceberg.metadata-number-range", E, "a number in the table metadata is outside the range of its type (a long "
     "beyond int64, a negative size or count); it is read as absent", ""),
    ("iceberg.metadata-list-long", E, "a list in the table metadata is longer than any table needs (a statistics "
     "blob computed from over 10,000 field ids); only its first entries are read", "the message names the JSON path "
     "and the length"),
    ("iceberg.metadata-id-unresolved", E, "an id in the table metadata names a snapshot, schema, partition spec or "
     "sort order the metadata does not have", "the message names the JSON path and the id"),
    ("iceberg.metadata-id-duplicate", E, "two snapshots, schemas, specs or sort orders of the table metadata have "
     "the same id; the first one is read", ""),
    ("iceberg.metadata-format-version", E, "the table metadata's format-version is not 1, 2 or 3; it is read with "
     "the rules of the nearest known version", ""),
    ("iceberg.position-delete-unreadable", E, "a position-delete file is not a readable Parquet file", ""),
    ("iceberg.manifest-number-range", E, "an integer in a manifest list or manifest is outside the range of its "
     "spec type (an int past 32 bits, a long past 64 bits); it is read as absent",
     "the message names the file, the record or entry, the field and the value"),
    ("iceberg.path-control-character", E, "a path in the table metadata, a manifest list or a manifest holds a NUL "
     "or another control character; no file is opened at it",
     "the message names the path, the character and where the path was read"),
]

for _code, _sev, _meaning, _hint in _NEW_CODES:
    define(LAYER, _code, _sev, _meaning, _hint)

define_prefix_alias("dv-invalid:", "a DV's own error finding, now emitted with its own code")

#: A file the pinned snapshot needs, gone when read (``iceberg/vanished.py``; Delta tables emit it too).
define(LAYER, "table.file-vanished", E, "a file the opened snapshot (Delta: version) needs is gone when read: a "
       "manifest list, manifest, DV or position-delete file deleted since (expire_snapshots, remove_orphan_files, "
       "VACUUM); the message names the file, the snapshot, which counts are unknown and, when the table changed "
       "while it was read, the newer metadata version", "t.refresh() reads the newest metadata; a path outside the "
       "table's location may have moved instead (relocate=)", aliases=("delta.dv-file-missing",))

#: The table doctor's codes (``Table.health()``, ``puffin-explorer doctor``): a layer of their own.
HEALTH_LAYER = "health"
_HEALTH_CODES = [
    ("health.small-files", W, "data files below 75 % of write.target-file-size-bytes (rewrite_data_files' "
     "min-file-size-bytes) sit two or more to a partition; a rewrite merges them", "", (I,)),
    ("health.deleted-share", W, "more than 10 % of the table's rows are deleted (DV cardinalities and "
     "position-delete counts); readers still read and filter them", "", ()),
    ("health.read-amplification", W, "data files merge more than one delete file at scan time (position and "
     "equality deletes applied by partition and sequence number)", "", ()),
    ("health.dangling-deletes", I, "DVs, position or equality deletes that apply to no live data file (their data "
     "file was rewritten or removed); readers skip them, scan planning still reads them",
     "Iceberg 1.9.2's rewrite_data_files keeps the DVs of the files it rewrote, and the equality deletes older than "
     "the files it wrote, remove-dangling-deletes too", ()),
    ("health.partition-skew", I, "the largest partition holds 10 times the median partition's bytes or more",
     "", ()),
    ("health.poor-clustering", W, "within a partition, more than 2 files on average overlap a value of the sort-order "
     "column (or the column named): a sort rewrite clusters them", "", ()),
    ("health.columns-without-bounds", I, "columns with no lower/upper bounds in any data file (metrics mode "
     "none or counts): filters on them prune nothing", "", ()),
    ("health.manifest-fragmentation", W, "data manifests below commit.manifest.target-size-bytes number at least "
     "commit.manifest.min-count-to-merge; rewrite_manifests merges them", "", ()),
    ("health.snapshots-past-retention", W, "snapshots older than history.expire.max-snapshot-age-ms beyond "
     "history.expire.min-snapshots-to-keep; expire_snapshots frees the files only they hold", "", ()),
    ("health.metadata-cleanup-disabled", I, "write.metadata.delete-after-commit.enabled is off: metadata files "
     "pile up (a warning once more than write.metadata.previous-versions-max + 1 are kept)", "", (W,)),
    ("health.delta-tombstones-past-retention", W, "Delta: files removed longer ago than "
     "delta.deletedFileRetentionDuration (7 days by default) are still on storage; VACUUM deletes them", "", ()),
    ("health.delta-checkpoint-overdue", W, "Delta: more commits since the last checkpoint than "
     "delta.checkpointInterval (10 by default); every reader replays them", "", ()),
    ("health.orphan-files", W, "files under the table location that no snapshot, manifest or metadata file "
     "references, older than the grace period (3 days by default)", "", ()),
    ("health.statistics-missing", I, "the table has no statistics file (no NDV per column)", "", ()),
    ("health.statistics-stale", W, "the newest statistics file is for an older snapshot than the current one",
     "", ()),
    ("health.statistics-columns-missing", I, "columns without an NDV sketch in the current statistics file", "",
     ()),
    ("health.not-current-metadata", I, "the table location holds newer metadata files than the one opened: the "
     "orphan check is skipped (files of later commits would look orphaned)",
     "open the table's current metadata file", ()),
    ("health.count-unknown", W, "counts of the current snapshot (Delta: version) depend on files that could not be "
     "read (a manifest list, manifest or position-delete file gone or damaged; a commit the Delta version needs): "
     "they are null, never zero, and the evidence names them, with a lower bound and what it covers where what was "
     "read is one (\u2265 27,924: 3 of 4 manifests read)",
     "each finding it names says which file; t.refresh() reads the newest metadata", ()),
    ("health.snapshot-unreadable", I, "a snapshot's manifest list or a manifest cannot be read: its files are "
     "left out of the retention and orphan checks", "t.check() names the broken file", ()),
]

for _code, _sev, _meaning, _hint, _also in _HEALTH_CODES:
    define(HEALTH_LAYER, _code, _sev, _meaning, _hint, also=_also)
