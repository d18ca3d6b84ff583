"""The ``puffin-explorer`` command: one parser, one module per subcommand, one map from errors to exit codes.

Exit codes (every subcommand): 0 read and valid; 1 read, and the findings hold
an error; 2 could not read the input, or the command line is wrong; 130
interrupted.  Errors are one line on stderr that names the input and the fix;
``--debug`` adds the traceback of an unexpected one.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import traceback
from types import ModuleType
from typing import Optional, Sequence

from ._errors import EXIT_FAILED, EXIT_FINDINGS, EXIT_INTERRUPTED, EXIT_OK, describe
from ._options import UsageError, add_shared_options, nonnegative_int, resolve

__all__ = ["main", "build_parser", "SUBCOMMANDS", "EXIT_OK", "EXIT_FINDINGS", "EXIT_FAILED", "EXIT_INTERRUPTED",
           "UsageError", "nonnegative_int"]

#: Every subcommand, in the order ``--help`` lists them; each is the module ``puffin_explorer.cli.<name>``
#: with ``HELP``, ``add_arguments(parser)`` and ``run(args, shared) -> exit code``.
SUBCOMMANDS = ("inspect", "validate", "hex", "dv", "html", "table", "doctor", "parquet", "spark", "demo")

PROG = "puffin-explorer"


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps prose to the terminal; keeps indented example lines as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        blocks = []
        for block in text.split("\n\n"):
            lines = block.splitlines()
            if any(line.startswith("  ") for line in lines):
                blocks.append("\n".join(indent + line for line in lines))
            else:
                blocks.append(super()._fill_text(block, width, indent))
        return "\n\n".join(blocks)


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{name}")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: shared options, then one subparser per module in :data:`SUBCOMMANDS`."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("puffin-explorer")
    except PackageNotFoundError:  # a source checkout on PYTHONPATH
        ver = "unknown"
    parser = argparse.ArgumentParser(
        prog=PROG, description="Look inside Apache Iceberg Puffin files, deletion vectors, Iceberg tables and "
                               "the Parquet files they point into.",
        epilog="exit codes: 0 valid, 1 findings with errors, 2 could not read / usage, 130 interrupted. "
               f"'{PROG} COMMAND --help' shows a command's options.")
    parser.add_argument("--version", action="version", version=f"{PROG} {ver}")
    parser.add_argument("--verbose", action="store_true",
                        help="with --version: every dependency's version and which fast paths are active "
                             "(the manifest decoder, Arrow's memory pool, the S3 client); --json for JSON")
    add_shared_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMANDS:
        mod = _module(name)
        p = sub.add_parser(name, help=mod.HELP, description=getattr(mod, "DESCRIPTION", mod.HELP),
                           epilog=getattr(mod, "EPILOG", None), formatter_class=_HelpFormatter)
        mod.add_arguments(p)
        add_shared_options(p, top=False)
        p.set_defaults(_module=mod, _parser=p)
    return parser


def _place_late_positionals(args: argparse.Namespace, extras: list[str]) -> None:
    """Optional positionals given after options (``table LOC --table X check``), which argparse leaves over."""
    parser: argparse.ArgumentParser = args._parser
    names = list(getattr(args._module, "LATE_POSITIONALS", ()))
    for i, token in enumerate(extras):
        name = next((n for n in names if getattr(args, n, None) is None), None)
        if token.startswith("-") or name is None:
            parser.error(f"unrecognized arguments: {' '.join(extras[i:])}")
        action = next(a for a in parser._actions if a.dest == name)
        if action.choices is not None and token not in action.choices:
            parser.error(f"argument {name}: invalid choice: {token!r} (choose from {', '.join(action.choices)})")
        setattr(args, name, token)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run one command line; returns the exit code (0 valid, 1 findings with errors, 2 failed, 130 interrupted)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = ""
    debug = "--debug" in argv
    try:
        if "--version" in argv and "--verbose" in argv:  # argparse's --version would end the parse first
            from ..versions import show_versions

            show_versions(as_json="--json" in argv or "--format=json" in argv or
                          any(a == "--format" and b == "json" for a, b in zip(argv, argv[1:])))
            return EXIT_OK
        parser = build_parser()
        try:
            args, extras = parser.parse_known_args(argv)
            if extras and hasattr(args, "_parser"):
                _place_late_positionals(args, extras)
            elif extras:
                parser.error(f"unrecognized arguments: {' '.join(extras)}")
        except SystemExit as exc:  # --help, --version, or a usage error (argparse printed it)
            return exc.code if isinstance(exc.code, int) else EXIT_FAILED
        command = args.command
        shared = resolve(args)
        return int(args._module.run(args, shared) or 0)
    except BrokenPipeError:  # the reader went away (| head): nothing more to say
        _silence_stdout()
        return EXIT_OK
    except BaseException as exc:  # noqa: BLE001 - the one place every error becomes a message and a code
        if isinstance(exc, SystemExit):
            return exc.code if isinstance(exc.code, int) else EXIT_FAILED
        code, message = describe(exc, command)
        if debug and code != EXIT_INTERRUPTED:
            traceback.print_exc()
        try:
            sys.stdout.flush()
        except (BrokenPipeError, ValueError):
            pass
        sys.stderr.write(f"{PROG}{' ' + command if command else ''}: {message}\n")
        return code


def _silence_stdout() -> None:
    try:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _run() -> None:  # pragma: no cover - console entry
    """The ``puffin-explorer`` console script."""
    try:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    except (AttributeError, ValueError):
        pass
    sys.exit(main())
