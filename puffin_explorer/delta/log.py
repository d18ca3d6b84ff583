"""The Delta transaction log: list ``_delta_log/``, read JSON commits and Parquet checkpoints, replay actions.

Read with ``json`` and pyarrow, not with ``deltalake``: its add actions carry no
DV descriptors (``get_add_actions()`` has no ``deletionVector`` columns), it
opens storage through its own object-store options rather than this project's
I/O layer and path remapping, and it rejects a damaged log where an explorer has
to report each problem (a bad line, a missing commit) and go on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .._pylist import to_pylist
from .._text import plural
from ..errors import (EndpointUnreachableError, NotInTableError, SourceError, StorageUnavailableError,
                      TableNotFoundError)
from ..findings import make
from ..iceberg.paths import TableIO, join
from ..regions import Finding, TableFinding
from .actions import INT_MAX, Place, checked_action, int_problem, num_records, shown
from .descriptor import DVDescriptor

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CLASSIC = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTI = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
_UUID_CP = re.compile(r"^(\d{20})\.checkpoint\.[0-9a-fA-F-]{36}\.(json|parquet)$")
_CHECKPOINT_COLUMNS = ("add", "remove", "metaData", "protocol", "sidecar")


def _lf(code: str, file: str, message: str, offset: Optional[int] = None) -> TableFinding:
    base = make(code, offset, message)
    return TableFinding(code=base.code, severity=base.severity, offset=offset, message=message, hint=base.hint,
                        file=file)


@dataclass
class LogFiles:
    """What ``_delta_log/`` holds: commit versions and complete checkpoints (version → file names)."""

    commits: dict[int, str] = field(default_factory=dict)
    checkpoints: dict[int, list[str]] = field(default_factory=dict)
    last_checkpoint: Optional[dict[str, Any]] = None

    @property
    def latest(self) -> Optional[int]:
        versions = list(self.commits) + list(self.checkpoints)
        return max(versions) if versions else None


@dataclass
class FileAction:
    """A live data file: its add action and its DV descriptor (if any)."""

    path: str
    add: dict[str, Any]
    dv: Optional[DVDescriptor]
    num_records: Optional[int]
    version: int  # the version that added it

    @property
    def key(self) -> tuple[str, str]:
        return (self.path, self.dv.unique_id if self.dv else "")

    @property
    def partition_values(self) -> dict[str, Optional[str]]:
        """``partitionValues`` (empty when absent or ignored as damaged)."""
        return dict(self.add.get("partitionValues") or {})

    @property
    def size(self) -> Optional[int]:
        """The add action's ``size`` in bytes (None when absent or ignored as damaged)."""
        return self.add.get("size")


@dataclass
class State:
    """The table at one version: protocol, metadata and the live files, keyed by (path, DV id)."""

    version: int = -1
    protocol: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    files: dict[tuple[str, str], FileAction] = field(default_factory=dict)
    #: versions whose commit was missing or unreadable when this state was rebuilt: its files are not the log's,
    #: so every count of them is unknown (a finding names each)
    missing: list[int] = field(default_factory=list)

    def copy(self) -> "State":
        return State(self.version, dict(self.protocol), dict(self.metadata), dict(self.files), list(self.missing))

    def apply(self, version: int, actions: list[tuple[str, dict[str, Any]]]) -> None:
        """Apply one version's actions in order (a remove drops the logical file with the same path and DV).

        The actions are the log reader's checked ones: paths are strings and descriptors well typed."""
        for kind, body in actions:
            if kind == "add":
                dv = DVDescriptor.from_action(body["deletionVector"]) if body.get("deletionVector") else None
                fa = FileAction(body["path"], body, dv, num_records(body), version)
                self.files[fa.key] = fa
            elif kind == "remove":
                dv = body.get("deletionVector")
                uid = DVDescriptor.from_action(dv).unique_id if dv else ""
                self.files.pop((body["path"], uid), None)
            elif kind == "metaData":
                self.metadata = body
            elif kind == "protocol":
                self.protocol = body
        self.version = version


