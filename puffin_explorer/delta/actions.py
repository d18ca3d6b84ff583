"""Delta log actions checked as they are read: every wrong field is a finding naming the file, the line and the field.

The rule (Delta PROTOCOL.md, "Actions"): an ``add`` or ``remove`` whose identity is
unusable — no string ``path``, or a ``deletionVector`` whose fields have the wrong
types or impossible sizes — is skipped, since log replay cannot tell which logical
file it adds or removes.  A field that only describes an action (``partitionValues``,
``size``, ``stats``, ``readerFeatures``, ``operationParameters``, ...) is dropped and
the action kept.  A descriptor of the right types whose values still cannot be read
(a storageType that is not u, p or i, a path that is not Z85, an inline DV that does
not decode, a cardinality above numRecords) is reported and kept, so the table shows
the DV the log names.  Unknown actions and fields pass through untouched.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional

from .._text import plural
from ..findings import make
from ..iceberg.paths import basename
from ..regions import Severity, TableFinding
from .descriptor import DVDescriptor

#: Largest values of the protocol's Int and Long fields.
INT_MAX = 2 ** 31 - 1
LONG_MAX = 2 ** 63 - 1


@dataclass(frozen=True)
class LogFinding(TableFinding):
    """A finding about one action of the log.

    ``line`` is the 1-based line of a JSON commit (or the 1-based row of a Parquet
    checkpoint), ``field`` the dotted name of the field (``add.deletionVector.offset``).
    """

    line: Optional[int] = None
    field: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["line"] = self.line
        d["field"] = self.field
        return d


def shown(value: Any) -> str:
    """A value as a message quotes it: JSON, cut at 60 characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


@dataclass(frozen=True)
class Place:
    """Where something was read: the file, the 1-based line (or checkpoint row) and that line's byte offset."""

    file: str
    line: Optional[int] = None
    offset: Optional[int] = None
    unit: str = "line"

    def finding(self, code: str, field: str, problem: str, severity: Optional[Severity] = None) -> LogFinding:
        """``<file name> line <n>: <field>: <problem>`` as a finding of ``code``."""
        name = basename(self.file)
        where = f"{name} {self.unit} {self.line}" if self.line is not None else name
        message = f"{where}: {field}: {problem}" if field else f"{where}: {problem}"
        base = make(code, self.offset, message)
        return LogFinding(code=base.code, severity=severity or base.severity, offset=self.offset, message=message,
                          hint=base.hint, file=self.file, line=self.line, field=field)


def is_int(value: Any) -> bool:
    """A JSON integer (``true`` and ``1.0`` are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def int_problem(value: Any, high: int = LONG_MAX, low: int = 0) -> Optional[str]:
    """Why ``value`` is not an integer in ``[low, high]`` (None when it is)."""
    if not is_int(value):
        return f"expected an integer, got {shown(value)}"
    if not low <= value <= high:
        return f"expected an integer from {low:,} to {high:,}, got {value:,}"
    return None


def _string_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and (v is None or isinstance(v, str))
                                           for k, v in value.items())


def _string_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


#: Optional fields that describe an action: action → [(field, what it must be, test)].
_DESCRIPTIVE: dict[str, list[tuple[str, str, Any]]] = {
    "add": [("partitionValues", "an object of strings", _string_map),
            ("size", "an integer", lambda v: int_problem(v) is None),
            ("modificationTime", "an integer", lambda v: int_problem(v, low=-LONG_MAX) is None),
            ("dataChange", "true or false", lambda v: isinstance(v, bool)),
            ("tags", "an object of strings", _string_map),
            ("baseRowId", "an integer", lambda v: int_problem(v) is None),
            ("defaultRowCommitVersion", "an integer", lambda v: int_problem(v) is None),
            ("stats_parsed", "an object", lambda v: isinstance(v, dict))],
    "remove": [("deletionTimestamp", "an integer", lambda v: int_problem(v, low=-LONG_MAX) is None),
               ("size", "an integer", lambda v: int_problem(v) is None)],
    "metaData": [("id", "a string", lambda v: isinstance(v, str)),
                 ("schemaString", "a string", lambda v: isinstance(v, str)),
                 ("partitionColumns", "a list of strings", _string_list),
                 ("configuration", "an object of strings", _string_map),
                 ("createdTime", "an integer", lambda v: int_problem(v, low=-LONG_MAX) is None)],
    "protocol": [("minReaderVersion", "an integer", lambda v: int_problem(v, INT_MAX) is None),
                 ("minWriterVersion", "an integer", lambda v: int_problem(v, INT_MAX) is None),
                 ("readerFeatures", "a list of strings", _string_list),
                 ("writerFeatures", "a list of strings", _string_list)],
    "commitInfo": [("timestamp", "an integer", lambda v: int_problem(v, low=-LONG_MAX) is None),
                   ("inCommitTimestamp", "an integer", lambda v: int_problem(v, low=-LONG_MAX) is None),
                   ("operation", "a string", lambda v: isinstance(v, str)),
                   ("operationParameters", "an object", lambda v: isinstance(v, dict))],
    "sidecar": [("sizeInBytes", "an integer", lambda v: int_problem(v) is None)],
}


def _descriptor_fields(raw: Any, prefix: str, place: Place, out: list) -> bool:
    """Check a ``deletionVector`` struct's types and ranges; False (with findings) when it cannot be used."""
    if not isinstance(raw, dict):
        out.append(place.finding("delta.action-field", prefix, f"expected an object, got {shown(raw)}"))
        return False
    ok = True
    checks = [("storageType", True, lambda v: None if isinstance(v, str) else f"expected a string, got {shown(v)}"),
              ("pathOrInlineDv", True, lambda v: None if isinstance(v, str) else f"expected a string, got {shown(v)}"),
              ("offset", False, lambda v: int_problem(v, INT_MAX)),
              ("sizeInBytes", True, lambda v: int_problem(v, INT_MAX)),
              ("cardinality", True, lambda v: int_problem(v)),
              ("maxRowIndex", False, lambda v: int_problem(v))]
    for name, required, check in checks:
        value = raw.get(name)
        if value is None:
            if required:
                out.append(place.finding("delta.action-field", f"{prefix}.{name}", "missing"))
                ok = False
            continue
        problem = check(value)
        if problem:
            out.append(place.finding("delta.action-field", f"{prefix}.{name}", problem))
            ok = False
    return ok


