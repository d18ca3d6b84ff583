"""Plain-text builders: aligned tables and byte sizes, for terminals, logs and nbval."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

#: Rows any text table shows before eliding the rest.
MAX_TEXT_ROWS = 200
#: Width any text column is cut to.
MAX_COL_WIDTH = 60


def size(n: Optional[int]) -> str:
    """``1,234 B (1.2 KiB)`` style sizes."""
    if n is None:
        return "?"
    if n < 1024:
        return f"{n:,} B"
    for unit, scale in (("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40)):
        if n < scale * 1024 or unit == "TiB":
            return f"{n:,} B ({n / scale:.1f} {unit})"
    return f"{n:,} B"  # pragma: no cover


#: Characters of one message (a finding's, a value's) a text view shows.
MAX_MESSAGE_CHARS = 2000


#: Characters of any one value a text view escapes (a file can hold megabyte-long strings).
MAX_PRINTABLE_CHARS = 4096


def printable(value: Any, limit: Optional[int] = MAX_PRINTABLE_CHARS) -> str:
    """A value's string form with control characters made visible (one line), cut to ``limit``
    characters first (``None``: no cut), so the work is bounded whatever a file holds."""
    text = "" if value is None else str(value)
    if limit is not None and len(text) > limit:
        text = text[: max(0, limit - 1)] + "…"
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def cut(text: str, width: int = MAX_COL_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def table(columns: Sequence[str], rows: Iterable[Sequence[Any]], right: Sequence[int] = (),
          total: Optional[int] = None, indent: str = "  ") -> str:
    """An aligned text table; ``right`` lists right-aligned column indexes."""
    body = []
    for row in rows:
        if len(body) >= MAX_TEXT_ROWS:
            break
        body.append([cut(printable(c)) for c in row])
    widths = [len(c) for c in columns]
    for row in body:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]

    def line(cells: Sequence[str]) -> str:
        parts = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return (indent + "  ".join(parts)).rstrip()

    out = [line(list(columns))] + [line(r) for r in body]
    if total is not None and total > len(body):
        out.append(f"{indent}… {total - len(body):,} more rows not shown")
    return "\n".join(out)
