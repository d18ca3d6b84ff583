"""Rich views of Puffin files, deletion vectors, theta sketches, regions and findings.

Pure functions from model objects to HTML and text; nothing here opens a file.
The HTML needs no JavaScript, escapes every string read from a file, carries its
text form as a fallback, and never exceeds :data:`MAX_HTML_BYTES`.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Optional

from .._gc import gc_paused
from .._repr import RichRepr
from . import html as H
from .hexview import HexView
from .layout import segments, strip_html, strip_text
from .registry import RenderOptions, find_view, load_views, register_view
from .tables import findings_html, findings_text, region_tree_text, render_region_tree_html

#: Hard cap on one view's HTML, in UTF-8 bytes (Databricks truncates a cell's output at 10 MB).
#: Views are built to stay far below it; one that would not is re-rendered compact (no charts,
#: no region tree, shorter tables) and, failing that, as escaped text.
MAX_HTML_BYTES = 1_000_000
#: Cap on the plain-text form (also embedded in the HTML as its fallback).
MAX_TEXT_CHARS = 100_000
#: Table rows of the compact re-render.
COMPACT_ROWS = 50

__all__ = [
    "mimebundle", "render_html", "render_text", "show", "view", "register_view", "RenderOptions", "HexView",
    "render_region_tree_html", "region_tree_text", "strip_html", "strip_text", "segments", "findings_html",
    "findings_text", "MAX_HTML_BYTES", "MAX_TEXT_CHARS", "View", "load_views",
]


class View(RichRepr):
    """A model object with its render options (e.g. column names from a schema)."""

    def __init__(self, obj: Any, options: Optional[RenderOptions] = None) -> None:
        self.obj = obj
        self.options = options or RenderOptions()

    @property
    def names(self) -> dict[int, str]:
        """``{field_id: column name}`` used by this view."""
        return dict(self.options.names)

    def to_pandas(self):
        """The wrapped object's DataFrame (column names applied where the object has field ids)."""
        from ..format.puffin import PuffinFile
        from .puffin_view import blob_frame

        if isinstance(self.obj, PuffinFile):
            return blob_frame(self.obj, self.names)
        return self.obj.to_pandas()

    def __repr__(self) -> str:
        return f"View({self.obj!r})"


def view(obj: Any, schema: Any = None, options: Optional[RenderOptions] = None, **changes: Any) -> View:
    """``obj`` with render options: column names from ``schema`` (a ``{field_id: name}`` dict, an
    Iceberg schema JSON dict, a pyiceberg Schema or a pyarrow schema with field ids), other
    :class:`RenderOptions` fields as keywords (``compact=True``, ``max_rows=20``)."""
    from .schema import column_names

    if isinstance(obj, View):
        options = options or obj.options
        obj = obj.obj
    opts = options or RenderOptions()
    if schema is not None:
        changes["names"] = column_names(schema)
    if changes:
        opts = opts.replace(**changes)
    if find_view(obj) is None:
        raise TypeError(f"no view for {type(obj).__name__}")
    return View(obj, opts)


def _resolve(obj: Any, opts: Optional[RenderOptions]):
    """``(model object, options, view spec)``; a :class:`View` brings its own options."""
    if isinstance(obj, View):
        opts = opts or obj.options
        obj = obj.obj
    spec = find_view(obj)
    if spec is None:
        raise TypeError(f"no view for {type(obj).__name__}")
    return obj, opts or RenderOptions(), spec


@gc_paused()
def render_text(obj: Any, opts: Optional[RenderOptions] = None) -> str:
    """The plain-text view (at most :data:`MAX_TEXT_CHARS` characters)."""
    obj, opts, spec = _resolve(obj, opts)
    return _cap_text(spec.text(obj, opts))


def _cap_text(text: str) -> str:
    if len(text) > MAX_TEXT_CHARS:
        text = text[:MAX_TEXT_CHARS] + f"\n… text view cut at {MAX_TEXT_CHARS:,} characters"
    return text


@gc_paused()
def render_html(obj: Any, opts: Optional[RenderOptions] = None, text: Optional[str] = None) -> str:
    """The HTML view: a self-contained fragment (stylesheet, text fallback, no script), size-capped.

    ``text`` is the already rendered text view, when the caller has it."""
    obj, opts, spec = _resolve(obj, opts)
    if text is None:
        text = _cap_text(spec.text(obj, opts))
    out = H.wrap(spec.html(obj, opts), text, spec.css_class)
    if _utf8_len(out) <= MAX_HTML_BYTES:
        return out
    small = opts.replace(compact=True, max_rows=min(opts.max_rows, COMPACT_ROWS))
    note = (f'<div class="pe-note">compact view: the full view would exceed the '
            f"{MAX_HTML_BYTES:,}-byte output cap</div>")
    out = H.wrap(note + spec.html(obj, small), text[:20_000], spec.css_class)
    if _utf8_len(out) <= MAX_HTML_BYTES:
        return out
    return f'<pre>{H.esc(text[:MAX_HTML_BYTES // 8])}</pre>'


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


@gc_paused()
def mimebundle(obj: Any, opts: Optional[RenderOptions] = None) -> dict[str, str]:
    """``{"text/plain": ..., "text/html": ...}`` for ``_repr_mimebundle_`` (the text is rendered once)."""
    text = render_text(obj, opts)
    return {"text/plain": text, "text/html": render_html(obj, opts, text=text)}


def _find_display_html() -> Optional[Callable[[str], Any]]:
    """Databricks' ``displayHTML`` from a calling frame's globals, ``__main__`` or builtins."""
    import builtins
    import sys

    frame = inspect.currentframe()
    try:
        while frame is not None:
            fn = frame.f_globals.get("displayHTML")
            if callable(fn):
                return fn
            frame = frame.f_back
    finally:
        del frame
    main = sys.modules.get("__main__")
    fn = getattr(main, "displayHTML", None) or getattr(builtins, "displayHTML", None)
    return fn if callable(fn) else None


def show(obj: Any) -> None:
    """Display ``obj`` in a notebook: IPython's ``display`` in a kernel, else ``displayHTML``
    (Databricks), else the text view on stdout."""
    shell = None
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:  # pragma: no cover - IPython is optional
        pass
    if shell is not None and getattr(shell, "kernel", None) is not None:
        from IPython.display import display

        display(obj)
        return
    display_html = _find_display_html()
    if display_html is not None:
        display_html(render_html(obj))
        return
    print(render_text(obj))
