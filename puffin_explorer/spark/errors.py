"""Spark failures as this project's errors: the cause in one or two lines, never a bare Py4JJavaError.

    with pes.spark_errors():          # around any action on a DataFrame these functions return
        pes.dv_positions(spark, t).count()

Spark reports a failed job as a JVM stack trace (classic) or a gRPC error
(Spark Connect) whose first line says only which call failed.  The cause is
further down: a missing file, a catalog without such a namespace, a Python
worker that raised one of this package's errors.  :func:`spark_error` finds it.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Optional

from ..errors import PuffinError, SourceError

#: Exception class names that come from Spark (classic, py4j, Connect).
_SPARK_ERRORS = {
    "Py4JJavaError", "Py4JError", "AnalysisException", "PythonException", "IllegalArgumentException",
    "ParseException", "SparkConnectGrpcException", "SparkConnectException", "CapturedException",
    "SparkRuntimeException", "SparkUpgradeException", "StreamingQueryException", "QueryExecutionException",
    "UnknownException", "ArithmeticException", "ArrayIndexOutOfBoundsException", "DateTimeException",
    "NumberFormatException", "SparkNoSuchElementException", "TempTableAlreadyExistsException",
    "PySparkException",
}

_OUR_ERROR = re.compile(r"puffin_explorer\.errors\.(\w+Error): (.+)")
_MISSING = [
    re.compile(r"Failed to open input stream for file: (\S+)"),
    re.compile(r"FileNotFoundException: (?:File )?(\S+?) does not exist"),
    re.compile(r"FileNotFoundException: (\S+) \(No such file or directory\)"),
    re.compile(r"\[PATH_NOT_FOUND\] Path does not exist: (\S+?)\.?$", re.M),
    re.compile(r"NotFoundException: (?:File does not exist|Cannot find file): (\S+)"),
]
_CAUSED_BY = re.compile(r"^\s*Caused by: ([\w.$]+(?:Exception|Error)): ?(.*)$", re.M)
_ERROR_CLASS = re.compile(r"\[([A-Z_]+(?:\.[A-Z_]+)?)\] (.+)")


class SparkJobError(PuffinError):
    """A Spark query or job failed; the message is its cause, in one or two lines."""

    def __init__(self, message: str, cause_class: str = "", code: str = "spark.job") -> None:
        self.cause_class = cause_class
        super().__init__(message, None, code)


def _is_spark_error(exc: BaseException) -> bool:
    return any(cls.__name__ in _SPARK_ERRORS for cls in type(exc).__mro__) or \
        type(exc).__module__.startswith(("pyspark.errors", "py4j"))


def _text(exc: BaseException) -> str:
    parts = [str(exc)]
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            parts.append(str(java.toString()))
        except Exception:  # the gateway may be gone
            pass
    return "\n".join(p for p in parts if p)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    half = (limit - 3) // 2  # keep both ends: the cause starts the message, the byte offset ends it
    return text[:half] + " … " + text[-half:]


def spark_error(exc: BaseException) -> BaseException:
    """This project's error for a Spark exception (``exc`` itself when it is not one from Spark).

    :class:`~puffin_explorer.errors.SourceError` for a missing file, the original
    :class:`PuffinError` text for a failure inside this package's executor code,
    :class:`SparkJobError` with the root cause for anything else.
    """
    if isinstance(exc, PuffinError) or not _is_spark_error(exc):
        return exc
    text = _text(exc)
    name = type(exc).__name__
    ours = _OUR_ERROR.search(text)
    if ours:
        from .. import errors as project_errors

        cls = getattr(project_errors, ours.group(1), None)
        if isinstance(cls, type) and issubclass(cls, SourceError):
            # a storage error on an executor: the same error, so callers can catch NotFoundError etc.
            error = cls(_short(ours.group(2), 600))
            error.code = "source.outside-scope" if cls is project_errors.OutsideScopeError else "spark.executor"
            return error
        return SparkJobError(f"on an executor: {_short(ours.group(2))}", ours.group(1), "spark.executor")
    for pattern in _MISSING:
        m = pattern.search(text)
        if m:
            path = m.group(1).rstrip(".,;")
            error = SourceError(f"no such file: {path} (Spark could not open it; a moved table needs "
                                "relocate=... or a Table opened with it)")
            error.code = "spark.missing-file"
            return error
    if "Failed to find the data source: iceberg" in text or "DATA_SOURCE_NOT_FOUND" in text and "iceberg" in text:
        return SparkJobError("this Spark session has no Iceberg runtime: pass a Table or a metadata location "
                             "(planned without Iceberg), or start Spark with the Iceberg runtime jar",
                             name, "spark.no-iceberg")
    caused = _CAUSED_BY.findall(text)
    first = next((line.strip() for line in text.splitlines() if line.strip()), name)
    if caused:
        cls, message = caused[-1]
        detail = f"{cls.rsplit('.', 1)[-1]}: {message}" if message else cls.rsplit(".", 1)[-1]
    else:
        detail = first
    detail = re.sub(r"^An error occurred while calling [\w.]+\.?\s*", "", detail)
    m = _ERROR_CLASS.search(detail)
    code = "spark.analysis" if "Analysis" in name or (m and "NOT_FOUND" in m.group(1)) else "spark.job"
    if m:
        detail = f"{m.group(1)}: {m.group(2)}"
    return SparkJobError(_short(detail) if detail else name, name, code)


@contextmanager
def spark_errors():
    """Turn Spark exceptions raised inside the block into this project's errors (see :func:`spark_error`)."""
    try:
        yield
    except Exception as exc:
        converted = spark_error(exc)
        if converted is exc:
            raise
        converted.spark_exception = exc  # the full Spark error, for whoever needs the stack trace
        raise converted from None


def describe(exc: BaseException) -> Optional[str]:
    """One line for a terminal: ``Type: message`` of the converted error."""
    converted = spark_error(exc)
    return f"{type(converted).__name__}: {converted}"
