"""dlt's ``ducklake`` destination with every write labelled, so ``srdp_write_audit`` names its writer.

dlt 1.31 runs most of a load in autocommit mode (each copy job's ``INSERT``, the ``_dlt_loads``
row, the schema's ``CREATE TABLE``\\ s), so every statement is its own DuckLake snapshot and none
carries a commit author. This destination's SQL client runs each such statement in a transaction
that first calls ``<lake>.set_commit_message(<writer>, 'dlt pipeline <name> load <load_id> ...')``
(with dlt's query tags as ``extra_info``), and labels dlt's own transactions the same way. A
transaction that changes nothing makes no snapshot, so labelled reads cost nothing in the lake.

The destination keeps dlt's name ``ducklake`` (config sections, traces), and its type resolves
to this module, so a pipeline restored from its working folder finds it again.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterator
from typing import Any, ClassVar

from dlt.destinations.impl.ducklake.ducklake import DuckLakeClient
from dlt.destinations.impl.ducklake.factory import ducklake
from dlt.destinations.impl.ducklake.sql_client import DuckLakeSqlClient
from dlt.destinations.sql_client import DBApiCursor

__all__ = ["SrdpDuckLake", "commit_label"]

DEFAULT_WRITER = "dlt"


def commit_label(tags: dict[str, Any] | None) -> str:
    """The commit message of a dlt write, from dlt's query tags (``operation``, ``load_id``,
    ``pipeline_name``, ``table``): ``dlt pipeline orders load 1733.1 load table customers``."""
    tags = tags or {}
    parts = ["dlt"]
    if tags.get("pipeline_name"):
        parts += ["pipeline", str(tags["pipeline_name"])]
    if tags.get("load_id"):
        parts += ["load", str(tags["load_id"])]
    if tags.get("operation"):
        parts.append(str(tags["operation"]))
    if tags.get("table"):
        parts += ["table", str(tags["table"])]
    return " ".join(parts)


class SrdpDuckLakeSqlClient(DuckLakeSqlClient):
    """dlt's DuckLake SQL client, every write transaction labelled with :data:`writer`."""

    writer: ClassVar[str] = DEFAULT_WRITER
    _srdp_in_transaction: bool = False

    def _label(self) -> None:
        tags = getattr(self, "_query_tags", None)
        lake = self.capabilities.escape_identifier(self.credentials.ducklake_name)
        self._conn.execute(
            f"CALL {lake}.set_commit_message(?, ?, extra_info => ?)",
            [self.writer, commit_label(tags), json.dumps(tags or {}, sort_keys=True, default=str)],
        )

    @contextlib.contextmanager
    def begin_transaction(self) -> Iterator[Any]:
        with super().begin_transaction() as transaction:
            self._srdp_in_transaction = True
            try:
                self._label()
                yield transaction
            finally:
                self._srdp_in_transaction = False

    @contextlib.contextmanager
    def execute_query(self, query: Any, *args: Any, **kwargs: Any) -> Iterator[DBApiCursor]:
        if self._srdp_in_transaction or self._conn is None:
            with super().execute_query(query, *args, **kwargs) as cursor:
                yield cursor
            return
        with self.begin_transaction(), super().execute_query(query, *args, **kwargs) as cursor:
            yield cursor


class SrdpDuckLakeClient(DuckLakeClient):
    """dlt's DuckLake job client with :class:`SrdpDuckLakeSqlClient` as its SQL client."""

    sql_client_class: ClassVar[type[SrdpDuckLakeSqlClient]] = SrdpDuckLakeSqlClient

    def __init__(self, schema: Any, config: Any, capabilities: Any) -> None:
        super().__init__(schema, config, capabilities)
        plain = self.sql_client
        self.sql_client = self.sql_client_class(
            dataset_name=plain.dataset_name,
            staging_dataset_name=plain.staging_dataset_name,
            credentials=plain.credentials,
            capabilities=plain.capabilities,
            override_data_path=plain.override_data_path,
            automatic_migration=plain.automatic_migration,
        )


@functools.cache
def _client_class(writer: str) -> type[SrdpDuckLakeClient]:
    """The job client class whose SQL client labels writes as ``writer`` (one class per writer)."""
    if writer == DEFAULT_WRITER:
        return SrdpDuckLakeClient
    sql_client = type("SrdpDuckLakeSqlClient", (SrdpDuckLakeSqlClient,), {"writer": writer})
    return type("SrdpDuckLakeClient", (SrdpDuckLakeClient,), {"sql_client_class": sql_client})


class SrdpDuckLake(ducklake):
    """dlt's ``ducklake`` destination whose writes carry ``writer`` as DuckLake commit author."""

    def __init__(self, *args: Any, writer: str = DEFAULT_WRITER, **kwargs: Any) -> None:
        kwargs.setdefault("destination_name", "ducklake")
        super().__init__(*args, **kwargs)
        self.srdp_writer = writer

    @property
    def client_class(self) -> type:
        return _client_class(self.srdp_writer)
