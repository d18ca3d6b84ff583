"""Write the findings catalogue into the documentation: ``python -m puffin_explorer.findings_page --page``.

A module of its own, not imported by the package, so ``-m`` runs it without Python warning that the
module was imported before it ran.
"""

from __future__ import annotations

from typing import Optional

from .findings import DOCS_PAGE, README_END, README_START, markdown_table, update_readme


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m puffin_explorer.findings_page [--page docs/findings.md]``: print or write the catalogue table."""
    import argparse
    import os

    ap = argparse.ArgumentParser(prog="python -m puffin_explorer.findings_page", description=main.__doc__)
    ap.add_argument("--page", nargs="?", const=DOCS_PAGE, metavar="PATH",
                    help=f"rewrite the table between the markers of this Markdown page (default {DOCS_PAGE})")
    args = ap.parse_args(argv)
    if args.page:
        if not os.path.isfile(args.page):
            ap.error(f"no such page: {args.page} (run from the repository root)")
        with open(args.page, encoding="utf-8") as fh:
            text = fh.read()
        if README_START not in text or README_END not in text.split(README_START, 1)[1]:
            ap.error(f"{args.page} has no {README_START} ... {README_END} markers")
        changed = update_readme(args.page)
        print("updated" if changed else "unchanged", args.page)
    else:
        print(markdown_table())
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
