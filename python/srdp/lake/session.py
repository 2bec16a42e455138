"""srdp's one lake connection per process, and its writes: each ONE DuckLake transaction.

Used by the IO manager (:mod:`srdp.dagster.io_manager`) and the landing promotion
(:mod:`srdp.ingest.landing`); it imports neither Dagster nor dlt.

A write is, inside ``BEGIN ... COMMIT`` (one snapshot): the commit message, the schema (created
when missing), the table (created from the data's columns when missing), schema changes (new
columns added; lossless type promotions; dropped columns kept as NULLs unless asked), the
delete of the replaced rows (the whole table or the partition slice), and ``INSERT ... BY
NAME``. A failure anywhere rolls it all back, so readers see the old rows or the new ones.
Failed transactions are retried as srdp decides (``srdp_retry_wait``: the catalog's
``max_retry_seconds``, ``max_attempts`` and jittered backoff, the same policy as maintenance).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

import srdp
from srdp.lake.errors import LakeError
from srdp.lake.frames import Source, column_names
from srdp.lake.names import TableRef, quote
from srdp.lake.secrets import create_secret, secret_problem
from srdp.lake.slices import Slice

__all__ = ["LakeSession", "WritePlan", "WriteResult", "create_secret", "lossless", "secret_problem"]

#: DuckLake's lossless type promotions (source type -> types it may become).
_PROMOTIONS: dict[str, set[str]] = {
    "TINYINT": {"SMALLINT", "INTEGER", "BIGINT"},
    "SMALLINT": {"INTEGER", "BIGINT"},
    "INTEGER": {"BIGINT"},
    "UTINYINT": {"USMALLINT", "UINTEGER", "UBIGINT", "SMALLINT", "INTEGER", "BIGINT"},
    "USMALLINT": {"UINTEGER", "UBIGINT", "INTEGER", "BIGINT"},
    "UINTEGER": {"UBIGINT", "BIGINT"},
    "FLOAT": {"DOUBLE"},
}

#: The name the data is registered under on the connection during a write.
_SOURCE = "__srdp_io_source"

#: The error a streamed output's INSERT raises at its first row outside the partition.
_OUTSIDE = "srdp: output row outside the partition"


#: Type families inside which an output column is cast to the table's type when its values allow.
_FAMILIES: tuple[frozenset[str], ...] = (
    frozenset({"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"}),
    frozenset({"FLOAT", "DOUBLE"}),
    frozenset({"DATE", "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS"}),
)


def same_family(old: str, new: str) -> bool:
    """Whether ``old`` and ``new`` are both integers, both floats, or both dates/timestamps."""
    return any(old in family and new in family for family in _FAMILIES)


def check_column_names(table: TableRef, names: Sequence[str], existing: Sequence[tuple[str, str]] | None) -> None:
    """Refuses names DuckDB would rename silently: empty ones, two that differ only by case, and
    (on an existing table) one that differs from the table's column only by case."""
    if any(not n for n in names):
        raise LakeError(f"{table.name}: a column has an empty name; name every column, nothing was written")
    seen: dict[str, str] = {}
    for name in names:
        other = seen.setdefault(name.lower(), name)
        if other != name or names.count(name) > 1:
            raise LakeError(
                f"{table.name}: columns {other!r} and {name!r} are one column in DuckDB (names ignore "
                "case); rename one of them, nothing was written"
            )
    have = {n.lower(): n for n, _ in existing or []}
    for name in names:
        column = have.get(name.lower())
        if column is not None and column != name:
            raise LakeError(
                f"{table.name}: column {name!r} of the output is column {column!r} of the table "
                f"(DuckDB names ignore case); rename it to {column!r}, nothing was written"
            )


def lossless(old: str, new: str) -> bool:
    """Whether DuckLake can promote column type ``old`` to ``new`` without loss."""
    return new in _PROMOTIONS.get(old, set())


@dataclass
class WritePlan:
    """One write: where, how, and what to label the snapshot with."""

    table: TableRef
    mode: str  # "replace" | "append"
    slice: Slice
    writer: str
    message: str
    extra: dict[str, Any]
    #: The rule's ``relax_with`` text when raw_validated applies to this write, else None.
    raw_validated: str | None
    drop_missing_columns: bool
    #: Each partition key's own slice, when the write covers several (a range): rows are
    #: counted per partition in the write's snapshot.
    partition_slices: dict[str, Slice] = field(default_factory=dict)


