"""Rich views of Puffin files, deletion vectors, theta sketches, regions and findings.

Pure functions from model objects to HTML and text; nothing here opens a file.
The HTML needs no JavaScript, escapes every string read from a file, carries its
text form as a fallback, and never exceeds :data:`MAX_HTML_BYTES`.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Optional

from .._repr import RichRepr
from . import html as H
from .hexview import HexView
from .layout import segments, strip_html, strip_text
from .tables import findings_html, findings_text, region_tree_text, render_region_tree_html

#: Hard cap on one view's HTML, in UTF-8 bytes (Databricks truncates a cell's output at 10 MB).
#: Views are built to stay far below it; one that would not is re-rendered compact (no charts,
#: no region tree, shorter tables) and, failing that, as escaped text.
MAX_HTML_BYTES = 1_000_000
#: Cap on the plain-text form (also embedded in the HTML as its fallback).
MAX_TEXT_CHARS = 100_000

__all__ = [
    "mimebundle", "render_html", "render_text", "show", "view", "HexView", "render_region_tree_html",
    "region_tree_text", "strip_html", "strip_text", "segments", "findings_html", "findings_text",
    "MAX_HTML_BYTES", "MAX_TEXT_CHARS", "View",
]


class View(RichRepr):
    """A model object with view options (e.g. ``schema`` for column names)."""

    def __init__(self, obj: Any, schema: Any = None) -> None:
        from .schema import column_names

        self.obj = obj
        self.names = column_names(schema)

    def to_pandas(self):
        """The wrapped object's DataFrame (column names applied where the object has field ids)."""
        from ..format.puffin import PuffinFile
        from .puffin_view import blob_frame

        if isinstance(self.obj, PuffinFile):
            return blob_frame(self.obj, self.names)
        return self.obj.to_pandas()

    def __repr__(self) -> str:
        return f"View({self.obj!r})"


def view(obj: Any, schema: Any = None) -> View:
    """``obj`` with column names from ``schema`` (a ``{field_id: name}`` dict, an Iceberg schema JSON dict,
    a pyiceberg Schema or a pyarrow schema with field ids)."""
    return View(obj, schema)


def _renderers(obj: Any) -> tuple[Callable[..., str], Callable[..., str], str]:
    """``(html_body(obj, compact), text(obj), css class)`` for a model object."""
    from ..format.dv import DeletionVector
    from ..format.puffin import PuffinFile
    from ..format.raw import RawBlob
    from ..format.theta import ThetaSketch
    from ..regions import FindingList, Region

    from ..parquet.layout import ParquetLayout
    from ..parquet.overlay import DeletionOverlay

    if isinstance(obj, (ParquetLayout, DeletionOverlay)):
        from . import parquet_view as pv

        if isinstance(obj, ParquetLayout):
            return (lambda c: pv.layout_html_body(obj)), (lambda: pv.layout_text(obj)), "pe-parquet"
        return (lambda c: pv.overlay_html_body(obj)), (lambda: pv.overlay_text(obj)), "pe-parquet-overlay"
    names = None
    if isinstance(obj, View):
        names, obj = obj.names, obj.obj
    if isinstance(obj, PuffinFile):
        from . import puffin_view as v

        return (lambda c: v.html_body(obj, names, c)), (lambda: v.text(obj, names)), "pe-puffin"
    if isinstance(obj, DeletionVector):
        from . import dv_view as v

        return (lambda c: v.html_body(obj, compact=c)), (lambda: v.text(obj)), "pe-dv"
    if isinstance(obj, ThetaSketch):
        from . import theta_view as v

        return (lambda c: v.html_body(obj, names, c)), (lambda: v.text(obj, names)), "pe-theta"
    if isinstance(obj, HexView):
        return (lambda c: obj.html_body()), obj.text, "pe-hexview"
    from . import misc_views as m

    if isinstance(obj, RawBlob):
        return (lambda c: m.raw_html(obj, c)), (lambda: m.raw_text(obj)), "pe-raw"
    if isinstance(obj, Region):
        return (lambda c: m.region_html(obj, c)), (lambda: m.region_text(obj)), "pe-region"
    if isinstance(obj, FindingList):
        return (lambda c: m.findings_list_html(obj, c)), (lambda: m.findings_list_text(obj)), "pe-findings"
    raise TypeError(f"no view for {type(obj).__name__}")


def render_text(obj: Any) -> str:
    """The plain-text view (at most :data:`MAX_TEXT_CHARS` characters)."""
    text = _renderers(obj)[1]()
    if len(text) > MAX_TEXT_CHARS:
        text = text[:MAX_TEXT_CHARS] + f"\n… text view cut at {MAX_TEXT_CHARS:,} characters"
    return text


def render_html(obj: Any) -> str:
    """The HTML view: a self-contained fragment (stylesheet, text fallback, no script), size-capped."""
    body, text_fn, cls = _renderers(obj)
    text = render_text(obj)
    out = H.wrap(body(False), text, cls)
    if _utf8_len(out) <= MAX_HTML_BYTES:
        return out
    saved = H.MAX_TABLE_ROWS
    try:
        H.MAX_TABLE_ROWS = 50
        note = (f'<div class="pe-note">compact view: the full view would exceed the '
                f"{MAX_HTML_BYTES:,}-byte output cap</div>")
        out = H.wrap(note + body(True), text[:20_000], cls)
    finally:
        H.MAX_TABLE_ROWS = saved
    if _utf8_len(out) <= MAX_HTML_BYTES:
        return out
    return f'<pre>{H.esc(text[:MAX_HTML_BYTES // 8])}</pre>'


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def mimebundle(obj: Any) -> dict[str, str]:
    """``{"text/plain": ..., "text/html": ...}`` for ``_repr_mimebundle_``."""
    return {"text/plain": render_text(obj), "text/html": render_html(obj)}


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
