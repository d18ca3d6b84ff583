"""Table metadata (``*.metadata.json``, format versions 1-3): schemas, snapshots, statistics."""

from __future__ import annotations

import json
import reprlib
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Optional, Union

from .._text import are, plural
from ..errors import InvalidFileError, TableNotFoundError
from ..findings import lookup
from ..io.locations import control_character, describe
from ..regions import MAX_FINDINGS_PER_CODE, Finding, TableFinding, cap_per_code
from .numbers import INT64_MAX, INT64_MIN, datable_ms, in_range


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
    """Every field id in a schema, nested ones included, in order (fields without an integer id are skipped)."""
    out: list[SchemaField] = []

    def visit_type(t: Any, prefix: str) -> None:
        if not isinstance(t, dict):
            return
        kind = t.get("type")
        if kind == "struct":
            fields = t.get("fields")
            for f in fields if isinstance(fields, list) else []:
                if not isinstance(f, dict) or not _is_int(f.get("id")):
                    continue
                name = f"{prefix}{f.get('name')}"
                out.append(SchemaField(f["id"], name, f.get("type"), bool(f.get("required"))))
                visit_type(f.get("type"), name + ".")
        elif kind == "list":
            name = prefix + "element"
            if _is_int(t.get("element-id")):
                out.append(SchemaField(t["element-id"], name, t.get("element"), bool(t.get("element-required"))))
            visit_type(t.get("element"), name + ".")
        elif kind == "map":
            for part in ("key", "value"):
                name = prefix + part
                if _is_int(t.get(f"{part}-id")):
                    out.append(SchemaField(t[f"{part}-id"], name, t.get(part), part == "key"))
                visit_type(t.get(part), name + ".")

    visit_type({"type": "struct", "fields": schema.get("fields", [])}, "")
    return out


#: Field ids of one statistics blob read from the metadata (a sketch is computed from a few columns).
MAX_BLOB_FIELDS = 10_000


def _is_int(value: Any) -> bool:
    """A JSON integer within int64 (``true`` is not a number): cheap, since a damaged file may hold millions."""
    return type(value) is int and INT64_MIN <= value <= INT64_MAX


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
    timestamp_ms: Optional[int]  # None: missing, or no datetime can hold it (a finding says which)
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
        """A snapshot from its JSON object; problems are dropped (see :class:`TableMetadata` for findings)."""
        snap = MetadataReader({}, "").snapshot(d, "snapshot", 2)
        if snap is None:
            raise InvalidFileError(f"not a snapshot: {_show(d)}", None, "iceberg.metadata-field-missing")
        return snap


@dataclass
class StatisticsFile:
    """A table statistics (Puffin) file or a partition statistics file named by the metadata."""

    kind: str  # "table" or "partition"
    snapshot_id: int
    path: str
    file_size_in_bytes: Optional[int]
    file_footer_size_in_bytes: Optional[int]
    blob_metadata: list[dict[str, Any]] = field(default_factory=list)


_SHOW = reprlib.Repr()
_SHOW.maxstring, _SHOW.maxother, _SHOW.maxlist, _SHOW.maxdict, _SHOW.maxlevel = 60, 60, 4, 3, 2


def _show(value: Any) -> str:
    """A short, bounded rendering of a JSON value for a message (a huge array costs no more than a small one)."""
    return _SHOW.repr(value)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


_MISSING = object()
#: An array of the metadata up to this long is read item by item, its findings in array order.
OBJECTS_ONE_BY_ONE = 1_000


