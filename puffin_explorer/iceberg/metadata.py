"""Table metadata (``*.metadata.json``, format versions 1-3): schemas, snapshots, statistics."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

from ..errors import InvalidFileError


@dataclass(frozen=True)
class SchemaField:
    """One column (nested columns get dotted names)."""

    id: int
    name: str
    type: Any  # a primitive type name (str) or the nested type's JSON object
    required: bool = False


#: Field ids the spec reserves for metadata columns and for position-delete files (name, type).
RESERVED_FIELDS: dict[int, tuple[str, str]] = {
    2147483646: ("_file", "string"),
    2147483645: ("_pos", "long"),
    2147483644: ("_deleted", "boolean"),
    2147483643: ("_spec_id", "int"),
    2147483546: ("file_path", "string"),
    2147483545: ("pos", "long"),
    2147483540: ("_row_id", "long"),
    2147483539: ("_last_updated_sequence_number", "long"),
}


def flatten_schema(schema: dict[str, Any]) -> list[SchemaField]:
    """Every field id in a schema, nested ones included, in order."""
    out: list[SchemaField] = []

    def visit_type(t: Any, prefix: str) -> None:
        if not isinstance(t, dict):
            return
        kind = t.get("type")
        if kind == "struct":
            for f in t.get("fields", []):
                name = f"{prefix}{f.get('name')}"
                out.append(SchemaField(int(f["id"]), name, f.get("type"), bool(f.get("required"))))
                visit_type(f.get("type"), name + ".")
        elif kind == "list":
            name = prefix + "element"
            out.append(SchemaField(int(t["element-id"]), name, t.get("element"), bool(t.get("element-required"))))
            visit_type(t.get("element"), name + ".")
        elif kind == "map":
            for part in ("key", "value"):
                name = prefix + part
                out.append(SchemaField(int(t[f"{part}-id"]), name, t.get(part), part == "key"))
                visit_type(t.get(part), name + ".")

    visit_type({"type": "struct", "fields": schema.get("fields", [])}, "")
    return out


def _opt_int(value: Any) -> Optional[int]:
    """An exact integer (ids above 2**53 must not pass through float), or None."""
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@dataclass
class Snapshot:
    """One snapshot entry of the table metadata."""

    snapshot_id: int
    parent_snapshot_id: Optional[int]
    sequence_number: int
    timestamp_ms: int
    manifest_list: Optional[str]
    manifests: list[str]  # v1 tables without a manifest list
    summary: dict[str, str]
    schema_id: Optional[int]
    first_row_id: Optional[int]
    added_rows: Optional[int]

    @property
    def operation(self) -> str:
        return self.summary.get("operation", "")

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Snapshot":
        return cls(
            snapshot_id=int(d["snapshot-id"]),
            parent_snapshot_id=_opt_int(d.get("parent-snapshot-id")),
            sequence_number=int(d.get("sequence-number", 0)),
            timestamp_ms=int(d.get("timestamp-ms", 0)),
            manifest_list=d.get("manifest-list"),
            manifests=list(d.get("manifests") or []),
            summary={str(k): str(v) for k, v in (d.get("summary") or {}).items()},
            schema_id=_opt_int(d.get("schema-id")),
            first_row_id=_opt_int(d.get("first-row-id")),
            added_rows=_opt_int(d.get("added-rows")),
        )


@dataclass
class StatisticsFile:
    """A table statistics (Puffin) file or a partition statistics file named by the metadata."""

    kind: str  # "table" or "partition"
    snapshot_id: int
    path: str
    file_size_in_bytes: Optional[int]
    file_footer_size_in_bytes: Optional[int]
    blob_metadata: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class TableMetadata:
    """A parsed ``metadata.json``; ``raw`` keeps the whole JSON object."""

    raw: dict[str, Any]
    location_read: str = ""

    @classmethod
    def from_bytes(cls, data: bytes, location_read: str = "") -> "TableMetadata":
        try:
            raw = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            pos = getattr(exc, "pos", None)
            raise InvalidFileError(f"{location_read}: not valid JSON table metadata: {exc}", pos,
                                   "metadata-json") from exc
        if not isinstance(raw, dict) or "format-version" not in raw:
            raise InvalidFileError(f"{location_read}: no format-version: not Iceberg table metadata",
                                   0, "metadata-json")
        return cls(raw, location_read)

    @property
    def format_version(self) -> int:
        return int(self.raw["format-version"])

    @property
    def location(self) -> str:
        return str(self.raw.get("location", ""))

    @property
    def table_uuid(self) -> Optional[str]:
        return self.raw.get("table-uuid")

    @property
    def properties(self) -> dict[str, str]:
        return dict(self.raw.get("properties") or {})

    @property
    def current_snapshot_id(self) -> Optional[int]:
        sid = self.raw.get("current-snapshot-id")
        if sid is None or int(sid) == -1:
            return None
        return int(sid)

    @property
    def schemas(self) -> dict[int, dict[str, Any]]:
        if "schemas" in self.raw:
            return {int(s.get("schema-id", 0)): s for s in self.raw["schemas"]}
        return {int(self.raw["schema"].get("schema-id", 0)): self.raw["schema"]}  # v1

    @property
    def current_schema_id(self) -> int:
        if "current-schema-id" in self.raw:
            return int(self.raw["current-schema-id"])
        return next(iter(self.schemas))

    def schema(self, schema_id: Optional[int] = None) -> dict[str, Any]:
        schemas = self.schemas
        sid = self.current_schema_id if schema_id is None else schema_id
        return schemas.get(sid) or schemas[self.current_schema_id]

    def fields(self, schema_id: Optional[int] = None) -> list[SchemaField]:
        return flatten_schema(self.schema(schema_id))

    def all_field_ids(self) -> set[int]:
        """Field ids of every schema the table ever had."""
        ids: set[int] = set()
        for s in self.schemas.values():
            ids.update(f.id for f in flatten_schema(s))
        return ids

    @property
    def partition_specs(self) -> dict[int, list[dict[str, Any]]]:
        if "partition-specs" in self.raw:
            return {int(s.get("spec-id", 0)): list(s.get("fields", [])) for s in self.raw["partition-specs"]}
        return {0: list(self.raw.get("partition-spec") or [])}  # v1

    @property
    def snapshots(self) -> list[Snapshot]:
        return [Snapshot.from_json(s) for s in self.raw.get("snapshots") or []]

    def snapshot(self, snapshot_id: Optional[int] = None) -> Optional[Snapshot]:
        """A snapshot by id, or the current one; None when the table has none."""
        sid = self.current_snapshot_id if snapshot_id is None else int(snapshot_id)
        if sid is None:
            return None
        for s in self.snapshots:
            if s.snapshot_id == sid:
                return s
        return None

    @property
    def next_row_id(self) -> Optional[int]:
        """v3 row lineage: the first row id the next commit assigns (None before v3)."""
        return _opt_int(self.raw.get("next-row-id"))

    @property
    def last_updated_ms(self) -> Optional[int]:
        return _opt_int(self.raw.get("last-updated-ms"))

    @property
    def sort_orders(self) -> dict[int, list[dict[str, Any]]]:
        return {int(o.get("order-id", 0)): list(o.get("fields", [])) for o in self.raw.get("sort-orders") or []}

    @property
    def default_sort_order_id(self) -> Optional[int]:
        return _opt_int(self.raw.get("default-sort-order-id"))

    @property
    def default_spec_id(self) -> int:
        return _opt_int(self.raw.get("default-spec-id")) or 0

    @property
    def refs(self) -> dict[str, dict[str, Any]]:
        return dict(self.raw.get("refs") or {})

    @property
    def statistics(self) -> list[StatisticsFile]:
        """Table statistics files, then partition statistics files."""
        out = []
        for s in self.raw.get("statistics") or []:
            out.append(StatisticsFile(
                "table", int(s["snapshot-id"]), s.get("statistics-path", ""),
                s.get("file-size-in-bytes"), s.get("file-footer-size-in-bytes"),
                list(s.get("blob-metadata") or [])))
        for s in self.raw.get("partition-statistics") or []:
            out.append(StatisticsFile(
                "partition", int(s["snapshot-id"]), s.get("statistics-path", ""),
                s.get("file-size-in-bytes"), None, []))
        return out
