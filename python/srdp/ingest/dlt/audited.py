"""dlt's ``ducklake`` destination with every write labelled, so ``srdp_write_audit`` names its writer.

dlt 1.31 runs most of a load in autocommit mode (each copy job's ``INSERT``, the ``_dlt_loads``
row, the schema's ``CREATE TABLE``\\ s), so every statement is its own DuckLake snapshot and none
carries a commit author. This destination's SQL client runs each such statement in a transaction
that first calls ``<lake>.set_commit_message(<writer>, 'dlt pipeline <name> load <load_id> ...')``
(with dlt's query tags as ``extra_info``), and labels dlt's own transactions the same way. A
statement that only reads (``SELECT``, ``DESCRIBE``, ``SHOW``: dlt's reads of its schema, state
and version tables) makes no snapshot and runs as it is, without a label.

Opening a connection attaches the lake; a failed attach is retried as srdp decides for the
catalog (``srdp_retry_wait``): two first loads into a brand-new PostgreSQL lake, or dlt beside the
IO manager, create its metadata at once, and the loser's attach fails although its next attempt
finds the lake created (srdp's own attach retries the same way).

The destination keeps dlt's name ``ducklake`` (config sections, traces), and its type resolves
to this module, so a pipeline restored from its working folder finds it again.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import time
from collections.abc import Iterator
from typing import Any, ClassVar

from dlt.destinations.impl.ducklake.ducklake import DuckLakeClient
from dlt.destinations.impl.ducklake.factory import ducklake
from dlt.destinations.impl.ducklake.sql_client import DuckLakeSqlClient
from dlt.destinations.exceptions import DestinationConnectionError
from dlt.destinations.sql_client import DBApiCursor

import srdp

__all__ = ["SrdpDuckLake", "commit_label"]

DEFAULT_WRITER = "dlt"

#: Statements that only read: they make no snapshot, so they get no label (and no transaction).
_READS_ONLY = re.compile(r"\s*(SELECT|DESCRIBE|SHOW)\b", re.IGNORECASE)


def reads_only(query: Any) -> bool:
    """Whether ``query`` is one statement that only reads: SQL text starting with ``SELECT``,
    ``DESCRIBE`` or ``SHOW`` with no ``;`` but a trailing one (text that may hold several
    statements is labelled)."""
    return isinstance(query, str) and bool(_READS_ONLY.match(query)) and ";" not in query.strip().rstrip(";")


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
    #: srdp.toml and the catalog whose retry settings decide about a failed attach (None: no retry).
    srdp_config: ClassVar[str | None] = None
    srdp_catalog: ClassVar[str | None] = None
    _srdp_in_transaction: bool = False

    def open_connection(self) -> Any:
        """dlt's connection with the lake attached; an attach that failed for a reason srdp
        retries (a lost creation race, a locked SQLite file) is tried again after srdp's wait."""
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            try:
                return super().open_connection()
            except DestinationConnectionError as error:
                wait = self._retry_wait(str(error.inner_exc), attempt, started)
                if wait is None:
                    raise
                time.sleep(wait)

    def _retry_wait(self, message: str, attempt: int, started: float) -> float | None:
        """Seconds to wait before attaching again, or None: srdp does not retry ``message``."""
        if self.srdp_config is None or self.srdp_catalog is None:
            return None
        with srdp.connect(config=self.srdp_config) as con:
            decision = srdp.call(
                con, "srdp_retry_wait", self.srdp_catalog, message,
                attempt=attempt, elapsed_ms=int((time.monotonic() - started) * 1000),
            )[0]
        return float(decision["wait_ms"]) / 1000 if decision["retry"] else None

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
        if self._srdp_in_transaction or self._conn is None or reads_only(query):
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
def _client_class(writer: str, config: str | None, catalog: str | None) -> type[SrdpDuckLakeClient]:
    """The job client class whose SQL client labels writes as ``writer`` and retries a failed
    attach as ``catalog`` of ``config`` says (one class per writer and catalog)."""
    if (writer, config, catalog) == (DEFAULT_WRITER, None, None):
        return SrdpDuckLakeClient
    sql_client = type(
        "SrdpDuckLakeSqlClient",
        (SrdpDuckLakeSqlClient,),
        {"writer": writer, "srdp_config": config, "srdp_catalog": catalog},
    )
    return type("SrdpDuckLakeClient", (SrdpDuckLakeClient,), {"sql_client_class": sql_client})


class SrdpDuckLake(ducklake):
    """dlt's ``ducklake`` destination whose writes carry ``writer`` as DuckLake commit author and
    whose attach is retried as ``catalog`` of ``config`` (srdp.toml) says."""

    def __init__(
        self,
        *args: Any,
        writer: str = DEFAULT_WRITER,
        config: str | None = None,
        catalog: str | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("destination_name", "ducklake")
        super().__init__(*args, **kwargs)
        self.srdp_writer = writer
        self.srdp_config = config
        self.srdp_catalog = catalog

    @property
    def client_class(self) -> type:
        return _client_class(self.srdp_writer, self.srdp_config, self.srdp_catalog)
