"""The catalogue of finding codes: every code a reader can emit, with its severity, meaning and hint.

Codes are named ``area.name``: the area is the structure the finding is about
(``file``, ``footer``, ``blob``, ``dv``, ``roaring``, ``theta`` for Puffin files,
``parquet`` for Parquet layouts, ``iceberg`` for table cross-checks, ...) and the
name is lowercase words joined by ``-``.  Each layer declares its codes in its own
``findings`` module (``format/findings.py``, ``parquet/findings.py``,
``iceberg/findings.py``) with :func:`define`; :func:`catalogue` lists them all.
Codes that were renamed keep their old spelling as an alias (:func:`lookup`
resolves both).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Iterable, Optional

from .regions import Finding, Severity

#: ``area.name``: lowercase area, a dot, lowercase words joined by hyphens.
CODE_PATTERN = re.compile(r"^[a-z][a-z0-9]*\.[a-z0-9]+(?:-[a-z0-9]+)*$")

#: Modules that declare codes (imported by :func:`catalogue`).  A new layer appends its module here.
LAYER_MODULES: list[str] = [
    "puffin_explorer.format.findings",
    "puffin_explorer.parquet.findings",
    "puffin_explorer.iceberg.findings",
    "puffin_explorer.delta.findings",
    "puffin_explorer.io.findings",
]


@dataclass(frozen=True)
class FindingCode:
    """One catalogue entry: what a code means, how bad it is and what to do about it.

    ``severity`` is the severity the code is emitted with; ``also`` lists other
    severities a reader may give it in some situations (for example an index
    that is unreadable versus merely unusual).
    """

    code: str
    severity: Severity
    meaning: str
    hint: str = ""
    layer: str = ""
    aliases: tuple[str, ...] = ()
    also: tuple[Severity, ...] = ()

    @property
    def severities(self) -> tuple[Severity, ...]:
        return (self.severity, *self.also)

    def to_dict(self) -> dict:
        return {"code": self.code, "severity": self.severity.value, "layer": self.layer,
                "meaning": self.meaning, "hint": self.hint, "aliases": list(self.aliases),
                "also": [s.value for s in self.also]}


_CODES: dict[str, FindingCode] = {}
_ALIASES: dict[str, str] = {}
#: Old composed codes ``prefix<code>`` that now emit ``<code>`` itself.
_PREFIX_ALIASES: dict[str, str] = {}


def define(layer: str, code: str, severity: Severity, meaning: str, hint: str = "",
           aliases: Iterable[str] = (), also: Iterable[Severity] = ()) -> FindingCode:
    """Declare one code (called at import time by each layer's ``findings`` module)."""
    if not CODE_PATTERN.match(code):
        raise ValueError(f"finding code {code!r} is not named area.name (lowercase, hyphens)")
    entry = FindingCode(code, Severity(severity), meaning, hint, layer, tuple(aliases), tuple(also))
    old = _CODES.get(code)
    if old is not None and old != entry:
        raise ValueError(f"finding code {code!r} is declared twice, differently ({old.layer}, {layer})")
    _CODES[code] = entry
    for alias in entry.aliases:
        _ALIASES[alias] = code
    return entry


def define_prefix_alias(prefix: str, note: str = "") -> None:
    """Declare that old codes ``prefix<code>`` are now emitted as ``<code>``."""
    _PREFIX_ALIASES[prefix] = note


def _load() -> None:
    for name in LAYER_MODULES:
        importlib.import_module(name)


def catalogue(layer: Optional[str] = None) -> list[FindingCode]:
    """Every declared code (optionally one layer's), sorted by code."""
    _load()
    return sorted((c for c in _CODES.values() if layer is None or c.layer == layer), key=lambda c: c.code)


def canonical(code: str) -> str:
    """The current spelling of ``code`` (old aliases resolved); unknown codes come back unchanged."""
    _load()
    if code in _CODES:
        return code
    if code in _ALIASES:
        return _ALIASES[code]
    for prefix in _PREFIX_ALIASES:
        if code.startswith(prefix) and code[len(prefix):] in _CODES:
            return code[len(prefix):]
    return code


def lookup(code: str) -> FindingCode:
    """The catalogue entry of ``code`` (or of an old alias); ``KeyError`` when the code is unknown."""
    entry = _CODES.get(canonical(code))
    if entry is None:
        raise KeyError(f"unknown finding code {code!r}")
    return entry


def is_known(code: str) -> bool:
    """Whether ``code`` (or its old alias) is in the catalogue."""
    try:
        lookup(code)
    except KeyError:
        return False
    return True


def aliases() -> dict[str, str]:
    """Old code → current code."""
    _load()
    return dict(_ALIASES)


def make(code: str, offset: Optional[int], message: str, hint: Optional[str] = None,
         severity: Optional[Severity] = None, **kw) -> Finding:
    """A :class:`Finding` for a catalogued code; severity and hint default to the catalogue's."""
    entry = lookup(code)
    return Finding(entry.code, severity or entry.severity, offset, message,
                   entry.hint if hint is None else hint, **kw)


def catalogue_frame(layer: Optional[str] = None):
    """The catalogue as a DataFrame (code, severity, layer, meaning, hint, aliases)."""
    import pandas as pd

    rows = [c.to_dict() for c in catalogue(layer)]
    return pd.DataFrame(rows, columns=["code", "severity", "layer", "meaning", "hint", "aliases", "also"])


def markdown_table(layer: Optional[str] = None) -> str:
    """The catalogue as the Markdown table of the findings page (code, severity, meaning)."""
    lines = ["| code | severity | what it means |", "|---|---|---|"]
    for c in catalogue(layer):
        alias = f" (was {', '.join(f'`{a}`' for a in c.aliases)})" if c.aliases else ""
        meaning = c.meaning.replace("|", "\\|")
        lines.append(f"| `{c.code}`{alias} | {c.severity.value} | {meaning} |")
    return "\n".join(lines)


__all__ = ["FindingCode", "CODE_PATTERN", "LAYER_MODULES", "define", "define_prefix_alias", "catalogue",
           "canonical", "lookup", "is_known", "aliases", "make", "catalogue_frame", "markdown_table"]


README_START = "<!-- findings-table:start -->"
README_END = "<!-- findings-table:end -->"


#: The page that holds the generated table (the documentation site's findings reference).
DOCS_PAGE = "docs/findings.md"


def update_readme(path: str = DOCS_PAGE) -> bool:
    """Rewrite the generated Findings table between the markers of a Markdown page; ``True`` when it changed."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    new = f"{head}{README_START}\n{markdown_table()}\n{README_END}{tail}"
    if new != text:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(new)
    return new != text
