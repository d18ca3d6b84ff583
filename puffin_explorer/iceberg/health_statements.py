"""The literals the doctor's fix statements are written with: SQL strings and maps, Trino durations and sizes."""

from __future__ import annotations

from typing import Any

from ..health import DAY_MS, MIB


def sql_string(value: str) -> str:
    """``value`` as a SQL string literal (quotes doubled)."""
    return "'" + str(value).replace("'", "''") + "'"


def duration_literal(ms: int) -> str:
    """A Trino duration literal (``5d``, ``36h``, ``90s``) no longer than ``ms``."""
    for unit, size in (("d", DAY_MS), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{max(ms // 1000, 0)}s"


def sql_map(options: dict[str, Any]) -> str:
    """A Spark SQL ``map(...)`` of string keys and values (a procedure's ``options``)."""
    return "map(" + ", ".join(f"{sql_string(k)}, {sql_string(v)}" for k, v in options.items()) + ")"


def trino_size(n: int) -> str:
    """A Trino data size literal (``384MB``) no bigger than ``n`` bytes."""
    for unit, size in (("GB", 1 << 30), ("MB", MIB), ("kB", 1024)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return f"{n}B"


def trino_size_above(n: int) -> str:
    """A Trino data size literal in whole MiB above ``n`` bytes."""
    return f"{n // MIB + 1}MB"


__all__ = ["duration_literal", "sql_map", "sql_string", "trino_size", "trino_size_above"]