def stats_records(stats: Any) -> tuple[Optional[int], Optional[str], str]:
    """``(numRecords, problem, field)`` of a ``stats`` JSON string: the count (None when absent or bad),
    why it is bad (None when it is not) and the field the problem is in."""
    if stats is None:
        return None, None, "stats"
    if not isinstance(stats, str):
        return None, f"expected a JSON string, got {shown(stats)}", "stats"
    try:
        parsed = json.loads(stats)
    except (ValueError, RecursionError) as exc:
        return None, f"not JSON: {exc}", "stats"
    if not isinstance(parsed, dict):
        return None, f"expected a JSON object, got {shown(parsed)}", "stats"
    return _count(parsed.get("numRecords"))


def _count(value: Any) -> tuple[Optional[int], Optional[str], str]:
    if value is None:
        return None, None, "stats.numRecords"
    problem = int_problem(value)
    return (None, problem, "stats.numRecords") if problem else (value, None, "stats.numRecords")


def parsed_records(stats_parsed: Any) -> tuple[Optional[int], Optional[str], str]:
    """Like :func:`stats_records` for a checkpoint's ``stats_parsed`` struct."""
    if not isinstance(stats_parsed, dict):
        return None, None, "stats_parsed"
    n, problem, _ = _count(stats_parsed.get("numRecords"))
    return n, problem, "stats_parsed.numRecords"


def checked_action(kind: str, body: dict[str, Any], place: Place, out: list) -> Optional[dict[str, Any]]:
    """The action's body with wrong descriptive fields dropped, or None when it must be skipped; findings go
    to ``out``."""
    clean = dict(body)
    if kind in ("add", "remove", "sidecar"):
        path = body.get("path")
        if not isinstance(path, str) or not path:
            problem = "missing" if path is None else f"expected a non-empty string, got {shown(path)}"
            out.append(place.finding("delta.action-field", f"{kind}.path", f"{problem}; the {kind} action is skipped"))
            return None
    if kind in ("add", "remove") and body.get("deletionVector") is not None:
        found: list = []
        if not _descriptor_fields(body["deletionVector"], f"{kind}.deletionVector", place, found):
            out.extend(_skipped(f, kind) for f in found)
            return None
    for name, what, test in _DESCRIPTIVE.get(kind, ()):
        value = body.get(name)
        if value is not None and not test(value):
            out.append(place.finding("delta.action-field", f"{kind}.{name}",
                                     f"expected {what}, got {shown(value)}; the field is ignored"))
            clean.pop(name)
    if kind == "add":
        _check_add(clean, place, out)
    return clean


def _skipped(f: LogFinding, kind: str) -> LogFinding:
    message = f"{f.message}; the {kind} action is skipped"
    return LogFinding(code=f.code, severity=f.severity, offset=f.offset, message=message, hint=f.hint,
                      file=f.file, line=f.line, field=f.field)


def _check_add(add: dict[str, Any], place: Place, out: list) -> None:
    records, problem, field = stats_records(add.get("stats"))
    if problem:
        out.append(place.finding("delta.action-field", f"add.{field}", f"{problem}; numRecords is unknown"))
        add.pop("stats", None)
    if records is None and "stats_parsed" in add:
        records, problem, field = parsed_records(add["stats_parsed"])
        if problem:
            out.append(place.finding("delta.action-field", f"add.{field}", f"{problem}; numRecords is unknown"))
            add.pop("stats_parsed")
    raw = add.get("deletionVector")
    if raw is None:
        return
    dv = DVDescriptor.from_action(raw)
    for code, name, message in dv.problems():
        out.append(place.finding(code, f"add.deletionVector.{name}", message))
    if records is not None and dv.cardinality > records:
        out.append(place.finding("delta.dv-cardinality-range", "add.deletionVector.cardinality",
                                 f"cardinality {dv.cardinality:,} is more than the file's {plural(records, 'row')} "
                                 f"(numRecords)"))


def num_records(add: dict[str, Any]) -> Optional[int]:
    """``numRecords`` from ``stats`` (JSON string) or ``stats_parsed``; None when absent or not a count."""
    records = stats_records(add.get("stats"))[0]
    return records if records is not None else parsed_records(add.get("stats_parsed"))[0]


__all__ = ["LogFinding", "Place", "checked_action", "num_records", "stats_records", "int_problem", "is_int",
           "shown", "INT_MAX", "LONG_MAX"]
