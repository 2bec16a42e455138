"""A dbt-duckdb plugin that loads srdp and makes the lake dbt's target database.

In ``profiles.yml`` (``python -m srdp dbt-profile`` writes it)::

    database: lake                       # dbt's target database: the lake
    attach:                              # declares `lake` to dbt-duckdb (a DuckLake); never run
      - {path: "ducklake:srdp:lake", alias: lake, is_ducklake: true}
    plugins:
      - module: srdp.dbt.plugin
        alias: srdp
        config:
          extension: /abs/path/to/srdp.duckdb_extension   # default: srdp.extension_path()
          catalog: lake                                    # attach it as writer and USE it
    settings:
      srdp_config: /abs/srdp.toml

dbt-duckdb 1.11.1 opens its database with ``duckdb.connect(config=config_options)``, creates the
profile's ``secrets:``, calls ``configure_connection`` of each plugin, and only then runs the
profile's ``attach:`` entries as ``ATTACH IF NOT EXISTS``. This plugin ``LOAD``s the extension
from its path (nothing is installed, copied or downloaded), then, with ``catalog``, attaches that
catalog through srdp (``srdp_attach_catalog(catalog, role := 'writer')``: srdp.toml's metadata,
data path and options) and ``USE``s it, so the ``attach:`` entry finds ``lake`` attached and does
nothing. The entry is there because dbt-duckdb accepts ``database: lake`` only for an attached
alias, and it makes ``adapter.is_ducklake()`` true (dbt-duckdb's DuckLake code paths). Every
cursor dbt opens ``USE``s the lake too (``configure_cursor``), so two-part names such as
``{{ this.schema }}.seed`` bind to the lake, not to DuckDB's ``memory`` database.

The srdp.toml is the ``srdp_config`` setting (dbt-duckdb passes ``settings:`` into every plugin's
config), else srdp's own lookup ($SRDP_CONFIG, then ./srdp.toml).

An attach that fails is one line for dbt (no traceback): srdp's message, or, when a DuckDB
secret is missing or the server refused it (srdp then speaks of ``CREATE SECRET``, which a dbt
user never writes), the environment variable the profile's ``secrets:`` block reads that is not
set, or the entry the profile lacks (:func:`attach_failure`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import duckdb

from dbt.adapters.duckdb.plugins import BasePlugin
from dbt.adapters.events.logging import AdapterLogger
from duckdb import DuckDBPyConnection

import srdp
from srdp.dbt.profile import EXTENSION_LOOKUP, extension_not_found, secret_variables
from srdp.doctor import srdp_message

__all__ = ["Plugin", "SrdpAttachError", "attach_failure", "format_row"]

#: srdp's message of a role whose DuckDB secret the session lacks (src/error.rs: MissingSecret).
_MISSING_SECRET = re.compile(r"catalog '(?P<catalog>[^']+)' needs the DuckDB secret '(?P<secret>[^']+)' for the (?P<role>\w+) role")


class SrdpAttachError(RuntimeError):
    """srdp's attach failed; a RuntimeError, which dbt-duckdb reports as one line
    (``FailedToConnectError``) instead of a traceback per thread that opens a connection."""


def attach_failure(config: str | None, catalog: str, error: duckdb.Error) -> str:
    """The one line dbt shows for a failed attach of ``catalog`` (``config``: the srdp.toml):

    * the role lacks a DuckDB secret (the profile has no ``secrets:`` entry for it; with one, dbt
      would have created it): the entry to add, and the variables the rendered entry reads;
    * a variable the profile's ``secrets:`` block reads is unset or empty: that variable. dbt
      renders an unset ``DBT_ENV_SECRET_*`` variable as nothing, so dbt-duckdb creates the
      secret without a password and the server refuses it, and srdp's message then speaks of
      ``CREATE SECRET``, which a dbt user never writes;
    * anything else: srdp's message.
    """
    message = srdp_message(error)
    try:
        variables = secret_variables(Path(config), catalog) if config else {}
    except (OSError, ValueError, duckdb.Error):
        variables = {}
    missing = _MISSING_SECRET.search(message)
    if missing is not None:
        secret = missing["secret"]
        what = f"catalog {missing['catalog']!r} needs DuckDB secret {secret!r} for the {missing['role']} role"
        if secret in variables:
            return (
                f"srdp.dbt.plugin: {what}, and the profile has no secrets: entry named {secret!r}; render it again "
                f"with `python -m srdp dbt-profile` (its entry reads {' and '.join(variables[secret])} from the "
                "environment)"
            )
        return f"srdp.dbt.plugin: {what}, and the profile has no secrets: entry named {secret!r}; add one to its secrets: block"
    unset = [(v, s) for s, names in variables.items() for v in names if not os.environ.get(v)]
    if unset:
        states = " and ".join(f"{v} ({'empty' if v in os.environ else 'not set'})" for v, _ in unset)
        secrets = ", ".join(sorted({repr(s) for _, s in unset}))
        one = len(unset) == 1
        return (
            f"srdp.dbt.plugin: the profile's secrets: block reads environment variable{'' if one else 's'} "
            f"{states} for DuckDB secret {secrets}, which srdp's attach of catalog {catalog!r} needs. "
            f"Set {'it' if one else 'them'} where dbt runs"
        )
    return f"srdp.dbt.plugin: {message}"


_LOGGER = AdapterLogger("srdp")


def _literal(value: str) -> str:
    """A SQL string literal (quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


def _identifier(value: str) -> str:
    """A quoted SQL identifier (double quotes doubled)."""
    return '"' + value.replace('"', '""') + '"'


def format_row(function: str, columns: list[str], row: tuple[Any, ...]) -> str:
    """``<function>: col=value | col=value``, as the srdp dbt macros print a result row (NULL,
    true/false, newlines as spaces)."""

    def cell(value: Any) -> str:
        if value is None:
            return "NULL"
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value).replace("\n", " ")

    return f"{function}: " + " | ".join(f"{name}={cell(value)}" for name, value in zip(columns, row, strict=True))


