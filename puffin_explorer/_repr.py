"""Rich-display hooks shared by the model classes, and the seam through which models reach views.

The model never imports the display layer: these methods import the display
package by name (:data:`DISPLAY_PACKAGE`) when a notebook (or a user) asks for a
rendering, and other renderings (a hex view, a figure) come from *makers* the
display layer registers here with :func:`register_maker`, keyed by kind and model type.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any, Callable, Optional

#: The package whose view modules draw the models; imported by name on the first rendering.
DISPLAY_PACKAGE = "puffin_explorer.display"
#: Makers outside the display layer's views, by kind: their module is imported by name the first time that kind
#: is asked for (``Warehouse.browse()``), not with every view.
MAKER_MODULES = {"browser": "puffin_explorer.widgets.browser"}

_MAKERS: dict[tuple[str, type], Callable[..., Any]] = {}
_lock = threading.RLock()


def _display() -> Any:
    return importlib.import_module(DISPLAY_PACKAGE)


def register_maker(kind: str, cls: type, fn: Callable[..., Any]) -> None:
    """Make the ``kind`` rendering (``"hex"``, ``"figure"``) of ``cls`` instances (and subclasses)
    with ``fn(obj, *args, **kwargs)``; the display layer's view modules call this."""
    with _lock:
        _MAKERS[(kind, cls)] = fn


def _find_maker(kind: str, cls: type) -> Optional[Callable[..., Any]]:
    for klass in cls.__mro__:
        fn = _MAKERS.get((kind, klass))
        if fn is not None:
            return fn
    return None


def make_view(kind: str, obj: Any, *args: Any, **kwargs: Any) -> Any:
    """The ``kind`` rendering of ``obj`` by the maker registered for its type (the display layer's
    view modules loaded first)."""
    fn = _find_maker(kind, type(obj))
    if fn is None:
        if kind in MAKER_MODULES:
            importlib.import_module(MAKER_MODULES[kind])
        else:
            _display().load_views()
        fn = _find_maker(kind, type(obj))
    if fn is None:
        raise TypeError(f"no {kind} view for {type(obj).__name__}")
    return fn(obj, *args, **kwargs)


class RichRepr:
    """Adds ``_repr_mimebundle_`` (text/plain + text/html), ``to_html()``, ``to_text()`` and ``display()``."""

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return _display().mimebundle(self)

    def to_html(self) -> str:
        """The HTML view (self-contained fragment, no JavaScript)."""
        return _display().render_html(self)

    def to_text(self) -> str:
        """The plain-text view (what a terminal, a log or nbval sees)."""
        return _display().render_text(self)

    def display(self) -> None:
        """Show the view in any notebook, falling back to Databricks' ``displayHTML``."""
        _display().show(self)


def hex_view(source: Any, root: Any, offset: Optional[int], length: Optional[int], findings: Any = None):
    """An annotated hex view of ``source`` coloured by the regions under ``root``."""
    return _display().HexView(source, root, offset, length, findings=findings)
