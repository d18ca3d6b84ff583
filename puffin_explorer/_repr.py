"""Rich-display hooks shared by the model classes.

The model never imports the display layer at import time: these methods import
it when a notebook (or a user) asks for a rendering.
"""

from __future__ import annotations

from typing import Any, Optional


class RichRepr:
    """Adds ``_repr_mimebundle_`` (text/plain + text/html), ``to_html()``, ``to_text()`` and ``display()``."""

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        from .display import mimebundle

        return mimebundle(self)

    def to_html(self) -> str:
        """The HTML view (self-contained fragment, no JavaScript)."""
        from .display import render_html

        return render_html(self)

    def to_text(self) -> str:
        """The plain-text view (what a terminal, a log or nbval sees)."""
        from .display import render_text

        return render_text(self)

    def display(self) -> None:
        """Show the view in any notebook, falling back to Databricks' ``displayHTML``."""
        from .display import show

        show(self)


def hex_view(source: Any, root: Any, offset: Optional[int], length: Optional[int]):
    from .display.hexview import HexView

    return HexView(source, root, offset, length)