class Plugin(BasePlugin):
    """Loads srdp (``config: {extension: <path>}``) and attaches and uses ``catalog`` as writer."""

    def initialize(self, plugin_config: dict[str, Any]) -> None:
        configured = plugin_config.get("extension")
        self.configured = bool(configured)
        self.extension = Path(str(configured)) if configured else srdp.extension_path()
        catalog = plugin_config.get("catalog")
        self.catalog = str(catalog) if catalog else None
        config = plugin_config.get("srdp_config")
        self.srdp_config = str(config) if config else None

    def configure_connection(self, conn: DuckDBPyConnection) -> None:
        if not self.extension.is_file():
            raise FileNotFoundError(f"srdp.dbt.plugin: {self._not_found()}")
        conn.execute(f"LOAD {_literal(str(self.extension))}")
        if self.catalog is None:
            return
        arguments = [_literal(self.catalog), "role := 'writer'"]
        if self.srdp_config:
            arguments.append(f"config := {_literal(self.srdp_config)}")
        try:
            result = conn.execute(f"SELECT * FROM srdp_attach_catalog({', '.join(arguments)})")
        except duckdb.Error as error:
            raise SrdpAttachError(attach_failure(self.srdp_config, self.catalog, error)) from None
        columns = [d[0] for d in result.description]
        for row in result.fetchall():
            _LOGGER.info(format_row("srdp_attach_catalog", columns, row))
        conn.execute(f"USE {_identifier(self.catalog)}")

    def configure_cursor(self, cursor: DuckDBPyConnection) -> None:
        if self.catalog is not None:
            cursor.execute(f"USE {_identifier(self.catalog)}")

    def _not_found(self) -> str:
        if not self.configured:
            return extension_not_found(self.extension)
        return (
            f"srdp extension not found at {self.extension}, the profile's plugin config `extension:`; "
            f"fix it (`python -m srdp dbt-profile` renders the current path) or remove it to use "
            f"srdp's own lookup ({EXTENSION_LOOKUP})"
        )