class MetadataReader:
    """Reads a ``metadata.json`` object field by field for its format version; every problem is a
    finding naming the file and the JSON path, and what can be read is read."""

    def __init__(self, raw: Any, file: str) -> None:
        self.raw = raw
        self.file = file
        self._found: list[Finding] = []
        self._counts: Counter = Counter()

    # ---- findings -------------------------------------------------------------------------
    def add(self, code: str, message: Union[str, Callable[[], str]]) -> None:
        """Record one finding; past ``MAX_FINDINGS_PER_CODE`` of a code only the count grows (a
        ``message`` given as a function is then not even formatted)."""
        self._counts[code] += 1
        if self._counts[code] > MAX_FINDINGS_PER_CODE + 1:
            return  # a huge array of the same mistake costs a count, not a finding each
        if callable(message):
            message = message()
        entry = lookup(code)
        self._found.append(TableFinding(code=code, severity=entry.severity, offset=None, message=message,
                                        hint=entry.hint, file=self.file))

    def is_object(self, value: Any, path: str) -> bool:
        """Whether ``value`` is a JSON object; if not, one finding says so (the caller skips it)."""
        if isinstance(value, dict):
            return True
        self.add("iceberg.metadata-field-type",
                 lambda: f"{path} is {_json_type(value)} ({_show(value)}), not an object; skipped")
        return False

    def objects(self, items: Optional[list], path: str) -> Iterator[tuple[int, dict]]:
        """``(index, item)`` of each JSON object of an array; any other item is a finding at ``path[index]``
        and skipped.  Up to ``OBJECTS_ONE_BY_ONE`` items the findings come in array order; a longer array's
        other items are reported first and, past the per-code cap, only counted (a million numbers cost one
        pass, not a finding each)."""
        items = items or []
        if len(items) <= OBJECTS_ONE_BY_ONE:
            for i, v in enumerate(items):
                if self.is_object(v, f"{path}[{i}]"):
                    yield i, v
            return
        from itertools import compress, repeat
        from operator import is_, is_not

        others = list(compress(range(len(items)), map(is_not, map(type, items), repeat(dict))))  # one C-level pass
        code = "iceberg.metadata-field-type"
        for n, i in enumerate(others):
            if self._counts[code] > MAX_FINDINGS_PER_CODE:
                self._counts[code] += len(others) - n  # counted, never formatted
                break
            self.is_object(items[i], f"{path}[{i}]")
        if not others:
            yield from enumerate(items)
        elif len(others) < len(items):
            yield from compress(enumerate(items), map(is_, map(type, items), repeat(dict)))

    @property
    def findings(self) -> list[Finding]:
        """The findings, at most ``MAX_FINDINGS_PER_CODE`` of a code, then one ``findings.capped`` per code."""
        listed = cap_per_code(self._found)
        if max(self._counts.values(), default=0) <= MAX_FINDINGS_PER_CODE:
            return listed
        out = []
        for f in listed:
            if f.code == "findings.capped":
                code = f.message.split(" more ", 1)[1].split(" ", 1)[0]
                n = self._counts[code]
                more = n - MAX_FINDINGS_PER_CODE
                f = replace(f, message=f"{plural(more, f'more {code} finding')} {are(more)} not listed "
                                       f"({n:,} in all; a file lists at most {MAX_FINDINGS_PER_CODE:,} of one code)")
            out.append(f)
        return out

    # ---- typed fields --------------------------------------------------------------------
    def get(self, obj: dict, key: str, path: str, kind: str, required: bool = False,
            what: str = "") -> Any:
        """``obj[key]`` when it has the JSON type ``kind`` (int, str, dict, list, bool), else None with a finding.

        ``int`` values must fit int64 (``what`` ``"size"`` or ``"count"``: also not negative; ``"timestamp"``:
        epoch milliseconds a datetime can hold, 1677 to 2262); a ``str`` with ``what`` ``"path"`` is checked by
        :meth:`path`.
        """
        value = obj.get(key, _MISSING)
        where = f"{path}.{key}" if path else key
        if value is _MISSING or (value is None and required):
            if required:
                self.add("iceberg.metadata-field-missing", f"{where} is {'missing' if value is _MISSING else 'null'}")
            return None
        if value is None:
            return None
        expected = {"int": int, "str": str, "dict": dict, "list": list, "bool": bool}[kind]
        ok = isinstance(value, expected) and (kind == "bool" or not isinstance(value, bool))
        if not ok:
            names = {"int": "an integer", "str": "a string", "dict": "an object", "list": "an array",
                     "bool": "a boolean"}
            self.add("iceberg.metadata-field-type",
                     f"{where} is {_json_type(value)} ({_show(value)}), not {names[kind]}")
            return None
        if kind == "str" and what == "path":
            self.path(value, where)
        if kind == "int":
            low = 0 if what in ("size", "count") else None
            if not in_range(value, "long", low):
                self.add("iceberg.metadata-number-range",
                         f"{where} is {_show(value)}, outside the range of a "
                         f"{'non-negative ' if low == 0 else ''}long")
                return None
            if what == "timestamp" and not datable_ms(value):
                self.add("iceberg.metadata-number-range",
                         f"{where} is {_show(value)}, outside the times a timestamp can hold (epoch milliseconds "
                         "from 1677-09-21 to 2262-04-11); the time is read as unknown")
                return None
        return value

    def path(self, value: Any, where: str) -> None:
        """A finding for a path with a control character (kept: the I/O layer refuses to open it)."""
        if isinstance(value, str) and control_character(value) is not None:
            self.add("iceberg.path-control-character",
                     lambda: f"{where} {_show(value)} holds the control character {describe(value)}; no file is "
                             "opened at it")

    # ---- parts ---------------------------------------------------------------------------
    def type_(self, t: Any, path: str) -> Any:
        """A schema type with the nested fields that have no usable id left out."""
        if not isinstance(t, dict):
            return t
        kind = t.get("type")
        if kind == "struct":
            fields = self.get(t, "fields", path, "list", required=True) or []
            kept = []
            for i, f in self.objects(fields, f"{path}.fields"):
                fp = f"{path}.fields[{i}]"
                fid = self.get(f, "id", fp, "int", required=True)
                name = self.get(f, "name", fp, "str", required=True)
                if fid is None:
                    continue  # reported; a column without an id cannot be matched to any file
                kept.append(dict(f, name=name if name is not None else f"#{fid}",
                                 type=self.type_(f.get("type"), f"{fp}.type")))
            return dict(t, fields=kept)
        if kind == "list":
            self.get(t, "element-id", path, "int", required=True)
            return dict(t, element=self.type_(t.get("element"), f"{path}.element"))
        if kind == "map":
            self.get(t, "key-id", path, "int", required=True)
            self.get(t, "value-id", path, "int", required=True)
            return dict(t, key=self.type_(t.get("key"), f"{path}.key"),
                        value=self.type_(t.get("value"), f"{path}.value"))
        return t

    def schema(self, s: Any, path: str, id_required: bool) -> Optional[tuple[int, dict]]:
        if not self.is_object(s, path):
            return None
        sid = self.get(s, "schema-id", path, "int", required=id_required)
        if sid is None and (id_required or "schema-id" in s):
            return None
        cleaned = self.type_(dict(s, type="struct"), path)
        return (sid or 0), dict(s, fields=cleaned.get("fields", []))

    def fields_by_id(self, listed: Optional[list], name: str, id_key: str) -> dict[int, list[dict]]:
        """Partition specs or sort orders: ``{id: [field objects]}``; an entry that is not an object or
        has no id is reported and skipped, the first of two with one id is kept."""
        out: dict[int, list[dict]] = {}
        for i, item in self.objects(listed, name):
            p = f"{name}[{i}]"
            got = self.get(item, id_key, p, "int", required=True)
            fields = self.get(item, "fields", p, "list", required=True) or []
            if got is not None:
                out.setdefault(got, [f for f in fields if isinstance(f, dict)])
        return out

    def snapshot(self, d: Any, path: str, version: int) -> Optional[Snapshot]:
        if not self.is_object(d, path):
            return None
        sid = self.get(d, "snapshot-id", path, "int", required=True)
        if sid is None:
            return None  # reported: nothing can refer to a snapshot without an id
        summary_raw = self.get(d, "summary", path, "dict", required=version >= 2)
        summary: dict[str, str] = {}
        for k, v in (summary_raw or {}).items():
            if isinstance(v, (dict, list)):
                self.add("iceberg.metadata-field-type", f"{path}.summary.{k} is {_json_type(v)} ({_show(v)}), "
                         "not a string; skipped")
                continue
            summary[str(k)] = v if isinstance(v, str) else json.dumps(v)
        if summary_raw is not None and version >= 2 and "operation" not in summary:
            self.add("iceberg.metadata-field-missing", f"{path}.summary.operation is missing")
        manifest_list = self.get(d, "manifest-list", path, "str", required=version >= 2, what="path")
        manifests = self.get(d, "manifests", path, "list") or []
        kept_manifests = [m for m in manifests if isinstance(m, str)]
        for i, m in enumerate(kept_manifests[:MAX_FINDINGS_PER_CODE + 1]):
            self.path(m, f"{path}.manifests[{i}]")
        if len(kept_manifests) != len(manifests):
            self.add("iceberg.metadata-field-type", f"{path}.manifests has {len(manifests) - len(kept_manifests)} "
                     "entries that are not strings; skipped")
        seq = self.get(d, "sequence-number", path, "int", required=version >= 2)
        ts = self.get(d, "timestamp-ms", path, "int", required=True, what="timestamp")
        return Snapshot(
            snapshot_id=sid,
            parent_snapshot_id=self.get(d, "parent-snapshot-id", path, "int"),
            sequence_number=seq or 0,
            timestamp_ms=ts,
            manifest_list=manifest_list,
            manifests=kept_manifests,
            summary=summary,
            schema_id=self.get(d, "schema-id", path, "int"),
            first_row_id=self.get(d, "first-row-id", path, "int", what="count"),
            added_rows=self.get(d, "added-rows", path, "int", what="count"),
        )

    def statistics(self, s: Any, path: str, kind: str) -> Optional[StatisticsFile]:
        if not self.is_object(s, path):
            return None
        sid = self.get(s, "snapshot-id", path, "int", required=True)
        stats_path = self.get(s, "statistics-path", path, "str", required=True, what="path")
        size = self.get(s, "file-size-in-bytes", path, "int", required=True, what="size")
        if sid is None or stats_path is None:
            return None  # reported: a statistics file is known by its snapshot and its path
        if kind == "partition":
            return StatisticsFile("partition", sid, stats_path, size, None, [])
        footer = self.get(s, "file-footer-size-in-bytes", path, "int", required=True, what="size")
        blobs = []
        for i, b in self.objects(self.get(s, "blob-metadata", path, "list", required=True), f"{path}.blob-metadata"):
            bp = f"{path}.blob-metadata[{i}]"
            fields = self.get(b, "fields", bp, "list", required=True) or []
            if len(fields) > MAX_BLOB_FIELDS:  # a damaged file may list millions: each parse would walk them
                self.add("iceberg.metadata-list-long", f"{bp}.fields lists {len(fields):,} field ids; the first "
                         f"{MAX_BLOB_FIELDS:,} are read")
                fields = fields[:MAX_BLOB_FIELDS]
            ids = [f for f in fields if _is_int(f)]
            if len(ids) != len(fields):
                self.add("iceberg.metadata-field-type", f"{bp}.fields holds {_show(fields)}: field ids are "
                         "integers; the others are skipped")
            props = self.get(b, "properties", bp, "dict") or {}
            blobs.append({
                "type": self.get(b, "type", bp, "str", required=True) or "",
                "snapshot-id": self.get(b, "snapshot-id", bp, "int", required=True),
                "sequence-number": self.get(b, "sequence-number", bp, "int", required=True),
                "fields": ids,
                "properties": {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in props.items()},
            })
        return StatisticsFile("table", sid, stats_path, size, footer, blobs)