class DeltaLog:
    """Reads one table's log through :class:`TableIO`; every problem becomes a finding in ``findings``."""

    def __init__(self, io: TableIO, table_root: str) -> None:
        self.io = io
        self.root = table_root
        self.log_dir = join(table_root, "_delta_log")
        self.findings: list[Finding] = []
        self._commits: dict[int, list[tuple[str, dict[str, Any]]]] = {}
        self._checkpoints: dict[int, Optional[list[tuple[str, dict[str, Any]]]]] = {}
        self.files = self._list()

    # ---- listing ---------------------------------------------------------------------------
    def _list(self) -> LogFiles:
        out = LogFiles()
        multi: dict[tuple[int, int], dict[int, str]] = {}
        names = [name for name, kind, _ in self.io.listdir(self.log_dir) if kind == "file"]
        for name in names:
            if m := _COMMIT.match(name):
                out.commits[int(m.group(1))] = name
            elif m := _CLASSIC.match(name) or _UUID_CP.match(name):
                out.checkpoints.setdefault(int(m.group(1)), [name])
            elif m := _MULTI.match(name):
                multi.setdefault((int(m.group(1)), int(m.group(3))), {})[int(m.group(2))] = name
        for (version, parts), found in multi.items():
            if len(found) == parts and all(1 <= i <= parts for i in found):  # never a range() sized by a name
                out.checkpoints.setdefault(version, [found[i] for i in sorted(found)])
            else:
                self.findings.append(_lf("delta.checkpoint-incomplete", join(self.log_dir, next(iter(found.values()))),
                                         f"checkpoint {version} has {len(found)} of {plural(parts, 'part', sep='')}"))
        if "_last_checkpoint" in names:
            out.last_checkpoint = self._last_checkpoint(join(self.log_dir, "_last_checkpoint"), out.checkpoints)
        return out

    def _last_checkpoint(self, loc: str, checkpoints: dict[int, list[str]]) -> Optional[dict[str, Any]]:
        """``_last_checkpoint`` checked against the listing (it is only a hint: the listing decides)."""
        place = Place(loc)
        try:
            hint = json.loads(self.io.read(loc))
        except SourceError as exc:
            self.findings.append(place.finding("delta.last-checkpoint", "", f"cannot be read: {exc}"))
            return None
        except (ValueError, RecursionError) as exc:
            self.findings.append(place.finding("delta.last-checkpoint", "", f"not JSON: {exc}"))
            return None
        if not isinstance(hint, dict):
            self.findings.append(place.finding("delta.last-checkpoint", "", f"expected a JSON object, got {shown(hint)}"))
            return None
        bad = False
        for name, required, high, low in (("version", True, None, 0), ("size", False, None, 0),
                                          ("parts", False, INT_MAX, 1), ("sizeInBytes", False, None, 0),
                                          ("numOfAddFiles", False, None, 0)):
            value = hint.get(name)
            if value is None:
                if required:
                    self.findings.append(place.finding("delta.last-checkpoint", name, "missing"))
                    bad = True
                continue
            problem = int_problem(value, low=low) if high is None else int_problem(value, high, low)
            if problem:
                self.findings.append(place.finding("delta.last-checkpoint", name, problem))
                bad = bad or name == "version"
        if bad:
            return hint
        v = hint["version"]
        if v not in checkpoints:
            self.findings.append(place.finding("delta.last-checkpoint", "version",
                                               f"names version {v:,}, which has no complete checkpoint"))
        elif v < max(checkpoints):
            self.findings.append(place.finding("delta.last-checkpoint", "version",
                                               f"names version {v:,}; the latest checkpoint is {max(checkpoints):,}"))
        elif is_count(hint.get("parts")) and hint["parts"] != len(checkpoints[v]):
            self.findings.append(place.finding("delta.last-checkpoint", "parts",
                                               f"says {plural(hint['parts'], 'part')}; checkpoint {v:,} has "
                                               f"{len(checkpoints[v]):,}"))
        return hint

    # ---- reading ---------------------------------------------------------------------------
    def commit(self, version: int) -> Optional[list[tuple[str, dict[str, Any]]]]:
        """The actions of one JSON commit as ``(kind, body)``; bad lines become findings; None when the
        file cannot be read (gone since the listing, or not a file: a finding says which)."""
        if version not in self._commits:
            self._commits[version] = self._json_actions(join(self.log_dir, self.files.commits[version]))
        return self._commits[version]

    def _json_actions(self, loc: str) -> Optional[list[tuple[str, dict[str, Any]]]]:
        """The checked actions of a JSON commit (or checkpoint), one per line; None when it cannot be read."""
        actions: list[tuple[str, dict[str, Any]]] = []
        try:
            data = self.io.read(loc)
        except SourceError as exc:
            _raise_outage(exc)
            self.findings.append(_lf("delta.log-unreadable", loc, str(exc)))
            return None
        at = 0
        for number, line in enumerate(data.split(b"\n"), 1):
            start, at = at, at + len(line) + 1
            if not line.strip():
                continue
            place = Place(loc, number, start)
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError) as exc:
                self.findings.append(place.finding("delta.log-json", "", f"not JSON: {exc}"))
                continue
            if not isinstance(obj, dict) or len(obj) != 1 or not isinstance(next(iter(obj.values())), dict):
                self.findings.append(place.finding("delta.log-json", "",
                                                   f"not an object holding one action: {shown(obj)}"))
                continue
            kind, body = next(iter(obj.items()))
            checked = checked_action(kind, body, place, self.findings)
            if checked is not None:
                actions.append((kind, checked))
        return actions

    def checkpoint(self, version: int) -> Optional[list[tuple[str, dict[str, Any]]]]:
        """The checked actions of a (classic, multi-part or UUID-named) checkpoint, sidecars included; None when
        a part or a sidecar cannot be read (a finding says which), so that replay does not start from half a
        table."""
        if version not in self._checkpoints:
            self._checkpoints[version] = self._read_checkpoint(version)
        return self._checkpoints[version]

    def _read_checkpoint(self, version: int) -> Optional[list[tuple[str, dict[str, Any]]]]:
        actions: list[tuple[str, dict[str, Any]]] = []
        for name in self.files.checkpoints[version]:
            loc = join(self.log_dir, name)
            part = self._json_actions(loc) if name.endswith(".json") else self._parquet_actions(loc)
            if part is None:
                return None
            actions += part
        sidecars = [body for kind, body in actions if kind == "sidecar"]
        for sc in sidecars:
            part = self._parquet_actions(join(self.log_dir, "_sidecars", sc["path"]))
            if part is None:
                return None
            actions += part
        return actions

    def _parquet_actions(self, loc: str) -> Optional[list[tuple[str, dict[str, Any]]]]:
        """The checked actions of a Parquet checkpoint part or sidecar (row numbers 1-based); None when it
        cannot be read."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            data = self.io.read(loc)  # counted, and storage failures explained, like every other read
        except SourceError as exc:
            _raise_outage(exc)
            self.findings.append(_lf("delta.log-unreadable", loc, str(exc)))
            return None
        try:
            pf = pq.ParquetFile(pa.BufferReader(data))
            present = [c for c in _CHECKPOINT_COLUMNS if c in pf.schema_arrow.names]
            table = pf.read(columns=present)
            columns = {col: to_pylist(table.column(col)) for col in present}
        except (OSError, ValueError, KeyError, TypeError, NotImplementedError, pa.ArrowException) as exc:
            self.findings.append(_lf("delta.log-unreadable", loc, f"checkpoint cannot be read: {exc}"))
            return None
        out: list[tuple[str, dict[str, Any]]] = []
        for col, rows in columns.items():
            for number, row in enumerate(rows, 1):
                if row is None:
                    continue
                if not isinstance(row, dict):
                    self.findings.append(Place(loc, number, unit="row").finding(
                        "delta.action-field", col, f"expected a struct, got {shown(row)}; the action is skipped"))
                    continue
                checked = checked_action(col, row, Place(loc, number, unit="row"), self.findings)
                if checked is not None:
                    out.append((col, checked))
        return out

    # ---- snapshots -------------------------------------------------------------------------
    def state(self, version: Optional[int] = None) -> State:
        """The table at ``version`` (latest by default): the newest checkpoint at or below it, then commits."""
        target = self.files.latest if version is None else version
        if target is None:
            raise TableNotFoundError(f"no Delta table at {self.root}: {self.log_dir} holds no commits or checkpoints",
                                     location=self.root, code="delta.log-unreadable")
        if target not in self.files.commits and target not in self.files.checkpoints:
            raise NotInTableError(f"{self.root}: the log has no version {target!r} (latest {self.files.latest})")
        state = State()
        start = 0
        for base in sorted((v for v in self.files.checkpoints if v <= target), reverse=True):
            actions = self.checkpoint(base)
            if actions is not None:  # an unreadable checkpoint: an older one, or the commits, rebuild the table
                state.apply(base, actions)
                start = base + 1
                break
        for v in range(start, target + 1):
            actions = self.commit(v) if v in self.files.commits else None
            if actions is None:  # not listed, or listed and unreadable: the version is not what the log says
                why = "is missing" if v not in self.files.commits else "cannot be read"
                self.findings.append(_lf("delta.log-gap", join(self.log_dir, f"{v:020d}.json"),
                                         f"commit {v} {why}: version {target} cannot be rebuilt exactly"))
                state.missing.append(v)
                continue
            state.apply(v, actions)
        state.version = target
        return state

    def replay(self, upto: int, each: Callable[[int, State, list], None]) -> None:
        """Call ``each(version, state_after, actions)`` for every version the log can rebuild, up to ``upto``; a
        commit missing or unreadable is in ``state_after.missing`` of its version and of every later one."""
        commits = sorted(v for v in self.files.commits if 0 <= v <= upto)
        if 0 in self.files.commits:
            state, first = State(), 0
        else:
            bases = [v for v in self.files.checkpoints if v <= upto]
            # the oldest checkpoint that reads (an unreadable one leaves the versions up to the next to it)
            readable = next(((v, a) for v in sorted(bases) if (a := self.checkpoint(v)) is not None), None)
            if readable is None:
                return
            first, actions = readable
            state = State()
            state.apply(first, actions)
            each(first, state, [])
            first += 1
        last = first - 1
        for v in commits:
            if v < first:
                continue
            state.missing += range(last + 1, v)  # versions the listing lacks: the states after them are not the log's
            got = self.commit(v)
            if got is None:  # listed, unreadable now (deleted since the listing): the same
                state.missing.append(v)
            actions = got or []
            state.apply(v, actions)
            each(v, state, actions)
            last = v


def _raise_outage(exc: SourceError) -> None:
    """A storage outage (the I/O layer gave up: timeouts, refusals, 5xx) while reading the log is raised, not
    made a finding: the version would be rebuilt without that file's actions, and counted wrong."""
    if isinstance(exc, (StorageUnavailableError, EndpointUnreachableError)):
        raise exc


def is_count(value: Any) -> bool:
    return int_problem(value) is None


__all__ = ["DeltaLog", "State", "FileAction", "LogFiles", "num_records", "is_count"]
