"""The package's DuckDB connections, locked down: no file, no network, no setting changed afterwards.

DuckDB works here on Arrow tables in memory (the measures, the index's row hashes) and on manifests the index
wrote to a private scratch folder.  A table's metadata is untrusted input and the SQL is built by this package,
but a connection that could read any path or URL is one mistake away from reading what a table names: so each
connection has ``enable_external_access = false`` (only ``allowed_directories`` may be read, when given) and
``lock_configuration = true``.
"""

from __future__ import annotations

from typing import Any, Iterable


def locked_duckdb(allowed_directories: Iterable[str] = (), setup: Iterable[str] = (), **config: Any):
    """A DuckDB connection (``config`` as ``duckdb.connect`` takes it; ``threads`` 1 by default) that reads no
    file and no URL but those under ``allowed_directories``, after running the ``setup`` statements (``LOAD`` an
    extension: they run before the lock; a callable is called with the connection), with its configuration
    locked."""
    import duckdb

    config.setdefault("threads", 1)
    con = duckdb.connect(config=config)
    try:
        con.execute("SET enable_progress_bar = false")  # it would print into notebooks and terminals
        for statement in setup:
            if callable(statement):
                statement(con)
            else:
                con.execute(statement)
        folders = [d if d.endswith("/") else d + "/" for d in allowed_directories]
        if folders:
            con.execute("SET allowed_directories = ?", [folders])
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con
