"""Writing results: lines, tables in text / JSON / CSV, and progress that never mixes into them."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from typing import Any, Iterable, Optional

from .._text import middle

#: Widest cell in a text table; longer values end in "…" (JSON and CSV keep them whole).
MAX_CELL = 60
#: Line width when stdout is not a terminal (and $COLUMNS is unset).
PIPE_WIDTH = 120


def width() -> int:
    """The terminal's width, or $COLUMNS, or 120 when writing to a pipe or a file."""
    if os.environ.get("COLUMNS", "").isdigit():
        return max(40, int(os.environ["COLUMNS"]))
    if sys.stdout.isatty():
        return max(40, shutil.get_terminal_size((PIPE_WIDTH, 24)).columns)
    return PIPE_WIDTH


def out(text: str = "") -> None:
    """One line (or several) on stdout."""
    sys.stdout.write(text + "\n")


def clip(text: Any, limit: int = MAX_CELL) -> str:
    """``text`` on one line, at most ``limit`` characters (the middle cut out).

    The work is bounded by ``limit``, not by the value: a string is cut before its whitespace is
    folded, and a container (a dict of column metrics keyed by a field name a damaged file made
    megabytes long) is written by :func:`short_repr`, which shortens what it could not show anyway."""
    if not isinstance(text, str):
        text = short_repr(text, limit) if isinstance(text, (dict, list, tuple, set, frozenset)) else str(text)
    if len(text) > 4 * limit:
        text = text[:2 * limit] + " … " + text[-2 * limit:]
    return middle(" ".join(text.split()), limit)  # paths keep their file name


def short_repr(value: Any, limit: int = MAX_CELL, _level: int = 0) -> str:
    """``str(value)`` of a container, except that a string or bytes longer than ``4 * limit`` keeps its
    first ``2 * limit`` characters and a container its first ``limit`` items (then ``…``): the same text
    for every value a cell can show whole, in time bounded by ``limit``."""
    if isinstance(value, (str, bytes, bytearray)):
        return repr(value) if len(value) <= 4 * limit else repr(value[:2 * limit]) + "…"
    if not isinstance(value, (dict, list, tuple, set, frozenset)):
        return repr(value)
    if _level >= 8:
        return "…"
    import itertools

    def part(v: Any) -> str:
        return short_repr(v, limit, _level + 1)

    items = list(itertools.islice(value.items() if isinstance(value, dict) else value, limit))
    parts = [f"{part(k)}: {part(v)}" for k, v in items] if isinstance(value, dict) else [part(v) for v in items]
    if len(value) > limit:
        parts.append("…")
    inner = ", ".join(parts)
    if isinstance(value, dict):
        return "{" + inner + "}"
    if isinstance(value, list):
        return "[" + inner + "]"
    if isinstance(value, tuple):
        return "(" + inner + ("," if len(value) == 1 else "") + ")"
    if not value:
        return f"{type(value).__name__}()"
    return "{" + inner + "}" if isinstance(value, set) else "frozenset({" + inner + "})"


def json_default(value: Any) -> Any:
    """JSON for values json does not know: timestamps, bytes, numpy scalars and arrays."""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def records(df) -> list[dict]:
    """DataFrame rows with missing values as None (valid JSON, no NaN)."""
    return df.astype(object).where(df.notna(), None).to_dict(orient="records")


def write_json(doc: Any, indent: Optional[int] = 2) -> None:
    out(json.dumps(doc, indent=indent, default=json_default))


_CONTROLS = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"


def _visible_controls(df):
    """``df`` with control characters inside its text cells written as ``\\xNN``: a path read from a damaged
    file may hold a NUL, which no CSV reader takes (and Python 3.10's csv module refuses to write)."""
    from pandas.api.types import is_object_dtype, is_string_dtype

    text = [c for c in df.columns if is_object_dtype(df[c].dtype) or is_string_dtype(df[c].dtype)]
    if not text:
        return df
    out = df.copy()
    for c in text:
        out[c] = out[c].map(lambda v: re.sub(_CONTROLS, lambda m: f"\\x{ord(m.group()):02x}", v)
                            if isinstance(v, str) else v)
    return out


def frame(df, fmt: str, max_rows: Optional[int] = 200, empty: str = "(none)") -> None:
    """A DataFrame as text (wrapped to the terminal, cells clipped), JSON records or CSV."""
    if fmt == "json":
        write_json(records(df), indent=None)
        return
    if fmt == "csv":
        _visible_controls(df).to_csv(sys.stdout, index=False)
        return
    if not len(df):
        out(empty)
        return
    shown = df if max_rows is None else df.head(max_rows)
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    shown = shown.apply(lambda col: col if is_numeric_dtype(col) or is_bool_dtype(col)
                        else col.astype(object).map(_cell))
    out(shown.to_string(index=False, line_width=width()))
    if max_rows is not None and len(df) > max_rows:
        out(f"… {len(df) - max_rows:,} more rows (--max-rows, or --format csv for all)")


def _cell(value: Any) -> Any:
    if value is None or isinstance(value, (int, float)):
        return value
    return clip(value)


def positions_preview(values: Iterable[int], count: int, limit: int = 10) -> str:
    """``[0, 2, 4]``, or the first ``limit`` positions then ``…`` when there are more."""
    head = [int(v) for v in values][:limit]
    return "[" + ", ".join(map(str, head)) + (", …]" if count > len(head) else "]")


class Progress:
    """A progress line on stderr, shown only on a terminal and erased before any output."""

    def __init__(self, label: str, minimum: int = 0) -> None:
        self.label = label
        self.minimum = minimum
        self.enabled = sys.stderr.isatty()
        self.shown = False

    def __call__(self, done: int, total: int, stage: str = "") -> None:
        if not self.enabled or total < self.minimum:
            return
        what = f"{self.label} {stage}".strip()
        sys.stderr.write(f"\r\033[K{what}: {done:,}/{total:,}")
        sys.stderr.flush()
        self.shown = True

    def done(self) -> None:
        """Erase the progress line (call before writing results)."""
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self.shown = False

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.done()
