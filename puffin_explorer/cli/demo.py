"""``puffin-explorer demo [FOLDER]``: build the demo warehouse with embedded Spark and run the tour notebooks."""

from __future__ import annotations

import argparse

from ._options import Shared

HELP = "build a demo Iceberg warehouse with embedded Spark and run the tour notebooks"
DESCRIPTION = ("Build ./demo-warehouse (three Iceberg tables, written by an embedded Spark with the Iceberg "
               "runtime; Java 17 needed), then run notebooks/tour.ipynb and notebooks/warehouse.ipynb into "
               "HTML pages. A finished warehouse is reused; Ctrl-C keeps the pages already written.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..demo import add_arguments as demo_arguments

    demo_arguments(p)


def run(args: argparse.Namespace, shared: Shared) -> int:
    from ..demo import run as demo_run

    return demo_run(args)
