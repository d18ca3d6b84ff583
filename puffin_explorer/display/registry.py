"""The view registry: which HTML and text functions draw which type, and the options they get.

Each view module registers the types it draws with :func:`register_view`; a
model package never imports this layer.  Lookup walks the object's type MRO, so
a subclass inherits its base's view.  Anything unregistered that has
``regions()``, ``findings`` or ``summary()`` gets the generic view (summary,
findings table, region strip and tree), which is what a plug-in blob type gets
for free.

Built-in view modules are listed in :data:`BUILTIN_VIEW_MODULES` and imported on
the first lookup, so importing the models stays cheap.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any, Optional

from .options import HtmlFn, RenderOptions, TextFn, ViewSpec

__all__ = ["RenderOptions", "ViewSpec", "register_view", "find_view", "load_views", "BUILTIN_VIEW_MODULES"]


#: View modules imported on the first lookup; each calls :func:`register_view` for its types.
BUILTIN_VIEW_MODULES: list[str] = [
    "puffin_explorer.display.puffin_view",
    "puffin_explorer.display.dv_view",
    "puffin_explorer.display.theta_view",
    "puffin_explorer.display.misc_views",
    "puffin_explorer.display.parquet_view",
    "puffin_explorer.display.hexview",
    "puffin_explorer.display.table_view",
    "puffin_explorer.display.delta_view",
    "puffin_explorer.display.health_view",
]

_VIEWS: dict[type, ViewSpec] = {}
_loaded: set[str] = set()
_lock = threading.RLock()


def register_view(cls: type, *, html: HtmlFn, text: TextFn, css_class: str = "") -> None:
    """Draw instances of ``cls`` (and its subclasses) with ``html(obj, opts)`` and ``text(obj, opts)``.

    ``css_class`` is added to the wrapper ``<div>`` (e.g. ``"pe-puffin"``).  Registering a
    type again replaces its view.
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_view needs a class, got {cls!r}")
    if not callable(html) or not callable(text):
        raise TypeError("register_view needs callable html= and text= functions")
    with _lock:
        _VIEWS[cls] = ViewSpec(html, text, css_class)


def _load_builtins() -> None:
    if len(_loaded) == len(BUILTIN_VIEW_MODULES):
        return
    with _lock:
        for name in list(BUILTIN_VIEW_MODULES):
            if name in _loaded:
                continue
            _loaded.add(name)
            importlib.import_module(name)


def load_views() -> None:
    """Import the built-in view modules (each registers its views and makers); once."""
    _load_builtins()


def find_view(obj: Any) -> Optional[ViewSpec]:
    """The view registered for ``type(obj)`` or its nearest base class, else the generic view when
    ``obj`` has ``regions()`` / ``findings`` / ``summary()``, else None."""
    _load_builtins()
    for klass in type(obj).__mro__:
        spec = _VIEWS.get(klass)
        if spec is not None:
            return spec
    if callable(getattr(obj, "regions", None)) or callable(getattr(obj, "summary", None)) \
            or isinstance(getattr(obj, "findings", None), (list, tuple)):
        from .generic import GENERIC_VIEW

        return GENERIC_VIEW
    return None


def registered_types() -> list[type]:
    """Every type a view is registered for (the built-in view modules loaded first)."""
    _load_builtins()
    with _lock:
        return list(_VIEWS)
