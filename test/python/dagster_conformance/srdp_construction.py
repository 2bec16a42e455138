"""What the ported dagster-duckdb suites construct instead of ``DuckDB*IOManager(database=...)``
and read back with instead of ``duckdb.connect(database=...)``: an ``SrdpIOManager`` over a lake
whose every schema the suites use is owned by ``io_manager``, and an srdp connection to it.

One lake per test directory (``tmp_path``), created by its first writer, as dagster-duckdb's
database file is created by its first connection: a test's first read (the first partition of a
self-dependent asset) finds no lake yet. SQLite metadata, so the IO manager's connection and the
read-back connection may be open together. dagster-duckdb's default
schema is ``public``, so the manager is given ``schema="public"`` unless the test names one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest

import srdp
from conftest import write_config
from iomanager_support import close_io_sessions
from srdp.dagster.io_manager import SrdpIOManager

#: Every schema the ported suites write (each owned by the IO manager's writer).
SCHEMAS = ("public", "my_schema", "custom_schema", "a_df", "add_one", "schema1", "schema2")

CONFIG = '[catalogs.lake]\nmetadata = "sqlite:catalog/lake.sqlite"\ndata_path = "data/lake"\n' + "".join(
    f'\n[catalogs.lake.schemas.{s}]\nwriter = "io_manager"\nlayer = "curated"\n' for s in SCHEMAS
)

#: What the suites' ``db_file`` (the database named in ``dagster/table_name``) becomes: the catalog.
CATALOG = "lake"


def lake_config(tmp_path: str | os.PathLike[str]) -> str:
    """The srdp.toml of the test's lake, written on first use (the lake is not created: its
    first writer creates it)."""
    directory = Path(tmp_path) / "srdp_lake"
    cfg = directory / "srdp.toml"
    if not cfg.exists():
        directory.mkdir(parents=True, exist_ok=True)
        write_config(directory, CONFIG)
    return str(cfg)


def srdp_io_manager(tmp_path: str | os.PathLike[str], schema: str | None = None) -> SrdpIOManager:
    """For ``DuckDB{Pandas,Polars}IOManager(database=..., schema=...)``."""
    return SrdpIOManager(config_path=lake_config(tmp_path), schema=schema or "public")


def srdp_io_manager_definition(tmp_path: str | os.PathLike[str], schema: str | None = None) -> dg.IOManagerDefinition:
    """For the legacy ``duckdb_{pandas,polars}_io_manager.configured({...})``: a resource definition."""
    definition = srdp_io_manager(tmp_path, schema).get_resource_definition()
    assert isinstance(definition, dg.IOManagerDefinition)
    return definition


class LakeConnection:
    """For ``duckdb.connect(database=...)``: an srdp connection with the lake attached (writer role,
    since the suites clean up with ``DELETE``) and in use, so ``my_schema.t`` names its table."""

    def __init__(self, tmp_path: str | os.PathLike[str]) -> None:
        self.con = srdp.connect(config=lake_config(tmp_path))
        self.con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
        self.con.execute("USE lake")

    def execute(self, sql: str, *args: Any) -> duckdb.DuckDBPyConnection:
        return self.con.execute(sql, *args)

    def close(self) -> None:
        # An srdp connection keeps its database open after close: DETACH first (see iomanager_support).
        self.con.execute("USE memory")
        self.con.execute("DETACH lake")
        self.con.close()


def srdp_connect(tmp_path: str | os.PathLike[str]) -> LakeConnection:
    return LakeConnection(tmp_path)


@pytest.fixture(autouse=True)
def _close_io_sessions_after_test() -> Iterator[None]:
    """The IO manager's connections of this process close after each test (their lake is gone)."""
    yield
    close_io_sessions()