@dataclass
class WriteResult:
    rows_written: int
    rows_in_slice: int
    snapshot_id: int
    columns: list[tuple[str, str]]
    attempts: int
    created: bool
    added_columns: list[str]
    rows_by_partition: dict[str, int] = field(default_factory=dict)


#: Writes run again after a re-attach for DuckLake's stale inlined-data table, at most.
STALE_RETRIES = 3


class LakeSession:
    """One DuckDB connection with srdp for a (definition file, catalog) in this process."""

    _sessions: dict[tuple[int, str, str], LakeSession] = {}
    _guard = threading.Lock()

    def __init__(self, config_path: str, catalog: str) -> None:
        self.config_path = config_path
        self.catalog = catalog
        self.con = srdp.connect(config=config_path)
        # Time windows are compared in UTC whatever the machine's zone.
        self.con.execute("SET TimeZone = 'UTC'")
        self.role: str | None = None
        self.lock = threading.RLock()
        self._secrets: set[str] = set()  # digests of the secret statements already run

    @classmethod
    def get(cls, config_path: str, catalog: str, secrets: Sequence[str] = ()) -> LakeSession:
        """The session of this process for the file and catalog (opened on first use), with
        ``secrets`` (CREATE SECRET statements) run on it before anything attaches."""
        key = (os.getpid(), os.path.abspath(config_path), catalog)
        with cls._guard:
            session = cls._sessions.get(key)
            if session is None:
                session = cls._sessions[key] = LakeSession(os.path.abspath(config_path), catalog)
        session.add_secrets(secrets)
        return session

    def add_secrets(self, statements: Sequence[str]) -> None:
        """Runs each CREATE SECRET statement once on this connection (the PostgreSQL role
        secrets srdp's attach names, the S3 credentials). They hold credentials: neither the
        statements nor DuckDB's messages about them (which quote the text) are ever logged or
        put in an error."""
        with self.lock:
            for index, statement in enumerate(statements):
                digest = hashlib.sha256(statement.encode()).hexdigest()
                if digest in self._secrets:
                    continue
                problem = create_secret(self.con, statement)
                if problem is not None:
                    raise LakeError(
                        f"SrdpIOManager secrets[{index}]: {problem}; the statement and DuckDB's "
                        "message are not shown because they may hold credentials"
                    )
                self._secrets.add(digest)

    def call(self, function: str, *args: Any, **named: Any) -> list[dict[str, Any]]:
        with self.lock:
            return srdp.call(self.con, function, *args, **named)

    def attach(self, role: str) -> None:
        """Attaches the catalog through srdp: reader for reads, writer once anything writes.

        A process that has written keeps the writer attachment for its reads too (one attach
        of a DuckDB-file catalog per process). A DuckDB-file catalog is attached as writer from
        the first read on: re-attaching it as writer fails while an input still streams from it
        (DuckDB refuses a second attach of the file while the first one has a reader open), so an
        asset that streams its input into its output could never write.
        """
        with self.lock:
            if self.role == role or self.role == "writer":
                return
            if role == "reader" and self._backend() == "duckdb":
                role = "writer"
            refresh = self.role is not None
            srdp.call(self.con, "srdp_attach_catalog", self.catalog, role=role, refresh=refresh or None)
            self.role = role

    def attach_existing(self, role: str) -> bool:
        """:meth:`attach`, or ``False`` when the reader finds that the lake was never created
        (a read of a brand-new lake: there is nothing to read, and a reader never creates it)."""
        try:
            self.attach(role)
        except duckdb.Error as error:
            if role == "reader" and srdp.no_lake_yet(str(error)):
                return False
            raise
        return True

    def _backend(self) -> str:
        """The catalog's backend (duckdb, sqlite, postgres) from its definition."""
        rows = srdp.call(self.con, "srdp_catalogs")
        return next((str(r["backend"]) for r in rows if r["catalog"] == self.catalog), "")

    def columns(self, table: TableRef) -> list[tuple[str, str]] | None:
        """The table's columns and types in order, or None when it does not exist.

        ``DESCRIBE`` of the table itself (the same type names as ``duckdb_columns()``, which would
        list the columns of every attached database, the catalog's metadata database included,
        on every write and read). A missing table or schema is a binder error, which leaves an
        open transaction usable.
        """
        try:
            rows = self.con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {table.sql})").fetchall()
        except duckdb.CatalogException:
            return None
        return [(r[0], r[1]) for r in rows] or None

    def write(self, plan: WritePlan, source: Callable[[], Source]) -> WriteResult:
        """Runs ``plan`` in one transaction, retried as srdp decides; ``source`` gives the data."""
        return self.write_many([(plan, source)])[0]

    def write_many(
        self,
        writes: Sequence[tuple[WritePlan, Callable[[], Source]]],
        before_commit: Callable[[duckdb.DuckDBPyConnection, list[WriteResult]], None] | None = None,
    ) -> list[WriteResult]:
        """Runs every plan of ``writes`` in ONE transaction (one snapshot, labelled by the first
        plan's writer, message and extra info), then ``before_commit`` (bookkeeping that must
        commit with the data), retried as srdp decides. All or nothing."""
        if not writes:
            raise ValueError("write_many needs at least one write")
        self.attach("writer")
        started = time.monotonic()
        attempt = stale_retries = 0
        data = [source() for _, source in writes]
        while True:
            attempt += 1
            try:
                with self.lock:
                    return self._write_once([(plan, d) for (plan, _), d in zip(writes, data)], attempt, before_commit)
            except duckdb.Error as error:
                message = str(error)
                decision = self.call(
                    "srdp_retry_wait",
                    self.catalog,
                    message,
                    attempt=attempt,
                    elapsed_ms=int((time.monotonic() - started) * 1000),
                )[0]
                stale = decision["failure"] == "stale inlined table"
                if stale:
                    # DuckLake 1.0's stale inlined-data table (duckdb/ducklake#1305): another
                    # process flushed what this instance cached. The write rolled back; after
                    # the re-attach it runs again (a few times at most, with no wait).
                    with self.lock:
                        srdp.call(self.con, "srdp_attach_catalog", self.catalog, role="writer", refresh=True)
                    stale_retries += 1
                names = ", ".join(plan.table.name for plan, _ in writes)
                if not decision["retry"] and not (stale and stale_retries <= STALE_RETRIES):
                    raise LakeError(
                        f"writing {names} failed after {attempt} attempt(s); nothing was "
                        f"written (the transaction rolled back): {message}"
                    ) from error
                consumed = next((d for d in data if not d.replayable), None)
                if consumed is not None:
                    raise LakeError(
                        f"writing {names} failed ({message}) and the {consumed.kind} it was "
                        "given was already consumed, so it cannot be retried; nothing was written. "
                        "Return a materialized value (pyarrow Table, DataFrame) to get retries"
                    ) from error
                time.sleep(decision["wait_ms"] / 1000)
                data = [source() for _, source in writes]

    def _write_once(
        self,
        writes: Sequence[tuple[WritePlan, Source]],
        attempt: int,
        before_commit: Callable[[duckdb.DuckDBPyConnection, list[WriteResult]], None] | None,
    ) -> list[WriteResult]:
        con = self.con
        con.execute("BEGIN TRANSACTION")
        try:
            self._label(writes[0][0], attempt)
            results = []
            for plan, data in writes:
                con.register(_SOURCE, data.data)
                try:
                    results.append(self._transaction(plan, data, attempt))
                finally:
                    con.unregister(_SOURCE)
            if before_commit is not None:
                before_commit(con, results)
            con.execute("COMMIT")
        except BaseException:
            try:
                con.execute("ROLLBACK")
            except duckdb.Error:
                pass  # the failed statement or commit ended the transaction already
            raise
        snapshot = con.execute(f"FROM {quote(self.catalog)}.last_committed_snapshot()").fetchone()
        for result in results:
            result.snapshot_id = int(snapshot[0]) if snapshot and snapshot[0] is not None else -1
        return results

    def _label(self, plan: WritePlan, attempt: int) -> None:
        """Labels the open transaction's snapshot: author, message, JSON extra info."""
        extra = json.dumps({**plan.extra, "write_id": str(uuid.uuid4()), "attempt": attempt}, sort_keys=True)
        self.con.execute(
            f"CALL {quote(plan.table.catalog)}.set_commit_message(?, ?, extra_info => ?)",
            [plan.writer, plan.message, extra],
        )

    def _transaction(self, plan: WritePlan, data: Source, attempt: int) -> WriteResult:
        """One table's part of the open transaction: schema, table, evolution, delete, insert."""
        con, t = self.con, plan.table
        incoming = [(r[0], r[1]) for r in con.execute(f"DESCRIBE SELECT * FROM {_SOURCE}").fetchall()]
        existing = self.columns(t)
        check_column_names(t, column_names(data.data) or [n for n, _ in incoming], existing)
        added: list[str] = []
        if existing is None:
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {quote(t.catalog)}.{quote(t.schema)}")
            columns = ", ".join(f"{quote(n)} {kind}" for n, kind in incoming)
            con.execute(f"CREATE TABLE {t.sql} ({columns})")
        else:
            added = self._evolve(plan, existing, incoming, data.replayable)
        outside = (
            f"the output for {t.name} has rows outside {plan.slice.description}; a partitioned "
            "asset writes only its own partition's rows (check partition_expr)"
        )
        select = f"SELECT * FROM {_SOURCE}"
        select_params: list[Any] = []
        if plan.slice.condition is not None:
            if data.replayable:
                if data_outside_slice(con, plan.slice):
                    raise LakeError(outside)
            else:
                # A stream is read once, by the INSERT: its rows are checked as they pass (the
                # error rolls the whole transaction back).
                select += f" WHERE CASE WHEN coalesce({plan.slice.condition}, false) THEN true ELSE error(?) END"
                select_params = [*plan.slice.params, _OUTSIDE]
        if plan.mode == "replace":
            where = f" WHERE {plan.slice.condition}" if plan.slice.condition else ""
            con.execute(f"DELETE FROM {t.sql}{where}", plan.slice.params)
        try:
            inserted = con.execute(f"INSERT INTO {t.sql} BY NAME {select}", select_params).fetchone()
        except duckdb.Error as error:
            if select_params and _OUTSIDE in str(error):
                raise LakeError(outside) from None
            raise
        rows_written = int(inserted[0]) if inserted else 0
        if plan.mode == "replace":
            # The slice (or table) was emptied and every inserted row is inside it (checked above).
            rows_in_slice = rows_written
        else:
            where = f" WHERE {plan.slice.condition}" if plan.slice.condition else ""
            in_slice = con.execute(f"SELECT count(*) FROM {t.sql}{where}", plan.slice.params).fetchone()
            rows_in_slice = int(in_slice[0]) if in_slice else 0
        by_partition = partition_counts(con, t, plan)
        return WriteResult(
            rows_written=rows_written,
            rows_in_slice=rows_in_slice,
            snapshot_id=-1,
            # Unchanged when the output has exactly the table's columns (nothing was altered).
            columns=existing if existing == incoming else (self.columns(t) or incoming),
            attempts=attempt,
            created=existing is None,
            added_columns=added,
            rows_by_partition=by_partition,
        )

    def _evolve(
        self,
        plan: WritePlan,
        existing: list[tuple[str, str]],
        incoming: list[tuple[str, str]],
        replayable: bool = False,
    ) -> list[str]:
        """Schema changes for ``incoming``, in the open transaction; returns the added columns.

        A column whose type differs but that holds no value (DuckDB types an empty or all-None
        pandas object column, and Arrow's null type, as INTEGER) changes nothing: the INSERT
        casts its NULLs. Only a replayable source is scanned for that; a stream is not.
        """
        t, have = plan.table, dict(existing)
        added = []
        differing = [(name, have[name], kind) for name, kind in incoming if have.get(name) not in (None, kind)]
        checks = self._value_checks(differing) if replayable and differing else {}
        for name, kind in incoming:
            old = have.get(name)
            if old is None:
                self.con.execute(f"ALTER TABLE {t.sql} ADD COLUMN {quote(name)} {kind}")
                added.append(name)
            elif old != kind:
                if replayable:
                    has_values, lossy = checks[name]
                    if not has_values:
                        continue
                    if same_family(old, kind) and lossy == 0:
                        continue  # INSERT ... BY NAME casts the values to the table's type, unchanged
                if plan.raw_validated:
                    raise LakeError(
                        f"{t.name}: column {name!r} is {old} and the output has {kind}; rule "
                        "raw_validated freezes column types in raw (new columns are allowed). Cast "
                        f"the column to the table's type, or relax the rule with {plan.raw_validated}"
                    )
                if lossless(old, kind):
                    self.con.execute(f"ALTER TABLE {t.sql} ALTER COLUMN {quote(name)} SET DATA TYPE {kind}")
                elif not lossless(kind, old):
                    raise LakeError(
                        f"{t.name}: column {name!r} is {old} and the output has {kind}; DuckLake "
                        f"changes a type only by a lossless promotion ({old} -> "
                        f"{', '.join(sorted(_PROMOTIONS.get(old, set()))) or 'none'}). Cast the "
                        "column, or write the new type to a new column"
                    )
        if plan.drop_missing_columns:
            names = {n for n, _ in incoming}
            for name, _ in existing:
                if name not in names:
                    self.con.execute(f"ALTER TABLE {t.sql} DROP COLUMN {quote(name)}")
        return added

    def _value_checks(self, columns: Sequence[tuple[str, str, str]]) -> dict[str, tuple[bool, int]]:
        """:func:`value_checks_sql` run on the registered source: per column, whether it has a
        value and how many of its values the table's type would change."""
        row = self.con.execute(value_checks_sql(columns)).fetchone() or ()
        return {name: (bool(row[2 * i]), int(row[2 * i + 1])) for i, (name, _, _) in enumerate(columns)}

    def relation(self, table: TableRef, columns: list[str] | None, where: Slice, snapshot: int | None) -> duckdb.DuckDBPyRelation:
        """A lazy relation over the table on a cursor of its own (it may stream after this returns).

        The slice filters by its condition with the values written as literals
        (:attr:`Slice.read_condition`): a relation built with bound parameters is run at once into
        a materialized copy, about 30 times slower to read and held whole in memory (see
        :mod:`srdp.lake.slices`). The relation is bound here, so a missing table fails here; only
        then is the table looked up, to say so (a lookup before every read would cost a
        statement of its own)."""
        self.attach("reader")
        select = ", ".join(quote(c) for c in columns) if columns else "*"
        at = f" AT (VERSION => {int(snapshot)})" if snapshot is not None else ""
        condition = f" WHERE {where.read_condition}" if where.condition else ""
        cursor = self.con.cursor()
        # A cursor is a connection of its own: it does not inherit the session's time zone, and
        # time windows must be compared in UTC here as in the writes.
        cursor.execute("SET TimeZone = 'UTC'")
        try:
            return cursor.sql(f"SELECT {select} FROM {table.sql}{at}{condition}")
        except duckdb.CatalogException:
            cursor.close()
            if self.columns(table) is None:
                raise LakeError(f"{table.name} does not exist; materialize its asset first") from None
            raise


