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

from ..errors import SourceError
from ..findings import make
from ..iceberg.checks import TableFinding
from ..iceberg.paths import TableIO, join
from ..regions import Finding
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


def num_records(add: dict[str, Any]) -> Optional[int]:
    """``numRecords`` from ``stats`` (JSON string) or ``stats_parsed``."""
    parsed = add.get("stats_parsed")
    if isinstance(parsed, dict) and parsed.get("numRecords") is not None:
        return int(parsed["numRecords"])
    stats = add.get("stats")
    if not stats:
        return None
    try:
        value = json.loads(stats).get("numRecords")
    except (ValueError, AttributeError):
        return None
    return None if value is None else int(value)


@dataclass
class State:
    """The table at one version: protocol, metadata and the live files, keyed by (path, DV id)."""

    version: int = -1
    protocol: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    files: dict[tuple[str, str], FileAction] = field(default_factory=dict)

    def copy(self) -> "State":
        return State(self.version, dict(self.protocol), dict(self.metadata), dict(self.files))

    def apply(self, version: int, actions: list[tuple[str, dict[str, Any]]]) -> None:
        """Apply one version's actions in order (a remove drops the logical file with the same path and DV)."""
        for kind, body in actions:
            if kind == "add":
                dv = DVDescriptor.from_action(body["deletionVector"]) if body.get("deletionVector") else None
                fa = FileAction(str(body.get("path")), body, dv, num_records(body), version)
                self.files[fa.key] = fa
            elif kind == "remove":
                dv = body.get("deletionVector")
                uid = DVDescriptor.from_action(dv).unique_id if dv else ""
                self.files.pop((str(body.get("path")), uid), None)
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
            if len(found) == parts and set(found) == set(range(1, parts + 1)):
                out.checkpoints.setdefault(version, [found[i] for i in sorted(found)])
            else:
                self.findings.append(_lf("delta.checkpoint-incomplete", join(self.log_dir, next(iter(found.values()))),
                                         f"checkpoint {version} has {len(found)} of {parts} parts"))
        if "_last_checkpoint" in names:
            loc = join(self.log_dir, "_last_checkpoint")
            try:
                out.last_checkpoint = json.loads(self.io.read(loc))
                v = int(out.last_checkpoint["version"])
            except (SourceError, ValueError, KeyError, TypeError) as exc:
                self.findings.append(_lf("delta.last-checkpoint", loc, f"_last_checkpoint cannot be read: {exc}"))
            else:
                if v not in out.checkpoints:
                    self.findings.append(_lf("delta.last-checkpoint", loc,
                                             f"_last_checkpoint names version {v}, which has no complete checkpoint"))
                elif out.checkpoints and v < max(out.checkpoints):
                    self.findings.append(_lf("delta.last-checkpoint", loc,
                                             f"_last_checkpoint names version {v}; the latest checkpoint is "
                                             f"{max(out.checkpoints)}"))
        return out

    # ---- reading ---------------------------------------------------------------------------
    def commit(self, version: int) -> list[tuple[str, dict[str, Any]]]:
        """The actions of one JSON commit as ``(kind, body)``; bad lines become findings."""
        if version not in self._commits:
            self._commits[version] = self._json_actions(join(self.log_dir, self.files.commits[version]))
        return self._commits[version]

    def _json_actions(self, loc: str) -> list[tuple[str, dict[str, Any]]]:
        actions: list[tuple[str, dict[str, Any]]] = []
        try:
            data = self.io.read(loc)
        except SourceError as exc:
            self.findings.append(_lf("delta.log-unreadable", loc, str(exc)))
            return actions
        at = 0
        for line in data.split(b"\n"):
            start, at = at, at + len(line) + 1
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError) as exc:
                self.findings.append(_lf("delta.log-json", loc, f"line at byte {start:,} is not JSON: {exc}", start))
                continue
            if not isinstance(obj, dict) or len(obj) != 1 or not isinstance(next(iter(obj.values())), dict):
                self.findings.append(_lf("delta.log-json", loc,
                                         f"line at byte {start:,} is not an object holding one action", start))
                continue
            actions.append(next(iter(obj.items())))
        return actions

    def checkpoint(self, version: int) -> list[tuple[str, dict[str, Any]]]:
        """The actions of a (classic, multi-part or UUID-named) checkpoint, sidecars included."""
        actions: list[tuple[str, dict[str, Any]]] = []
        for name in self.files.checkpoints[version]:
            loc = join(self.log_dir, name)
            if name.endswith(".json"):
                actions += self._json_actions(loc)
            else:
                actions += self._parquet_actions(loc)
        sidecars = [body for kind, body in actions if kind == "sidecar"]
        for sc in sidecars:
            actions += self._parquet_actions(join(self.log_dir, "_sidecars", str(sc.get("path", ""))))
        return actions

    def _parquet_actions(self, loc: str) -> list[tuple[str, dict[str, Any]]]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            data = self.io.read(loc)  # counted, and storage failures explained, like every other read
        except SourceError as exc:
            self.findings.append(_lf("delta.log-unreadable", loc, str(exc)))
            return []
        try:
            pf = pq.ParquetFile(pa.BufferReader(data))
            present = [c for c in _CHECKPOINT_COLUMNS if c in pf.schema_arrow.names]
            table = pf.read(columns=present)
        except (OSError, ValueError) as exc:
            self.findings.append(_lf("delta.log-unreadable", loc, f"checkpoint cannot be read: {exc}"))
            return []
        out: list[tuple[str, dict[str, Any]]] = []
        for col in present:
            for row in table.column(col).to_pylist():
                if row is not None:
                    out.append((col, _from_arrow(row)))
        return out

    # ---- snapshots -------------------------------------------------------------------------
    def state(self, version: Optional[int] = None) -> State:
        """The table at ``version`` (latest by default): the newest checkpoint at or below it, then commits."""
        target = self.files.latest if version is None else int(version)
        if target is None:
            raise SourceError(f"{self.log_dir} holds no Delta commits or checkpoints")
        if version is not None and target not in self.files.commits and target not in self.files.checkpoints:
            raise KeyError(f"{self.root}: the log has no version {target} (latest {self.files.latest})")
        bases = [v for v in self.files.checkpoints if v <= target]
        state = State()
        start = 0
        if bases:
            base = max(bases)
            state.apply(base, self.checkpoint(base))
            start = base + 1
        for v in range(start, target + 1):
            if v not in self.files.commits:
                self.findings.append(_lf("delta.log-gap", join(self.log_dir, f"{v:020d}.json"),
                                         f"commit {v} is missing: version {target} cannot be rebuilt exactly"))
                continue
            state.apply(v, self.commit(v))
        state.version = target
        return state

    def replay(self, upto: int, each: Callable[[int, State, list], None]) -> None:
        """Call ``each(version, state_after, actions)`` for every version the log can rebuild, up to ``upto``."""
        commits = sorted(v for v in self.files.commits if 0 <= v <= upto)
        if 0 in self.files.commits:
            state, first = State(), 0
        else:
            bases = [v for v in self.files.checkpoints if v <= upto]
            if not bases:
                return
            first = min(bases)
            state = State()
            state.apply(first, self.checkpoint(first))
            each(first, state, [])
            first += 1
        for v in commits:
            if v < first:
                continue
            actions = self.commit(v)
            state.apply(v, actions)
            each(v, state, actions)


def _from_arrow(value: Any) -> Any:
    """pyarrow's ``to_pylist`` values → JSON-like values (maps as dicts)."""
    if isinstance(value, dict):
        return {k: _from_arrow(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
            return {k: _from_arrow(v) for k, v in value}
        return [_from_arrow(x) for x in value]
    return value


__all__ = ["DeltaLog", "State", "FileAction", "LogFiles", "num_records"]