@dataclass
class TableMetadata:
    """A parsed ``metadata.json``, read field by field: ``raw`` keeps the whole JSON object,
    ``findings`` every problem (named by JSON path); the properties give what could be read."""

    raw: dict[str, Any]
    location_read: str = ""
    findings: list[Finding] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        self._read()

    @classmethod
    def from_bytes(cls, data: bytes, location_read: str = "") -> "TableMetadata":
        """Parse a metadata file; only bytes that are not a JSON object raise (:class:`TableNotFoundError`)."""
        try:
            raw = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            pos = getattr(exc, "pos", None)
            raise TableNotFoundError(f"{location_read}: not valid JSON table metadata: {exc}", pos,
                                     "metadata-json", location=location_read) from exc
        if not isinstance(raw, dict):
            raise TableNotFoundError(f"{location_read}: the JSON is {_json_type(raw)}, not an object: not "
                                     "Iceberg table metadata", 0, "metadata-json", location=location_read)
        return cls(raw, location_read)

    # ---- reading, once -------------------------------------------------------------------
    def _read(self) -> None:
        r = MetadataReader(self.raw, self.location_read)
        self._read_header(r)
        self._read_schemas(r)
        self._read_specs_and_orders(r)
        self._read_snapshots(r)
        self._read_refs(r)
        self._read_statistics_and_logs(r)
        self.findings = r.findings

    def _read_header(self, r: MetadataReader) -> None:
        """The format version (told from the fields when absent), location, uuid, times and properties."""
        raw = self.raw
        version = r.get(raw, "format-version", "", "int", required=True)
        if version is None:
            version = 3 if "next-row-id" in raw else 2 if "schemas" in raw else 1
        elif version not in (1, 2, 3):
            r.add("iceberg.metadata-format-version", f"format-version is {_show(version)}; read as "
                  f"{min(max(version, 1), 3)}")
            version = min(max(version, 1), 3)
        self._version = v = version
        self._location = r.get(raw, "location", "", "str", required=True, what="path") or ""
        self._uuid = r.get(raw, "table-uuid", "", "str", required=v >= 2)
        r.get(raw, "last-sequence-number", "", "int", required=v >= 2, what="count")
        self._last_updated = r.get(raw, "last-updated-ms", "", "int", required=True)
        r.get(raw, "last-column-id", "", "int", required=True)
        props = r.get(raw, "properties", "", "dict") or {}
        self._properties = {str(k): val if isinstance(val, str) else json.dumps(val) for k, val in props.items()}

    def _read_schemas(self, r: MetadataReader) -> None:
        """The schemas by id (v1's single ``schema`` too) and the current one."""
        raw, v = self.raw, self._version
        schemas: dict[int, dict] = {}
        listed = r.get(raw, "schemas", "", "list", required=v >= 2)
        for i, s in r.objects(listed, "schemas"):
            got = r.schema(s, f"schemas[{i}]", id_required=True)
            if got is not None:
                if got[0] in schemas:
                    r.add("iceberg.metadata-id-duplicate", f"schemas[{i}].schema-id {got[0]} is also an earlier "
                          "schema's id; skipped")
                else:
                    schemas[got[0]] = got[1]
        if listed is None:
            single = r.get(raw, "schema", "", "dict", required=v == 1)
            got = r.schema(single, "schema", id_required=False) if single is not None else None
            if got is not None:
                schemas[got[0]] = got[1]
        self._schemas = schemas
        current_schema = r.get(raw, "current-schema-id", "", "int", required=v >= 2 and listed is not None)
        if current_schema is not None and schemas and current_schema not in schemas:
            r.add("iceberg.metadata-id-unresolved", f"current-schema-id {current_schema} is not the id of any "
                  f"schema (schemas: {_show(sorted(schemas))})")
            current_schema = None
        if current_schema not in schemas:
            single = raw.get("schema")
            current_schema = single.get("schema-id", 0) if isinstance(single, dict) and _is_int(
                single.get("schema-id", 0)) and single.get("schema-id", 0) in schemas else next(iter(schemas), None)
        self._current_schema = current_schema

    def _read_specs_and_orders(self, r: MetadataReader) -> None:
        """The partition specs (v1's single ``partition-spec`` too), the sort orders and the default of each."""
        raw, v = self.raw, self._version
        listed = r.get(raw, "partition-specs", "", "list", required=v >= 2)
        specs = r.fields_by_id(listed, "partition-specs", "spec-id")
        if listed is None:
            spec = r.get(raw, "partition-spec", "", "list", required=v == 1)
            specs[0] = [f for f in spec or [] if isinstance(f, dict)]
        self._specs = specs
        default_spec = r.get(raw, "default-spec-id", "", "int", required=v >= 2)
        if default_spec is not None and specs and default_spec not in specs:
            r.add("iceberg.metadata-id-unresolved", f"default-spec-id {default_spec} is not the id of any "
                  f"partition spec (specs: {_show(sorted(specs))})")
            default_spec = None
        self._default_spec = default_spec if default_spec is not None else next(iter(specs), 0)
        orders = r.fields_by_id(r.get(raw, "sort-orders", "", "list", required=v >= 2), "sort-orders", "order-id")
        self._orders = orders
        default_order = r.get(raw, "default-sort-order-id", "", "int", required=v >= 2)
        if default_order is not None and orders and default_order not in orders:
            r.add("iceberg.metadata-id-unresolved", f"default-sort-order-id {default_order} is not the id of any "
                  f"sort order (orders: {_show(sorted(orders))})")
            default_order = None
        self._default_order = default_order

    def _read_snapshots(self, r: MetadataReader) -> None:
        """The snapshots (a duplicate id skipped, an unknown schema id or a self-parent dropped) and the current
        one."""
        schemas = self._schemas
        snapshots: list[Snapshot] = []
        by_id: dict[int, Snapshot] = {}
        for i, d in r.objects(r.get(self.raw, "snapshots", "", "list"), "snapshots"):
            snap = r.snapshot(d, f"snapshots[{i}]", self._version)
            if snap is None:
                continue
            if snap.snapshot_id in by_id:
                r.add("iceberg.metadata-id-duplicate", f"snapshots[{i}].snapshot-id {snap.snapshot_id} is also an "
                      "earlier snapshot's id; skipped")
                continue
            if snap.schema_id is not None and schemas and snap.schema_id not in schemas:
                r.add("iceberg.metadata-id-unresolved", f"snapshots[{i}].schema-id {snap.schema_id} is not the id "
                      "of any schema; the current schema is used")
                snap.schema_id = None
            by_id[snap.snapshot_id] = snap
            snapshots.append(snap)
        for i, snap in enumerate(snapshots):
            if snap.parent_snapshot_id == snap.snapshot_id:
                r.add("iceberg.metadata-id-unresolved", f"snapshot {snap.snapshot_id} names itself as its parent")
                snap.parent_snapshot_id = None
        self._snapshots = snapshots
        self._by_id = by_id
        current = r.get(self.raw, "current-snapshot-id", "", "int")
        if current == -1:
            current = None
        if current is not None and current not in by_id:
            r.add("iceberg.metadata-id-unresolved", f"current-snapshot-id {current} is not the id of any snapshot "
                  f"({plural(len(snapshots), 'snapshot', sep='')}); the table is read as having no current snapshot")
            current = None
        self._current = current

    def _read_refs(self, r: MetadataReader) -> None:
        """The named references whose snapshot is known."""
        refs: dict[str, dict[str, Any]] = {}
        for name, ref in (r.get(self.raw, "refs", "", "dict") or {}).items():
            p = f"refs.{name}"
            if not r.is_object(ref, p):
                continue
            sid = r.get(ref, "snapshot-id", p, "int", required=True)
            r.get(ref, "type", p, "str", required=True)
            if sid is None:
                continue
            if sid not in self._by_id:
                r.add("iceberg.metadata-id-unresolved", f"{p}.snapshot-id {sid} is not the id of any snapshot")
                continue
            refs[str(name)] = ref
        self._refs = refs

    def _read_statistics_and_logs(self, r: MetadataReader) -> None:
        """The statistics files, v3's next row id, and the snapshot and metadata logs' fields checked."""
        raw = self.raw
        stats: list[StatisticsFile] = []
        for key, kind in (("statistics", "table"), ("partition-statistics", "partition")):
            for i, s in r.objects(r.get(raw, key, "", "list"), key):
                got = r.statistics(s, f"{key}[{i}]", kind)
                if got is not None:
                    stats.append(got)
        self._statistics = stats
        self._next_row_id = r.get(raw, "next-row-id", "", "int", required=self._version >= 3, what="count")
        for key in ("snapshot-log", "metadata-log"):
            log = r.get(raw, key, "", "list")
            for i, e in enumerate((log or [])[:100_000]):
                if not isinstance(e, dict):
                    continue
                r.get(e, "timestamp-ms", f"{key}[{i}]", "int", what="timestamp")
                if key == "metadata-log":
                    r.path(e.get("metadata-file"), f"metadata-log[{i}].metadata-file")

    # ---- what was read -------------------------------------------------------------------
    @property
    def format_version(self) -> int:
        return self._version

    @property
    def location(self) -> str:
        return self._location

    @property
    def table_uuid(self) -> Optional[str]:
        return self._uuid

    @property
    def properties(self) -> dict[str, str]:
        return dict(self._properties)

    @property
    def current_snapshot_id(self) -> Optional[int]:
        return self._current

    @property
    def schemas(self) -> dict[int, dict[str, Any]]:
        return dict(self._schemas)

    @property
    def current_schema_id(self) -> Optional[int]:
        return self._current_schema

    def schema(self, schema_id: Optional[int] = None) -> dict[str, Any]:
        """A schema by id (the current one by default, or when the id is unknown); an empty struct without any."""
        sid = self._current_schema if schema_id is None else schema_id
        got = self._schemas.get(sid) or self._schemas.get(self._current_schema)
        return got if got is not None else {"type": "struct", "fields": []}

    def fields(self, schema_id: Optional[int] = None) -> list[SchemaField]:
        return flatten_schema(self.schema(schema_id))

    def all_field_ids(self) -> set[int]:
        """Field ids of every schema the table ever had."""
        ids: set[int] = set()
        for s in self._schemas.values():
            ids.update(f.id for f in flatten_schema(s))
        return ids

    @property
    def partition_specs(self) -> dict[int, list[dict[str, Any]]]:
        return {k: list(v) for k, v in self._specs.items()}

    @property
    def snapshots(self) -> list[Snapshot]:
        return list(self._snapshots)

    def snapshot(self, snapshot_id: Optional[int] = None) -> Optional[Snapshot]:
        """A snapshot by id, or the current one; None when the table has none."""
        sid = self._current if snapshot_id is None else _opt_int(snapshot_id)
        return None if sid is None else self._by_id.get(sid)

    @property
    def next_row_id(self) -> Optional[int]:
        """v3 row lineage: the first row id the next commit assigns (None before v3)."""
        return self._next_row_id

    @property
    def last_updated_ms(self) -> Optional[int]:
        return self._last_updated

    @property
    def sort_orders(self) -> dict[int, list[dict[str, Any]]]:
        return {k: list(v) for k, v in self._orders.items()}

    @property
    def default_sort_order_id(self) -> Optional[int]:
        return self._default_order

    @property
    def default_spec_id(self) -> int:
        return self._default_spec

    @property
    def refs(self) -> dict[str, dict[str, Any]]:
        return dict(self._refs)

    @property
    def statistics(self) -> list[StatisticsFile]:
        """Table statistics files, then partition statistics files."""
        return list(self._statistics)
