"""Python side of srdp: one way to open DuckDB with the srdp extension loaded.

Every Python integration (tests, the demo, Dagster, the dlt helper) opens DuckDB through
:func:`connect`, so they all load the same extension file from the same extension directory,
with extension downloads switched off (this platform runs offline).

>>> import srdp
>>> con = srdp.connect(config="examples/srdp.toml")
>>> con.sql("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import duckdb

from srdp import install as _install
from srdp.sql import call_sql, literal

__all__ = ["call", "connect", "extension_path", "extension_directory", "duckdb_config", "no_lake_yet"]

# srdp's own messages of a reader attach that found no lake (src/error.rs: LakeMissing,
# LakeNotInitialised) and DuckLake's of a read-only attach of an empty PostgreSQL database.
_NO_LAKE = re.compile(r"has no lake yet: |is not initialised yet: |creating a new DuckLake is explicitly disabled")


def extension_path() -> Path:
    """The srdp extension file: ``$SRDP_EXTENSION``, the wheel's file, or the checkout's release
    build (:func:`srdp.install.find_extension`)."""
    return _install.find_extension().path


def extension_directory() -> Path:
    """DuckDB's extension directory: ``$SRDP_EXTENSION_DIR``, the checkout's ``.duckdb/extensions``
    or a per-user cache folder of this environment, filled from the extension wheels on first use
    (:mod:`srdp.install`)."""
    return _install.extension_directory()


def duckdb_config() -> dict[str, str]:
    """Connection options every srdp user needs: unsigned srdp, local extensions, no downloads."""
    return _install.duckdb_settings(extension_directory())


def connect(database: str = ":memory:", config: str | os.PathLike | None = None) -> duckdb.DuckDBPyConnection:
    """Opens DuckDB 1.5.5 with srdp loaded; ``config`` sets ``srdp_config`` for this connection."""
    path = extension_path()
    if not path.is_file():
        raise FileNotFoundError(_install.not_found_message(path))
    settings: dict[str, str | bool | int | float | list[str]] = {**duckdb_config()}
    con = duckdb.connect(database, config=settings)
    con.execute(f"LOAD {literal(str(path))}")
    if config is not None:
        con.execute(f"SET srdp_config = {literal(os.path.abspath(config))}")
    return con


def call(con: duckdb.DuckDBPyConnection, function: str, *args: Any, **named: Any) -> list[dict[str, Any]]:
    """Rows of ``SELECT * FROM function(args..., name := value...)`` as dicts.

    Arguments are written as SQL literals (:func:`srdp.sql.call_sql`: a statement with bound
    parameters would import pandas into the process); ``None`` named arguments are left out, so
    the function's default applies.
    """
    cursor = con.execute(call_sql(function, *args, **named))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def no_lake_yet(message: str) -> bool:
    """Whether an attach's error ``message`` says the catalog's lake was never created (a
    reader's attach never creates one; the writer's first attach does)."""
    return _NO_LAKE.search(message) is not None
