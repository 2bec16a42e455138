"""Which landing loads are in raw: a ledger table in the promotion schema, written in the same
DuckLake transaction as the rows it records.

``<catalog>.<promote_into>._srdp_landing_loads``: one row per (landing zone, table, load) that
was promoted (or skipped on purpose): the promoted table's row counts its rows, and each child
table promoted with it has a row of its own (``rows_promoted`` NULL), so retention deletes the
files of exactly the tables raw holds. Because the rows commit with the data, a promotion killed at
any point either left both or neither, and a rerun promotes each load exactly once.

The landing zone is keyed by its canonical identity (:func:`srdp.locations.canonical`: the real
path of a local folder, ``s3://bucket/prefix/``), so one zone reached through two spellings (a
relative ``landing_path`` read through a symlinked folder, ``s3a://``) shares its rows. Rows an
older srdp wrote under another spelling of the same zone count as the zone's, and the first
promotion that records a load rewrites them to the canonical key in its own transaction.

Two promotions of one table at the same time (a manual run beside the scheduled one) would both
see a load as new, and DuckLake lets concurrent appends commit. So every promotion also replaces
the ``claim`` row of each table it records (the parent and every child table): two transactions
that delete the same row conflict in DuckLake, the second one is retried (as srdp decides for
conflicts), finds the load recorded and stops. The same holds for two promotions that share only a
child table (``orders`` with ``orders__items``, and ``orders__items`` on its own): a load's table
is recorded once, and the promotion that comes second leaves out what the first took.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import duckdb

from srdp.lake.names import TableRef, quote
from srdp.lake.session import LakeSession
from srdp.locations import canonical

__all__ = ["LEDGER_TABLE", "AlreadyPromoted", "Ledger"]

LEDGER_TABLE = "_srdp_landing_loads"
#: The status of the row each promotion replaces (see the module doc).
CLAIM = "claim"

_COLUMNS = (
    "landing VARCHAR, table_name VARCHAR, load_id VARCHAR, status VARCHAR, "
    "rows_promoted BIGINT, recorded_at TIMESTAMPTZ, run_id VARCHAR, note VARCHAR"
)


class AlreadyPromoted(Exception):
    """Another run recorded the load first: this transaction must not commit."""


@dataclass(frozen=True)
class Ledger:
    """The ledger of one landing zone's promotions of one table (and its listed child tables)
    into ``schema``."""

    catalog: str
    schema: str
    landing: str
    """The landing dataset folder (a URL in any spelling; rows are keyed by :attr:`key`)."""
    table: str
    children: tuple[str, ...] = ()
    """The child tables promoted with ``table``: each gets a row of its own per load."""

    @property
    def ref(self) -> TableRef:
        return TableRef(self.catalog, self.schema, LEDGER_TABLE)

    @property
    def key(self) -> str:
        """The zone's canonical identity, the ``landing`` value of every row written now."""
        return canonical(self.landing)

    def spellings(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        """Every ``landing`` value stored for this zone: the canonical key and any other spelling
        of the same zone an older srdp wrote (the ledger table must exist)."""
        key = self.key
        stored = {str(row[0]) for row in con.execute(f"SELECT DISTINCT landing FROM {self.ref.sql}").fetchall()}
        return sorted({key} | {value for value in stored if _identity(value) == key})

    def tables_recorded(self, session: LakeSession) -> dict[str, dict[str, dt.datetime]]:
        """Load id -> {table -> when recorded} of every table any promotion recorded for this zone
        (promoted or skipped; ``table`` and ``children`` play no part)."""
        found: dict[str, dict[str, dt.datetime]] = {}
        with session.lock:
            if session.columns(self.ref) is None:
                return found
            spellings = self.spellings(session.con)
            rows = session.con.execute(
                f"SELECT load_id, table_name, max(recorded_at) FROM {self.ref.sql} "
                f"WHERE landing IN ({_marks(spellings)}) AND status <> '{CLAIM}' GROUP BY ALL",
                spellings,
            ).fetchall()
        for load_id, table, recorded_at in rows:
            found.setdefault(str(load_id), {})[str(table)] = recorded_at
        return found

    def record(
        self, con: duckdb.DuckDBPyConnection, load_id: str, status: str, rows: int, run_id: str, note: str | None
    ) -> None:
        """Inside the open transaction: rewrites the zone's rows stored under another spelling
        to its canonical key, replaces the claim rows of the table and of each child table,
        refuses a load any of them is recorded for already (by this promotion or another one
        that shares a table with it), then records it: the table's row, one row per child table,
        the new claim rows."""
        key = self.key
        tables = [self.table, *self.children]
        con.execute(f"CREATE TABLE IF NOT EXISTS {self.ref.sql} ({_COLUMNS})")
        old = [value for value in self.spellings(con) if value != key]
        if old:
            con.execute(f"UPDATE {self.ref.sql} SET landing = ? WHERE landing IN ({_marks(old)})", [key, *old])
        # Two promotions that share a table delete the same claim row, so DuckLake lets only one commit.
        con.execute(
            f"DELETE FROM {self.ref.sql} WHERE landing = ? AND table_name IN ({_marks(tables)}) "
            f"AND status = '{CLAIM}'",
            [key, *tables],
        )
        found = con.execute(
            f"SELECT count(*) FROM {self.ref.sql} WHERE landing = ? AND table_name IN ({_marks(tables)}) "
            f"AND load_id = ? AND status <> '{CLAIM}'",
            [key, *tables, load_id],
        ).fetchone()
        if found and found[0]:
            raise AlreadyPromoted(load_id)
        now = dt.datetime.now(dt.timezone.utc)
        rows_of = [(self.table, status, rows, note)]
        rows_of += [(child, status, None, f"{status} with {self.table} in one transaction")
                    for child in self.children]
        rows_of += [(table, CLAIM, 0, "the last promotion's claim") for table in tables]
        con.execute(
            f"INSERT INTO {self.ref.sql} VALUES " + ", ".join("(?, ?, ?, ?, ?, ?, ?, ?)" for _ in rows_of),
            [value for table, what, count, text in rows_of
             for value in (key, table, load_id, what, count, now, run_id, text)],
        )

    def skip(self, session: LakeSession, load_id: str, writer: str, run_id: str, note: str) -> None:
        """Records ``load_id`` as skipped on purpose (its rows never go to raw), in a labelled
        transaction of its own."""
        session.attach("writer")
        with session.lock:
            con = session.con
            con.execute("BEGIN TRANSACTION")
            try:
                con.execute(
                    f"CALL {quote(self.catalog)}.set_commit_message(?, ?)",
                    [writer, f"srdp landing: skip load {load_id} of {self.landing}{self.table}"],
                )
                con.execute(f"CREATE SCHEMA IF NOT EXISTS {quote(self.catalog)}.{quote(self.schema)}")
                self.record(con, load_id, "skipped", 0, run_id, note)
                con.execute("COMMIT")
            except BaseException:
                try:
                    con.execute("ROLLBACK")
                except duckdb.Error:
                    pass
                raise


def _marks(values: list[str]) -> str:
    return ", ".join("?" for _ in values)


def _identity(value: str) -> str | None:
    """The canonical identity of a stored ``landing`` value (None: not a location srdp reads)."""
    try:
        return canonical(value)
    except ValueError:
        return None
