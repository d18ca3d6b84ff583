"""Byte-compile this project before a benchmark starts fresh processes.

pip byte-compiles an installed package (the peers'); this checkout is installed editable, and with
``PYTHONDONTWRITEBYTECODE`` set every fresh process would compile each module it imports again
(about 0.3 to 1 s a process).  A user's installed copy never pays that, so the benchmarks do not either."""

from __future__ import annotations

import compileall
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "puffin_explorer"


def byte_compile() -> None:
    """Write the ``__pycache__`` of every module of the package (as ``pip install`` does)."""
    compileall.compile_dir(str(PACKAGE), quiet=1)
