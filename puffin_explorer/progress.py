"""Progress bars for long table work (an index build, a check, a DV read): shown from a size on in a
terminal or a notebook kernel, or whenever asked; never in a script whose stderr is not a terminal."""

from __future__ import annotations

import sys
from typing import Any, Optional


def wanted(progress: Optional[bool], count: int, threshold: int) -> bool:
    """A bar when asked for (``True``), none when refused (``False``); by default (``None``) from
    ``threshold`` items on, in a notebook kernel or when stderr is a terminal."""
    if progress is not None:
        return bool(progress)
    if count < threshold:
        return False
    if "ipykernel" in sys.modules:
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def bar(total: int, label: str, unit: str) -> Any:
    """A tqdm bar (a notebook widget in a kernel, a line on stderr in a terminal) that leaves nothing behind
    when closed; None if tqdm cannot be imported."""
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is a dependency; a stripped environment just shows no bar
        return None
    return tqdm(total=total, desc=label, unit=unit, leave=False)


class ProgressBar:
    """A ``progress(done, total)`` callback drawing one bar, opened at the first call once the total is
    known (``wanted(progress, total, threshold)`` decides) and closed by ``close()`` or ``with``."""

    def __init__(self, label: str, unit: str, threshold: int, progress: Optional[bool] = None) -> None:
        self.label, self.unit, self.threshold, self.progress = label, unit, threshold, progress
        self.bar: Any = None
        self.decided = False

    def __call__(self, done: int, total: int) -> None:
        if not self.decided:
            self.decided = True
            if wanted(self.progress, total, self.threshold):
                self.bar = bar(total, self.label, self.unit)
        if self.bar is not None and done > self.bar.n:
            self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__ = ["ProgressBar", "bar", "wanted"]
