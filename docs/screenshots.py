"""Screenshots of the notebook views, as JupyterLab shows them in its light and dark themes.

    .venv/bin/python docs/screenshots.py [--out docs/images] [--warehouse DIR] [--now TIME] [--only NAME ...]

Each view's HTML comes from the object's own ``_repr_mimebundle_()`` (what a notebook displays),
is put in a minimal page that defines JupyterLab's ``--jp-*`` theme variables (light, or dark with
``data-jp-theme-light="false"`` on the body, as JupyterLab sets it), and is drawn by headless
Chromium (Debian's ``/usr/bin/chromium`` through Playwright, no network). The PNG is cropped to
the output area and reduced to a palette, so each stays small.

The table views need the demo warehouse (``python -m puffin_explorer.demo ./demo-warehouse
--no-notebooks``); ``--now`` dates their retention checks (default: a week after the warehouse's
newest commit, so a rebuilt warehouse gives the same findings).
"""

from __future__ import annotations

import argparse
import html
import os
import shutil
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

ROOT = Path(__file__).resolve().parent.parent
RESOURCES = ROOT / "resources"
THEMES = ("light", "dark")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: Chromium's flags in tests/_browser.py: no background traffic (no network beyond loopback here).
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
#: Page width in CSS pixels, at device scale 1: a wide JupyterLab notebook column (the blob table fits).
WIDTH = 1040
#: Palette size of the written PNGs.
COLOURS = 128

# The JupyterLab 4 theme values of the variables puffin_explorer's stylesheet reads
# (Material grey / red / orange / green / cyan, as @jupyterlab/theme-{light,dark}-extension define them).
# JupyterLab asks for system-ui first, which is the wide DejaVu Sans on a bare Linux; Liberation Sans
# (Arial's metrics) is closer to what macOS and Windows draw, so tables wrap as most users see them.
_SANS = "-apple-system, BlinkMacSystemFont, 'Segoe UI', 'Liberation Sans', Helvetica, Arial, sans-serif"
_FONTS = {
    "--jp-ui-font-family": _SANS,
    "--jp-content-font-family": _SANS,
    "--jp-code-font-family": "Menlo, Consolas, 'DejaVu Sans Mono', monospace",
    "--jp-content-font-size1": "14px",
    "--jp-ui-font-size1": "13px",
    "--jp-code-font-size": "13px",
}
JP_VARS = {
    "light": {
        "--jp-layout-color0": "#ffffff", "--jp-layout-color1": "#ffffff", "--jp-layout-color2": "#eeeeee",
        "--jp-layout-color3": "#bdbdbd", "--jp-border-color0": "#bdbdbd", "--jp-border-color1": "#bdbdbd",
        "--jp-border-color2": "#e0e0e0",
        "--jp-content-font-color0": "rgba(0, 0, 0, 1)", "--jp-content-font-color1": "rgba(0, 0, 0, 0.87)",
        "--jp-content-font-color2": "rgba(0, 0, 0, 0.54)", "--jp-content-font-color3": "rgba(0, 0, 0, 0.38)",
        "--jp-ui-font-color1": "rgba(0, 0, 0, 0.87)",
        "--jp-error-color1": "#d32f2f", "--jp-warn-color1": "#f57c00", "--jp-info-color1": "#0097a7",
        "--jp-success-color1": "#388e3c", "--jp-content-link-color": "#0d47a1",
        "--jp-cell-editor-background": "#f5f5f5",
        **_FONTS,
    },
    "dark": {
        "--jp-layout-color0": "#111111", "--jp-layout-color1": "#212121", "--jp-layout-color2": "#424242",
        "--jp-layout-color3": "#616161", "--jp-border-color0": "#616161", "--jp-border-color1": "#616161",
        "--jp-border-color2": "#424242",
        "--jp-content-font-color0": "rgba(255, 255, 255, 1)", "--jp-content-font-color1": "rgba(255, 255, 255, 1)",
        "--jp-content-font-color2": "rgba(255, 255, 255, 0.7)", "--jp-content-font-color3": "rgba(255, 255, 255, 0.5)",
        "--jp-ui-font-color1": "rgba(255, 255, 255, 0.87)",
        "--jp-error-color1": "#f44336", "--jp-warn-color1": "#ff9800", "--jp-info-color1": "#00bcd4",
        "--jp-success-color1": "#4caf50", "--jp-content-link-color": "#64b5f6",
        "--jp-cell-editor-background": "#212121",
        **_FONTS,
    },
}


def page_html(fragment: str, theme: str) -> str:
    """A page holding one output as JupyterLab draws it: its theme's variables on ``:root``, the
    body's ``data-jp-theme-*`` attributes, the output in a ``.jp-OutputArea-output`` box."""
    variables = "\n".join(f"  {k}: {v};" for k, v in JP_VARS[theme].items())
    light = "true" if theme == "light" else "false"
    name = "JupyterLab Light" if theme == "light" else "JupyterLab Dark"
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(name)}</title>
<style>
:root {{
{variables}
}}
html, body {{ margin: 0; background: var(--jp-layout-color0); color: var(--jp-content-font-color1);
  font-family: var(--jp-content-font-family); font-size: var(--jp-content-font-size1); }}
