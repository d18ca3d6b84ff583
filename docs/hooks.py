"""MkDocs hook: the tour notebooks are pages of the site, read from notebooks/ where they live.

They stay in one place in the repository (nbval tests them there); this adds them to the site's files as
``notebooks/tour.ipynb`` and ``notebooks/warehouse.ipynb`` before mkdocs-jupyter turns notebooks into pages.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ("notebooks/tour.ipynb", "notebooks/warehouse.ipynb")


@event_priority(100)  # before mkdocs-jupyter's on_files, which wraps every .ipynb it is given
def on_files(files, config):
    for path in NOTEBOOKS:
        files.append(File(path, str(ROOT), config["site_dir"], config["use_directory_urls"]))
    return files


#: A Sphinx cross-reference role as mkdocstrings renders it from a docstring: ``:class:`~a.b.C``` arrives as
#: ``:class:<code>~a.b.C</code>``.
_ROLE = re.compile(r":(?:class|meth|func|attr|data|exc|mod|obj):<code>(~?)\.?([^<]+)</code>")


def _role_as_code(m: re.Match) -> str:
    target = m.group(2)
    return f"<code>{target.rsplit('.', 1)[-1] if m.group(1) else target}</code>"  # "~" shows the last name only


def on_page_content(html, page, config, files):
    """The docstrings' Sphinx roles read as code on the site, as Sphinx would show them."""
    return _ROLE.sub(_role_as_code, html)
