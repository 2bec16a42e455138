"""The Dagster resources srdp's ops use: DuckDB with srdp loaded from one definition file (and the
DuckDB secrets its catalogs need, run on each connection before anything attaches), and the IO
manager of their outputs, which stores nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dagster as dg
import duckdb
from pydantic import Field

import srdp
from srdp.dagster.config_parameter import SrdpConfigFile
from srdp.dagster.launch_config import refuse_launch_changes, secret_variables
from srdp.dagster.secret_hint import with_secrets_hint
from srdp.lake.secrets import create_secret, secret_problem

__all__ = [
    "NO_STORAGE_IO_MANAGER_KEY",
    "RESOURCE_KEY",
    "NoStorageIOManager",
    "SecretStatementError",
    "SrdpResource",
    "check_secret_statements",
]

#: The resource key srdp's ops require.
RESOURCE_KEY = "srdp"

#: The IO manager key of srdp's own op outputs, so an application's ``io_manager`` never sees them.
NO_STORAGE_IO_MANAGER_KEY = "srdp_no_storage_io_manager"


#: Why a secret statement's error shows neither the statement nor DuckDB's message.
_NOT_SHOWN = "the statement and DuckDB's message are not shown because they may hold credentials"


class SecretStatementError(ValueError):
    """An entry of ``secrets`` (``SrdpResource``, ``SrdpIOManager``) is not one temporary CREATE
    SECRET statement DuckDB accepts; the message says which entry (its index, and the
    ``dg.EnvVar`` it came from) and why, never its text."""


def check_secret_statements(where: str, statements: Sequence[str], variables: Sequence[str | None] = ()) -> None:
    """Refuses the first of ``statements`` that is not one temporary CREATE SECRET statement
    (:func:`srdp.lake.secrets.secret_problem`: parsed, nothing runs), by its index and, from
    ``variables``, the environment variable it came from; never its text."""
    con = duckdb.connect()  # DuckDB's parser only: nothing is attached, loaded or created
    try:
        for index, statement in enumerate(statements):
            problem = secret_problem(con, statement)
            if problem is not None:
                variable = variables[index] if index < len(variables) else None
                named = f" (dg.EnvVar({variable!r}))" if variable else ""
                raise SecretStatementError(f"{where} secrets[{index}]{named}: {problem}; {_NOT_SHOWN}")
    finally:
        con.close()


class SrdpResource(dg.ConfigurableResource, SrdpConfigFile):
    """DuckDB with srdp loaded from ``config``; ``secrets`` run on every connection before
    it attaches; catalogs attached on request (writer for maintenance, reader for the monitor)."""

    #: CREATE SECRET statements run on each connection before it attaches: the PostgreSQL role
    #: secrets the catalogs' ``writer_secret`` / ``reader_secret`` name, the S3 credentials.
    #: Pass each with ``dg.EnvVar`` so that Dagster shows the variable's name only; they are
    #: temporary (never persisted by srdp) and never logged or put in an error.
    secrets: list[str] = Field(default_factory=list)
    #: DuckDB settings set on each connection before it attaches (dagster-duckdb's
    #: ``connection_config``): ``{"arrow_large_buffer_size": True, "threads": 2}``.
    connection_config: dict[str, Any] = Field(default_factory=dict)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """Before anything attaches: refuses a run config that changes a field the code location
        gave (the srdp.toml path, the secrets, the settings: :mod:`srdp.dagster.launch_config`),
        and a ``secrets`` entry that is not one temporary CREATE SECRET (named by its variable)."""
        refuse_launch_changes(self, context)
        check_secret_statements(type(self).__name__, self.secrets, secret_variables(context))

    @with_secrets_hint
    def connect(self, catalogs: Sequence[str] | None = None, role: str = "writer") -> duckdb.DuckDBPyConnection:
        """A new connection with the secrets created and ``catalogs`` (default: every catalog of
        the file) attached as ``role``."""
        con = srdp.connect(config=self.config)
        try:
            for name, value in self.connection_config.items():
                con.execute(f"SET {_identifier(name)} = {_setting_literal(name, value)}")
            self._create_secrets(con)
            for catalog in catalogs or self.catalogs(con):
                srdp.call(con, "srdp_attach_catalog", catalog, role=role)
        except Exception:
            con.close()
            raise
        return con

    def _create_secrets(self, con: duckdb.DuckDBPyConnection) -> None:
        """Runs each statement of ``secrets`` on ``con``; the first bad one is refused by its
        index, with neither its text nor DuckDB's message (which quotes it), and no chained cause."""
        for index, statement in enumerate(self.secrets):
            problem = create_secret(con, statement)
            if problem is not None:
                raise SecretStatementError(f"SrdpResource secrets[{index}]: {problem}; {_NOT_SHOWN}")

    @staticmethod
    def catalogs(con: duckdb.DuckDBPyConnection) -> list[str]:
        """Every catalog of the definition, in name order."""
        return sorted(r["catalog"] for r in srdp.call(con, "srdp_catalogs"))


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _setting_literal(name: str, value: Any) -> str:
    """A ``connection_config`` value as SQL: a bool, a number or a string (quoted)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise ValueError(
        f"SrdpResource connection_config[{name!r}]: {type(value).__name__} is not a DuckDB setting value; "
        "give a bool, a number or a string"
    )


class NoStorageIOManager(dg.ConfigurableIOManager):
    """The IO manager of srdp's own ops (``NO_STORAGE_IO_MANAGER_KEY``): their outputs are reports
    whose numbers are in the output's metadata and the run's log; nothing is stored, and loading
    one as an input is refused (an application's ``io_manager``, which may expect assets only,
    never receives them)."""

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        return None

    def load_input(self, context: dg.InputContext) -> Any:
        upstream = context.upstream_output
        source = f"{upstream.step_key}.{upstream.name}" if upstream is not None else "an srdp op output"
        raise RuntimeError(
            f"srdp stores no op outputs: {source} cannot be loaded as input '{context.name}' of "
            f"'{context.op_def.name}'; read its numbers from the output's metadata in the run instead"
        )
