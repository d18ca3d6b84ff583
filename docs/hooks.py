"""MkDocs hook: the tour notebooks are pages of the site, read from notebooks/ where they live.

They stay in one place in the repository (nbval tests them there); this adds them to the site's files as
``notebooks/tour.ipynb`` and ``notebooks/warehouse.ipynb`` before mkdocs-jupyter turns notebooks into pages.
"""

from __future__ import annotations

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
