"""The byte-region model shared by every parser and every view.

Every parsed structure knows where it lives in its file.  A file is a tree of
:class:`Region` objects; problems are :class:`Finding` objects that carry the
byte offset where they were noticed.  Views (tables, layout strip, hex dump,
findings list) are all derived from this one tree.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Iterator, Optional, Sequence

from ._text import are, plural
from ._repr import RichRepr


class Severity(str, Enum):
    """How bad a finding is."""

    ERROR = "error"  # the file breaks the spec: other readers reject or misread it
    WARNING = "warning"  # legal but suspicious, or readable only by some readers
    INFO = "info"  # worth knowing, not a problem

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.value


@dataclass(frozen=True)
class Finding:
    """One problem found in a file, anchored at a byte offset.

    ``offset`` is absolute in the file (or, for a compressed blob's content,
    relative to the decompressed bytes: ``space`` then says so).
    """

    code: str
    severity: Severity
    offset: Optional[int]
    message: str
    hint: str = ""
    length: Optional[int] = None
    space: str = "file"  # "file" or "blob[N] decompressed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "offset": self.offset,
            "length": self.length,
            "space": self.space,
            "message": self.message,
            "hint": self.hint,
        }

    def __str__(self) -> str:
        where = "?" if self.offset is None else f"{self.offset}"
        if self.space != "file":
            where += f" ({self.space})"
        return f"{self.severity.value} {self.code} @ {where}: {self.message}"


@dataclass(frozen=True)
class TableFinding(Finding):
    """A finding about one file of a table, Iceberg or Delta (``file`` is the location as written in the metadata
    or the log)."""

    file: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["file"] = self.file
        return d

    def __str__(self) -> str:
        return f"{super().__str__()} [{self.file}]" if self.file else super().__str__()


@dataclass(repr=False)
class Region(RichRepr):
    """A named span of bytes, possibly with children.

    ``kind`` is a short machine name used for colouring and filtering
    (``magic``, ``blob``, ``footer-payload``, ``roaring-container`` ...);
    ``value`` is the decoded value when the region is a scalar field.
    """

    name: str
    kind: str
    offset: int
    length: int
    children: Sequence["Region"] = ()  # a list when the region has children; the shared empty tuple when not
    value: Any = None
    finding: Optional[Finding] = None
    space: str = "file"

    @property
    def end(self) -> int:
        return self.offset + self.length

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per tree and ``key`` (what views derive from a whole tree: colours, strip
        segments), kept on this region so a file's several views do not walk thousands of regions each."""
        cache = self.__dict__.setdefault("_memo", {})
        if key not in cache:
            cache[key] = compute()
        return cache[key]

    def walk(self, depth: int = 0) -> Iterator[tuple[int, "Region"]]:
        """Yield ``(depth, region)`` for this region and all descendants, pre-order."""
        yield depth, self
        for child in self.children:
            yield from child.walk(depth + 1)

    def leaves(self) -> Iterator["Region"]:
        """Regions without children, in order."""
        if not self.children:
            yield self
        for child in self.children:
            yield from child.leaves()

    def find(self, kind: str) -> list["Region"]:
        """All descendants (and self) of a kind."""
        return [r for _, r in self.walk() if r.kind == kind]

    def to_records(self) -> list[dict[str, Any]]:
        """Flat rows (depth, name, kind, offset, length, end, value) for tables."""
        rows = []
        for depth, r in self.walk():
            rows.append(
                {
                    "depth": depth,
                    "name": r.name,
                    "kind": r.kind,
                    "offset": r.offset,
                    "length": r.length,
                    "end": r.end,
                    "space": r.space,
                    "value": _short_value(r.value),
                    "finding": r.finding.code if r.finding else None,
                }
            )
        return rows

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame.from_records(self.to_records())

    def __repr__(self) -> str:
        return (
            f"Region({self.name!r}, {self.kind!r}, offset={self.offset}, "
            f"length={self.length}, children={len(self.children)})"
        )


class FindingList(list, RichRepr):
    """A list of findings that renders as a table in notebooks."""

    def to_pandas(self):
        import pandas as pd

        cols = ["severity", "code", "offset", "length", "space", "message", "hint"]
        return pd.DataFrame([f.to_dict() for f in self], columns=cols)

    @property
    def errors(self) -> "FindingList":
        return FindingList(f for f in self if f.severity is Severity.ERROR)

    def __repr__(self) -> str:
        """The readable text form: one line per finding (severity, code, offset, message)."""
        return self.to_text()

    __str__ = __repr__


#: Findings of one code listed per file; the rest are counted in one ``findings.capped`` finding.
MAX_FINDINGS_PER_CODE = 1000


def cap_per_code(findings: list[Finding], limit: int = MAX_FINDINGS_PER_CODE) -> list[Finding]:
    """The first ``limit`` findings of each code (in the given order), and for each code with more,
    one ``findings.capped`` finding (info) at the first one left out, that counts them.

    A damaged or hostile footer can name the same problem tens of thousands of times; listing each
    would make every view, export and sort scale with a count written in the file."""
    counts = Counter(f.code for f in findings)
    if not counts or max(counts.values()) <= limit:
        return findings
    out: list[Finding] = []
    listed: dict[str, int] = {}
    first_left: dict[str, Finding] = {}
    for f in findings:
        n = listed.get(f.code, 0)
        if n < limit:
            listed[f.code] = n + 1
            out.append(f)
        elif f.code not in first_left:
            first_left[f.code] = f
    for code, f in first_left.items():
        where = "" if f.offset is None else f" from byte {f.offset:,} on"
        out.append(Finding("findings.capped", Severity.INFO, f.offset,
                           f"{plural(counts[code] - limit, f'more {code} finding')}{where} {are(counts[code] - limit)} not listed "
                           f"({counts[code]:,} in all; a file lists at most {limit:,} of one code)",
                           "the same problem repeated this often usually means a damaged or hostile footer",
                           space=f.space))
    return out


def top_regions(root: Region, expand: Sequence[str] = ("footer",)) -> list[Region]:
    """The root's file-space children, with children of ``expand`` kinds in their place (what the
    layout strip draws and the hex view pages by).  Computed once per root."""
    return root.memo(("top_regions", tuple(expand)), lambda: _top_regions(root, expand))


def _top_regions(root: Region, expand: Sequence[str]) -> list[Region]:
    out = []
    for child in root.children:
        if child.space != "file":
            continue
        if child.kind in expand and child.children:
            out.extend(c for c in child.children if c.space == "file")
        else:
            out.append(child)
    if not out and root.length:
        out = [root]
    return out


def clip(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, for values from a file quoted in a finding's message
    (a footer can hold a string of millions of characters)."""
    if isinstance(value, (list, dict)) and len(value) > 16:
        text = f"<{type(value).__name__} of {plural(len(value), 'item')}>"
    else:
        try:
            text = repr(value)
        except RecursionError:  # a deeply nested JSON value
            text = f"<deeply nested {type(value).__name__}>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _short_value(value: Any) -> Any:
    if value is None or isinstance(value, (int, float, bool)):
        return value
    text = value.hex() if isinstance(value, (bytes, bytearray)) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def shift(region: Region, delta: int, space: Optional[str] = None) -> Region:
    """Move a region tree by ``delta`` bytes (in place) and return it."""
    for _, r in region.walk():
        r.offset += delta
        if space is not None:
            r.space = space
    return region
