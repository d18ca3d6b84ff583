"""Finding codes of the Delta Lake reader: the log, DV descriptors, DV files, table cross-checks."""

from __future__ import annotations

from ..findings import define
from ..regions import Severity

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO
LAYER = "delta"

_CODES = [
    # the log
    ("delta.log-unreadable", E, "a commit, checkpoint or sidecar file of the log cannot be read", ""),
    ("delta.log-json", E, "a commit line is not a JSON object with one action", "the commit was cut or overwritten"),
    ("delta.action-field", E, "a field of a log action is missing or has the wrong type: the action is skipped when "
     "the field says which file or DV it is (path, deletionVector), otherwise only the field is ignored",
     "the writer or an edit of the log broke the action; other readers reject the table"),
    ("delta.log-gap", E, "a commit needed to reach the version is missing, or listed but gone or unreadable when "
     "read, and no checkpoint covers it: the version's counts miss its actions",
     "the log was cleaned up past the version asked for, or while it was read"),
    ("delta.last-checkpoint", W, "_last_checkpoint is not JSON, has a field of the wrong type, or names a checkpoint "
     "that is missing, unreadable or not the latest",
     "readers fall back to listing the log"),
    ("delta.checkpoint-incomplete", W, "a multi-part checkpoint misses parts; it is ignored", ""),
    ("delta.protocol-feature", W, "the table has DVs but its protocol does not list the deletionVectors reader "
     "feature", "readers that trust the protocol ignore the DVs and return deleted rows"),
    ("delta.duplicate-file", E, "two live add actions for one data file", "log replay keeps one; the log is wrong"),
    # DV descriptors
    ("delta.dv-storage-type", E, "a DV descriptor's storageType is not u, p or i", ""),
    ("delta.dv-path", E, "a DV descriptor's pathOrInlineDv does not decode (Z85 UUID)", ""),
    ("delta.dv-inline", E, "an inline DV does not decode, or its size is not sizeInBytes", ""),
    ("delta.dv-offset-missing", W, "an on-disk DV descriptor has no offset", "the first DV of the file is read"),
    ("delta.dv-native-format", I, "a DV in Delta's older native RoaringBitmapArray format (converted)", ""),
    ("delta.dv-range", E, "a descriptor's offset + sizeInBytes runs past the end of its DV file", ""),
    ("delta.dv-offset-mismatch", E, "a descriptor's offset is not where a DV starts in its DV file", ""),
    ("delta.dv-size-mismatch", E, "a descriptor's sizeInBytes differs from the DV's size field", ""),
    ("delta.dv-unreadable", E, "a DV's bytes cannot be read", ""),
    ("delta.dv-cardinality-mismatch", E, "a descriptor's cardinality differs from the decoded DV", ""),
    ("delta.dv-cardinality-range", E, "a descriptor's cardinality is more than its data file's numRecords",
     "the descriptor or the stats are wrong; deleted and live row counts of the file cannot both be right"),
    ("delta.dv-num-records-missing", E, "a data file with a DV has no numRecords statistic",
     "the protocol requires numRecords for every file with a DV"),
    ("delta.dv-position-out-of-range", E, "a DV deletes a position at or past its data file's numRecords", ""),
    ("delta.dv-file-unreferenced", I, "a DV file in the table folder that no live add action references",
     "left for VACUUM after the DVs in it were replaced, or written by a failed commit"),
    # DV files
    ("delta.dv-file-version", E, "a DV file's first byte is not the format version 1", ""),
    ("delta.dv-file-truncated", E, "a DV file ends inside a DV, or holds bytes that are not a DV", ""),
    # data files
    ("delta.folder-unlisted", W, "a folder the log's add actions name cannot be listed (no such bucket, no "
     "credentials, access denied); the data files in it are not checked", "pass storage_options for that storage"),
    ("delta.file-missing", E, "a data file the log adds does not exist", ""),
    ("delta.file-size-mismatch", E, "a data file's size differs from the add action's size", ""),
]

for _code, _sev, _meaning, _hint in _CODES:
    define(LAYER, _code, _sev, _meaning, _hint)
