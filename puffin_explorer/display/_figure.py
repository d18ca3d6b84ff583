"""The matplotlib figure class behind every chart handed to a user.

A plain :class:`matplotlib.figure.Figure` draws itself in a notebook only through the
PNG formatter that ``matplotlib_inline`` registers when the inline backend is loaded.
A kernel started with another backend (``MPLBACKEND=agg``), or one where that backend
was loaded only after the cell's result was formatted, shows the bare text
``<Figure size ... with 1 Axes>``.  This class carries its own ``_repr_png_``: IPython
uses a registered formatter when there is one (so the picture is not drawn twice) and
this method otherwise.

Imported lazily (it imports matplotlib), so ``import puffin_explorer`` stays fast.
"""

from __future__ import annotations

import io

from matplotlib.figure import Figure


class NotebookFigure(Figure):
    """A matplotlib ``Figure`` that draws itself as a PNG in any notebook, whatever its backend."""

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.savefig(buf, format="png", bbox_inches="tight")
        return buf.getvalue()

    def __repr__(self) -> str:  # the text a plain Figure shows: notebooks' stored outputs stay valid
        return super().__repr__().replace(f"<{type(self).__name__} ", "<Figure ", 1)
