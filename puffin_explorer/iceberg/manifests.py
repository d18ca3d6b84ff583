"""Manifest lists (Avro, through :mod:`.avro`) and the spec's inheritance rules for manifest entries.

Manifests themselves are read into the entry index (:mod:`.index`), which applies these rules:

* snapshot id: a null ``snapshot_id`` is the manifest's ``added_snapshot_id``;
* sequence numbers: a null ``sequence_number`` / ``file_sequence_number`` of an
  ADDED entry is the manifest's ``sequence_number`` from the manifest list; v1
  manifests have none and default to 0;
* first row id (v3): a data file with a null ``first_row_id`` gets the
  manifest's ``first_row_id`` plus the ``record_count`` of every data file before
  it in the manifest that also had a null ``first_row_id``; delete files have none.
"""

from __future__ import annotations

import io
from typing import Any, Iterable, Optional

from ..errors import InvalidFileError
from .numbers import MANIFEST_FILE_INTS, out_of_range, show, spec_type

STATUS_NAMES = {0: "existing", 1: "added", 2: "deleted"}
CONTENT_DATA, CONTENT_POSITION_DELETES, CONTENT_EQUALITY_DELETES = 0, 1, 2


def file_kind(content: int, file_format: str) -> str:
    """``data``, ``dv`` (a Puffin deletion vector), ``position-deletes`` or ``equality-deletes``."""
    if content == CONTENT_DATA:
        return "data"
    if content == CONTENT_POSITION_DELETES:
        return "dv" if str(file_format).lower() == "puffin" else "position-deletes"
    if content == CONTENT_EQUALITY_DELETES:
        return "equality-deletes"
    return f"content-{content}"


def _avro_records(data: bytes, location: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Every record of a manifest list through the one container reader (:func:`.avro.read_records`); damage
    raises with the byte it starts at (a list read in part would hide manifests).  A codec that reader does
    not inflate goes to fastavro's own reader."""
    from .avro import CODECS, read_records

    got = read_records(data)
    if got.damage is None:
        return got.metadata, got.records
    if (got.metadata.get("avro.codec") or "null") in CODECS:
        raise InvalidFileError(f"{location}: cannot read Avro from byte {got.damage.offset:,}: {got.damage.reason}",
                               got.damage.offset, "avro-unreadable")
    import fastavro

    try:
        reader = fastavro.reader(io.BytesIO(data))
        meta = {k: (v.decode("utf-8", "replace") if isinstance(v, bytes) else v)
                for k, v in (reader.metadata or {}).items()}
        records = list(reader)
    except Exception as exc:  # fastavro raises many types on corrupt input
        raise InvalidFileError(f"{location}: cannot read Avro: {type(exc).__name__}: {exc}",
                               None, "avro-unreadable") from exc
    return meta, records


def read_manifest_list(data: bytes, location: str = "", findings: Optional[list] = None) -> list[dict[str, Any]]:
    """The ``manifest_file`` records of a manifest list, with v1 defaults filled in.

    An integer outside its spec type (``partition_spec_id`` past an int, a long past int64) is read as
    absent, and a ``manifest_path`` with a control character is kept (the I/O layer refuses it); each is
    a :class:`~.findings.TableFinding` appended to ``findings`` when given.
    """
    _, records = _avro_records(data, location)
    out = []
    for i, r in enumerate(records):
        m = dict(r)
        bad = checked_record(m, MANIFEST_FILE_INTS, location, f"record {i}")
        if findings is not None:
            findings.extend(bad)
        m.setdefault("content", 0)
        if m.get("content") is None:
            m["content"] = 0
        m.setdefault("sequence_number", 0)
        m.setdefault("min_sequence_number", 0)
        m.setdefault("first_row_id", None)
        for legacy, name in (("added_data_files_count", "added_files_count"),
                             ("existing_data_files_count", "existing_files_count"),
                             ("deleted_data_files_count", "deleted_files_count")):
            if name not in m and legacy in m:
                m[name] = m[legacy]
        out.append(m)
    return out


def checked_record(record: dict[str, Any], fields: Iterable[str], location: str, where: str) -> list:
    """Findings of one manifest-list record's integers out of their spec range (each set to None) and of a
    ``manifest_path`` with a control character; ``where`` names the record in messages."""
    from ..io.locations import describe
    from ..regions import Severity
    from ..regions import TableFinding
    from .paths import basename

    out = []
    for name in fields:
        value = record.get(name)
        kind = spec_type(name)
        if out_of_range(value, kind):
            record[name] = None
            out.append(TableFinding(
                code="iceberg.manifest-number-range", severity=Severity.ERROR, offset=None, file=location,
                message=f"{basename(location)} {where}: {name} is {show(value)}, outside the range of "
                        f"{'an int' if kind == 'int' else 'a long'}; read as absent"))
    path = record.get("manifest_path")
    if isinstance(path, str) and describe(path):
        out.append(TableFinding(
            code="iceberg.path-control-character", severity=Severity.ERROR, offset=None, file=location,
            message=f"{basename(location)} {where}: manifest_path {path!r} holds the control character "
                    f"{describe(path)}; the manifest is not read"))
    return out


def manifest_list_from_paths(paths: list[str], snapshot_id: int) -> list[dict[str, Any]]:
    """v1 snapshots may list manifests directly instead of writing a manifest list."""
    return [{"manifest_path": p, "manifest_length": None, "partition_spec_id": 0, "content": 0,
             "sequence_number": 0, "min_sequence_number": 0, "added_snapshot_id": snapshot_id,
             "first_row_id": None} for p in paths]


def manifest_counts(manifest: dict[str, Any]) -> Optional[int]:
    """Total entry count the manifest list claims, when all three counts are given."""
    parts = [manifest.get(k) for k in ("added_files_count", "existing_files_count", "deleted_files_count")]
    if any(p is None for p in parts):
        return None
    return sum(int(p) for p in parts)
