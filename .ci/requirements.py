#!/usr/bin/env python3
"""Print requirement lines read from pyproject.toml, for the install lanes of .ci/test-python.

  .ci/requirements.py lowest [EXTRA ...]   each requirement of `dependencies` (and of the extras named) pinned at
                                           the lowest version it allows: name==X for name>=X (markers kept)
  .ci/requirements.py extra EXTRA          the requirements an extra adds, less puffin-explorer's own extras

Run with any Python 3.11+ (tomllib); the lanes run it with the interpreter that runs make.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SELF = "puffin-explorer"


def _project() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["project"]


def _lowest(requirement: str) -> str:
    spec, _, marker = requirement.partition(";")
    m = re.match(r"\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*(.*)$", spec)
    if m is None:
        raise SystemExit(f"cannot read the requirement {requirement!r}")
    name, _, versions = m.groups()
    floor = re.search(r">=\s*([0-9][0-9A-Za-z.]*)", versions)
    exact = re.search(r"==\s*([0-9][0-9A-Za-z.*]*)", versions)
    if exact:
        pin = f"{name}=={exact.group(1)}"
    elif floor:
        pin = f"{name}=={floor.group(1)}"
    else:
        raise SystemExit(f"{requirement!r} names no lowest version (>=X): a lowest-versions lane cannot pin it")
    return f"{pin}; {marker.strip()}" if marker.strip() else pin


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("lowest", "extra"):
        print(__doc__, file=sys.stderr)
        return 2
    project = _project()
    extras = project.get("optional-dependencies", {})
    if argv[0] == "lowest":
        reqs = list(project.get("dependencies", []))
        for extra in argv[1:]:
            reqs += [r for r in extras[extra] if not r.startswith(SELF)]
        print("\n".join(_lowest(r) for r in reqs))
    else:
        print("\n".join(r for r in extras[argv[1]] if not r.startswith(SELF)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