.jp-OutputArea-output {{ padding: 8px 14px; overflow-x: auto; }}
</style></head>
<body data-jp-theme-light="{light}" data-jp-theme-name="{html.escape(name)}">
<div class="jp-OutputArea-output" id="shot">{fragment}</div>
</body></html>
"""


def _bundle_html(obj: Any) -> str:
    """The ``text/html`` a notebook displays for ``obj``."""
    bundle = obj._repr_mimebundle_()
    if isinstance(bundle, tuple):  # (data, metadata)
        bundle = bundle[0]
    return bundle["text/html"]


class Context:
    """What the views are drawn from: the demo warehouse (opened on first use) and the time that
    dates its retention checks."""

    def __init__(self, warehouse: Path, now: Optional[str] = None) -> None:
        self.warehouse_path = Path(warehouse)
        self._now = now
        self._warehouse = None

    @property
    def warehouse(self):
        if self._warehouse is None:
            from puffin_explorer import Warehouse

            # absolute, as the metadata's own paths are (a relative root reads as a moved table)
            self._warehouse = Warehouse(str(self.warehouse_path.resolve()))
        return self._warehouse

    @property
    def now(self) -> str:
        """``--now``, or a week after the newest commit of the warehouse (past the 5-day retention)."""
        if self._now is None:
            wh = self.warehouse
            newest = max(wh.table(name).metadata.last_updated_ms or 0 for name in wh.tables()["table"])
            when = datetime.fromtimestamp(newest / 1000, tz=timezone.utc) + timedelta(days=7)
            self._now = when.replace(hour=0, minute=0, second=0, microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
        return self._now


def _sample(name: str) -> str:
    """A sample file's path as a user in the project folder types it (``resources/…``)."""
    return os.path.relpath(RESOURCES / name)


def _puffin_file(ctx: Context) -> str:
    from puffin_explorer import PuffinFile

    return _bundle_html(PuffinFile(_sample("multi-dv.puffin")))


def _dv_chart(ctx: Context) -> str:
    # shop.events' current DV: the odd events below 20,000, the range 50,000..99,999 and every 1000th event
    t = ctx.warehouse.table("shop.events")
    return _bundle_html(t.read_dv(t.dvs().iloc[0].to_dict()))


def _hex_view(ctx: Context) -> str:
    from puffin_explorer import PuffinFile

    return _bundle_html(PuffinFile(_sample("multi-dv.puffin")).hex())


def _table_card(ctx: Context) -> str:
    from puffin_explorer.display import view

    return _bundle_html(view(ctx.warehouse.table("shop.events"), now=ctx.now))


def _doctor(ctx: Context) -> str:
    return _bundle_html(ctx.warehouse.table("shop.events").health(now=ctx.now))


def _browser(ctx: Context) -> str:
    return _bundle_html(ctx.warehouse.browse(now=ctx.now))


#: name -> (HTML of the view, whether it needs the demo warehouse)
VIEWS: dict[str, tuple[Callable[[Context], str], bool]] = {
    "puffin-file": (_puffin_file, False),
    "dv-chart": (_dv_chart, True),
    "hex-view": (_hex_view, False),
    "table-card": (_table_card, True),
    "doctor": (_doctor, True),
    "browser": (_browser, True),
}


def needs_warehouse(names: Iterable[str]) -> bool:
    """Whether any of these views is drawn from the demo warehouse."""
    return any(VIEWS[n][1] for n in names)


def _save_small(png: bytes, path: Path) -> None:
    """Write ``png`` reduced to a palette (Pillow), or as it is when Pillow is missing."""
    try:
        from PIL import Image
    except ImportError:
        path.write_bytes(png)
        return
    import io

    img = Image.open(io.BytesIO(png)).convert("RGB")
    img.quantize(colors=COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        path, format="PNG", optimize=True)


def render(names: Iterable[str], out: Path, ctx: Optional[Context] = None,
           themes: Iterable[str] = THEMES) -> list[Path]:
    """Draw each named view (keys of :data:`VIEWS`) in each theme into ``out/<name>-<theme>.png``;
    the written paths."""
    from playwright.sync_api import sync_playwright

    names = list(names)
    ctx = ctx or Context(ROOT / "demo-warehouse")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            for name in names:
                fragment = VIEWS[name][0](ctx)
                for theme in themes:
                    doc = Path(tmp) / f"{name}-{theme}.html"
                    doc.write_text(page_html(fragment, theme), encoding="utf-8")
                    page = browser.new_page(viewport={"width": WIDTH, "height": 800}, device_scale_factor=1,
                                            color_scheme=theme)
                    try:
                        page.goto(doc.as_uri())
                        page.wait_for_load_state("load")
                        png = page.locator("#shot").screenshot(animations="disabled")
                    finally:
                        page.close()
                    path = out / f"{name}-{theme}.png"
                    _save_small(png, path)
                    written.append(path)
        finally:
            browser.close()
    return written


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "images"), help="folder of the PNGs (docs/images)")
    parser.add_argument("--warehouse", default="./demo-warehouse", help="the demo warehouse (./demo-warehouse)")
    parser.add_argument("--now", default=None, help="the time that dates retention (default: a week after the "
                                                    "warehouse's newest commit)")
    parser.add_argument("--only", nargs="+", choices=sorted(VIEWS), default=list(VIEWS), help="views to draw")
    args = parser.parse_args(argv)
    if needs_warehouse(args.only) and not Path(args.warehouse, "shop").is_dir():
        print(f"no demo warehouse at {args.warehouse}; build it (a few minutes, embedded Spark) with\n"
              f"  .venv/bin/python -m puffin_explorer.demo {args.warehouse} --no-notebooks", file=sys.stderr)
        return 2
    if not Path(CHROMIUM).exists():
        print(f"no Chromium at {CHROMIUM}: `make browser` installs Debian's", file=sys.stderr)
        return 2
    for path in render(args.only, Path(args.out), Context(Path(args.warehouse), args.now)):
        print(f"{path}  {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
