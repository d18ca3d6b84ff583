"""What a view is given and what it is: the render options and a registered view's functions.

Kept apart from :mod:`.registry` so the generic view and every view module can name these types
without importing the lookup that loads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Callable, Mapping

__all__ = ["RenderOptions", "ViewSpec", "HtmlFn", "TextFn"]


@dataclass(frozen=True)
class RenderOptions:
    """How to render, passed unchanged to every view function (never set globally).

    ``compact`` drops charts, region trees and other large parts; ``max_rows`` caps every
    table; ``names`` maps Iceberg field ids to column names; ``max_cell_chars`` cuts long
    cell values; ``max_text_rows`` caps text tables; ``now`` (a timestamp, ``datetime`` or epoch ms;
    default the clock) dates the retention checks of a table card's health section.
    """

    compact: bool = False
    max_rows: int = 200
    names: Mapping[int, str] = field(default_factory=lambda: MappingProxyType({}))
    max_cell_chars: int = 300
    max_text_rows: int = 200
    now: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.names, MappingProxyType):
            object.__setattr__(self, "names", MappingProxyType(dict(self.names or {})))

    def replace(self, **changes: Any) -> "RenderOptions":
        """A copy with some options changed."""
        return replace(self, **changes)


#: ``html(obj, opts) -> str`` (an HTML body fragment, without the page wrapper).
HtmlFn = Callable[[Any, RenderOptions], str]
#: ``text(obj, opts) -> str`` (the plain-text view).
TextFn = Callable[[Any, RenderOptions], str]


@dataclass(frozen=True)
class ViewSpec:
    """One registered view: its HTML and text functions and the CSS class of its wrapper."""

    html: HtmlFn
    text: TextFn
    css_class: str = ""