def value_checks_sql(columns: Sequence[tuple[str, str, str]]) -> str:
    """ONE scan of the registered source answering, for each (column, table type, output type):
    whether the column has a non-NULL value, and how many of its values do not survive DuckDB's
    cast to the table's type and back (microseconds into TIMESTAMP_NS, small BIGINTs into
    INTEGER: none), tried only within a type family (:func:`same_family`; else 0)."""
    select = []
    for name, old, kind in columns:
        c = quote(name)
        select.append(f"count({c}) > 0")
        select.append(
            f"count(*) FILTER (WHERE {c} IS NOT NULL AND TRY_CAST(TRY_CAST({c} AS {old}) AS {kind}) IS DISTINCT FROM {c})"
            if same_family(old, kind)
            else "0"
        )
    return f"SELECT {', '.join(select)} FROM {_SOURCE}"


def partition_counts(con: duckdb.DuckDBPyConnection, table: TableRef, plan: WritePlan) -> dict[str, int]:
    """Rows of each partition of ``plan.partition_slices`` in the table, in one scan of the slice."""
    if not plan.partition_slices:
        return {}
    keys = list(plan.partition_slices)
    counts = ", ".join(f"count(*) FILTER (WHERE {plan.partition_slices[k].condition})" for k in keys)
    params = [p for k in keys for p in plan.partition_slices[k].params]
    where = f" WHERE {plan.slice.condition}" if plan.slice.condition else ""
    row = con.execute(f"SELECT {counts} FROM {table.sql}{where}", [*params, *plan.slice.params]).fetchone()
    return {k: int(n) for k, n in zip(keys, row or [])}


def data_outside_slice(con: duckdb.DuckDBPyConnection, part: Slice) -> bool:
    """Whether the registered data has rows outside the slice (only for replayable sources)."""
    found = con.execute(
        f"SELECT EXISTS (SELECT 1 FROM {_SOURCE} WHERE NOT coalesce({part.condition}, false))",
        part.params,
    ).fetchone()
    return bool(found and found[0])
