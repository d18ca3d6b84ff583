"""Pausing Python's cyclic garbage collector while a reader builds many small objects.

A footer of 20,000 entries becomes tens of thousands of regions, findings and rows.  Allocating
them triggers collections that rescan every object already alive (in a notebook, the whole
kernel's), which measured as more than half of the time of some views.  What these paths build
holds no reference cycles, so nothing is lost by collecting after them instead of during them.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic collection inside the block (nested use is fine; the previous state is restored).
    Also a decorator: ``@gc_paused()``."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
