"""One map from what went wrong to an exit code and a one-line message, for every subcommand."""

from __future__ import annotations

import re
from typing import Optional

from ._options import UsageError

#: Exit codes of every subcommand.
EXIT_OK = 0  # read, and valid
EXIT_FINDINGS = 1  # read, and the findings hold at least one error
EXIT_FAILED = 2  # could not read, or the command line is wrong
EXIT_INTERRUPTED = 130  # Ctrl-C

#: Optional modules and the extra that installs them.
_EXTRAS = {
    "pyspark": "spark", "py4j": "spark", "s3fs": "s3", "boto3": "s3", "botocore": "s3", "aiobotocore": "s3",
    "matplotlib": "notebook", "ipywidgets": "notebook", "IPython": "notebook", "nbclient": "notebook",
    "nbconvert": "notebook", "nbformat": "notebook", "gcsfs": None, "adlfs": None,
}

#: Spark error classes shown with their cause instead of a traceback.
_SPARK_ERRORS = ("AnalysisException", "Py4JJavaError", "PythonException", "IllegalArgumentException",
                 "ParseException", "StreamingQueryException", "SparkConnectGrpcException", "Py4JError",
                 "PySparkException", "SparkRuntimeException", "QueryExecutionException")

#: Hints for Spark error classes (the bracketed code at the start of an AnalysisException).
_SPARK_HINTS = {
    "REQUIRES_SINGLE_PART_NAMESPACE": "the catalog in the table name is not configured in this session: "
                                      "pass --warehouse FOLDER (registered as catalog --catalog, default wh), "
                                      "or name the table CATALOG.NAMESPACE.TABLE with a configured catalog",
    "TABLE_OR_VIEW_NOT_FOUND": "check the name (CATALOG.NAMESPACE.TABLE, or NAMESPACE.TABLE with --warehouse), "
                               "or pass a metadata.json location",
    "SCHEMA_NOT_FOUND": "no such namespace in that catalog: check the name, or pass --warehouse FOLDER",
    "UNRESOLVED_COLUMN": "the table lacks a column this scan needs: is it an Iceberg format-v3 table with DVs?",
}


_SQLSTATE = re.compile(r"\s*SQLSTATE")


def one_line(text: str, limit: int = 400) -> str:
    """The text on one line, cut at ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _java_name(text: str) -> str:
    """``org.apache.iceberg.exceptions.NotFoundException: x`` → ``NotFoundException: x``."""
    return re.sub(r"\b(?:[a-z_][a-z0-9_]*\.)+([A-Z]\w*(?:Exception|Error))", r"\1", text)


def explain_spark_error(exc: BaseException) -> Optional[str]:
    """One or two lines for an error raised by Spark: the root cause and, when known, the fix."""
    name = type(exc).__name__
    if name not in _SPARK_ERRORS and not type(exc).__module__.startswith(("pyspark", "py4j")):
        return None
    text = str(exc).strip()
    cause = None
    java = getattr(exc, "java_exception", None)
    if java is not None:  # a Py4JJavaError: walk to the root cause in the JVM
        try:
            node, seen = java, 0
            while node.getCause() is not None and seen < 50:
                node, seen = node.getCause(), seen + 1
            cause = str(node.toString())
        except Exception:  # noqa: BLE001 - the gateway may be gone; fall back to the text
            cause = None
    if cause is None:
        caused = re.findall(r"^\s*Caused by: (.+)$", text, re.M)
        if caused:
            cause = caused[-1]
        elif name == "Py4JJavaError":
            lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("An error occurred")]
            cause = lines[0] if lines else text
    first = text.splitlines()[0] if text else name
    if cause is not None:
        message = f"Spark failed: {one_line(_java_name(cause))}"
    else:
        message = f"Spark {name}: {one_line(re.split(_SQLSTATE, first)[0])}"
    code = re.match(r"\[([A-Z_]+)(?:\.[A-Z_]+)?\]", first)
    hint = _SPARK_HINTS.get(code.group(1)) if code else None
    if hint is None and cause and ("NotFoundException" in cause or "FileNotFoundException" in cause):
        hint = ("a file the table's metadata names is missing: if the table was moved or copied, "
                "'puffin-explorer table LOCATION --relocate OLD=NEW' reads it where it lies")
    return message + (f"\n  hint: {hint}" if hint else "")


def describe(exc: BaseException, command: str = "") -> tuple[int, str]:
    """The exit code and the message (one line, two for Spark) for an exception that ended a command."""
    from ..errors import PuffinError

    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED, "interrupted"
    if isinstance(exc, UsageError):
        return EXIT_FAILED, one_line(str(exc), 1000)
    if isinstance(exc, PuffinError):
        return EXIT_FAILED, one_line(str(exc), 1000)
    if type(exc).__name__ == "SparkSetupError":
        return EXIT_FAILED, one_line(str(exc), 1000)
    spark = explain_spark_error(exc)
    if spark is not None:
        return EXIT_FAILED, spark
    if isinstance(exc, ImportError):
        module = (getattr(exc, "name", None) or "").split(".")[0]
        extra = _EXTRAS.get(module)
        fix = f"pip install 'puffin-explorer[{extra}]'" if extra else f"pip install {module or 'the missing package'}"
        return EXIT_FAILED, f"{command or 'this command'} needs {module or 'a package'} that is not installed: {fix}"
    if isinstance(exc, OSError):
        return EXIT_FAILED, _os_error(exc)
    if isinstance(exc, MemoryError):
        return EXIT_FAILED, ("out of memory: the input asks for more than this machine has (a bug if a file "
                             "caused it; rerun with --debug for the traceback)")
    detail = one_line(f"{type(exc).__name__}: {exc}", 300)
    return EXIT_FAILED, (f"unexpected error{' in ' + command if command else ''}: {detail} "
                         "(rerun with --debug for the traceback)")


def _os_error(exc: OSError) -> str:
    name = exc.filename if exc.filename is not None else ""
    if isinstance(exc, FileNotFoundError):
        return f"no such file or folder: {name or exc}"
    if isinstance(exc, IsADirectoryError):
        return f"{name} is a folder, not a file"
    if isinstance(exc, NotADirectoryError):
        return f"{name} is a file, not a folder"
    if isinstance(exc, PermissionError):
        return f"permission denied: {name or exc}"
    reason = exc.strerror or str(exc) or type(exc).__name__
    return one_line(f"cannot read or write {name}: {reason}" if name else f"{type(exc).__name__}: {reason}")
