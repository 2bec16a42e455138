"""Shared pieces of the SrdpIOManager tests: lakes on SQLite and DuckDB-file catalogs, and an
independent view of them.

Every check reads the lake on a connection of its own (``srdp.connect`` + the reader role) with
plain SQL over the tables and over DuckLake's metadata tables (``ducklake_snapshot``,
``ducklake_snapshot_changes``, ``ducklake_table``, ``ducklake_column``), never through the IO
manager. A DuckDB-file catalog can be attached by one database of a process at a time, so a view
first closes the IO manager's connections of this process (the next write opens a new one).

Every connection here DETACHes the lake before it closes: closing an srdp connection does not
release its database (srdp's runner connection keeps it open), so a DuckDB-file catalog would
stay attached in this process and the next ATTACH of it would fail with ``Unique file handle
conflict``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pyarrow as pa
import pytest

import srdp
from conftest import write_config
from lakecheck import Lake
from srdp.dagster.lake import LakeSession

#: The catalog's metadata per backend, relative to the definition file.
BACKENDS = {"sqlite": '"sqlite:catalog/lake.sqlite"', "duckdb": '"catalog/lake.ducklake"'}

# analytics/marts: the IO manager's curated schemas; raw_io: its raw schema (the safety rules
# apply); raw: dlt's; curated: dbt's; reports: another writer's. "misc" is named nowhere.
CONFIG = """
[custom]
writers = ["reporting"]     # a writer of the file's own, beside dlt, dbt and io_manager

[catalogs.lake]
metadata = {metadata}
data_path = "data/lake"

[catalogs.lake.schemas.analytics]
writer = "io_manager"
layer = "curated"

[catalogs.lake.schemas.marts]
writer = "io_manager"
layer = "curated"

[catalogs.lake.schemas.raw_io]
writer = "io_manager"
layer = "raw"

[catalogs.lake.schemas.raw]
writer = "dlt"
layer = "raw"

[catalogs.lake.schemas.curated]
writer = "dbt"
layer = "curated"

[catalogs.lake.schemas.reports]
writer = "reporting"
layer = "curated"
"""

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def release(con: duckdb.DuckDBPyConnection, catalog: str = "lake") -> None:
    """DETACHes ``catalog`` when it is attached, then closes ``con``."""
    try:
        if con.execute("SELECT count(*) FROM duckdb_databases() WHERE database_name = ?", [catalog]).fetchone()[0]:
            con.execute(f"DETACH {catalog}")
    finally:
        con.close()


def close_io_sessions() -> None:
    """Closes the IO manager's connections of this process (it opens a new one on next use)."""
    with LakeSession._guard:
        for session in LakeSession._sessions.values():
            release(session.con, session.catalog)
        LakeSession._sessions.clear()


@pytest.fixture(autouse=True)
def _close_io_sessions_after_test() -> Iterator[None]:
    yield
    close_io_sessions()


def make_lake(directory: Path, backend: str = "sqlite", extra: str = "") -> Path:
    """Writes the definition and creates the (empty) lake through srdp's writer role."""
    cfg = write_config(directory, CONFIG.format(metadata=BACKENDS[backend]) + extra)
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    finally:
        release(con)
    return cfg


@pytest.fixture(params=sorted(BACKENDS))
def lake(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A fresh lake, once on each backend; the value is its srdp.toml."""
    return make_lake(tmp_path / "lake", request.param)


@pytest.fixture
def sqlite_lake(tmp_path: Path) -> Path:
    return make_lake(tmp_path / "lake", "sqlite")


def io_manager(cfg: Path, **options: Any) -> Any:
    from srdp.dagster.io_manager import SrdpIOManager

    return SrdpIOManager(config_path=str(cfg), **options)


@dataclass
class View:
    """Plain SQL on a reader connection of its own."""

    con: duckdb.DuckDBPyConnection

    @property
    def meta(self) -> Lake:
        return Lake(self.con)

    def rows(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        return self.con.execute(sql, list(params or [])).fetchall()

    def table(self, name: str, order: str = "ALL") -> list[tuple[Any, ...]]:
        """Every row of ``lake.<name>`` (``schema.table``), ordered."""
        return self.rows(f"SELECT * FROM lake.{name} ORDER BY {order}")

    def latest_snapshot(self) -> int:
        return int(self.rows(f"SELECT max(snapshot_id) FROM {self.meta.table('ducklake_snapshot')}")[0][0])

    def snapshots(self) -> list[dict[str, Any]]:
        """Every snapshot's changes, author, message and extra info, in order."""
        rows = self.rows(
            "SELECT snapshot_id, changes_made, author, commit_message, commit_extra_info "
            f"FROM {self.meta.table('ducklake_snapshot_changes')} ORDER BY snapshot_id"
        )
        keys = ("snapshot_id", "changes", "author", "message", "extra")
        return [dict(zip(keys, row)) for row in rows]

    def snapshot_of_run(self, run_id: str) -> dict[str, Any]:
        """The one snapshot whose commit message names ``run_id``."""
        found = [s for s in self.snapshots() if s["message"] and run_id in s["message"]]
        assert len(found) == 1, found
        return found[0]

    def table_id(self, schema: str, table: str) -> int:
        return self.meta.datasets()[(schema, table)]

    def columns(self, schema: str, table: str) -> list[tuple[str, str, int, int | None]]:
        """Every column the table ever had: (name, DuckLake type, begin, end snapshot), by id."""
        return [
            tuple(row)  # type: ignore[misc]
            for row in self.rows(
                "SELECT column_name, column_type, begin_snapshot, end_snapshot "
                f"FROM {self.meta.table('ducklake_column')} WHERE table_id = ? ORDER BY column_id, begin_snapshot",
                [self.table_id(schema, table)],
            )
        ]


@contextmanager
def view(cfg: Path) -> Iterator[View]:
    close_io_sessions()
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        yield View(con)
    finally:
        release(con)


def write_sql(cfg: Path, *statements: str) -> None:
    """Runs ``statements`` outside Dagster on a writer connection of its own, one transaction each."""
    close_io_sessions()
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
        for statement in statements:
            con.execute(statement)
    finally:
        release(con)


def metadata_values(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A materialization's metadata as plain values (TableSchema kept as is)."""
    return {key: getattr(value, "value", value) for key, value in metadata.items()}


def materialization(result: dg.ExecuteInProcessResult, node: str) -> dict[str, Any]:
    """The metadata of the one materialization of ``node`` in ``result``."""
    (event,) = result.asset_materializations_for_node(node)
    return metadata_values(event.metadata)


def by_partition(result: dg.ExecuteInProcessResult, node: str) -> dict[str, dict[str, Any]]:
    """The metadata of each partition's materialization of ``node``, by partition key."""
    return {str(event.partition): metadata_values(event.metadata) for event in result.asset_materializations_for_node(node)}


def column_schema(metadata: Mapping[str, Any]) -> list[tuple[str, str]]:
    schema = metadata["dagster/column_schema"]
    assert isinstance(schema, dg.TableSchema)
    return [(c.name, c.type) for c in schema.columns]


def extra_info(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """The snapshot's JSON extra info, its random write id checked and removed."""
    extra = json.loads(snapshot["extra"])
    assert UUID.match(extra.pop("write_id")), extra
    return extra


def error_text(error: BaseException) -> str:
    """An error's message without DuckDB's trailing ``LINE 1: ...`` pointer."""
    return str(error).split("\n\nLINE 1:")[0]


def rows_of(value: Any) -> list[dict[str, Any]]:
    """A loaded value (any supported type) as a list of row dicts, for comparing values."""
    if isinstance(value, pa.Table):
        return value.to_pylist()
    if isinstance(value, pa.RecordBatchReader):
        return value.read_all().to_pylist()
    if isinstance(value, duckdb.DuckDBPyRelation):
        return value.to_arrow_table().to_pylist()
    module = type(value).__module__.split(".")[0]
    if module == "pandas":
        return pa.Table.from_pandas(value, preserve_index=False).to_pylist()
    if module == "polars":
        import polars as pl

        frame = value.collect() if isinstance(value, pl.LazyFrame) else value
        return frame.to_arrow().to_pylist()
    raise TypeError(f"unexpected loaded value {type(value)!r}")
