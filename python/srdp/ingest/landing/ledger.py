"""Which landing loads are in raw: a ledger table in the promotion schema, written in the same
DuckLake transaction as the rows it records.

``<catalog>.<promote_into>._srdp_landing_loads``: one row per (landing folder, table, load) that
was promoted (or skipped on purpose). Because the row commits with the data, a promotion killed
at any point either left both or neither, and a rerun promotes each load exactly once.

Two promotions of one table at the same time (a manual run beside the scheduled one) would both
see a load as new, and DuckLake lets concurrent appends commit. So every promotion also replaces
the table's one ``claim`` row: two transactions that delete the same row conflict in DuckLake, the
second one is retried (as srdp decides for conflicts), finds the load recorded and stops.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import duckdb

from srdp.dagster.lake import LakeSession
from srdp.dagster.tables import TableRef, quote

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
    """The ledger of one landing folder's promotions of one table into ``schema``."""

    catalog: str
    schema: str
    landing: str
    """The landing dataset folder (a URL), so two zones never share ledger rows."""
    table: str

    @property
    def ref(self) -> TableRef:
        return TableRef(self.catalog, self.schema, LEDGER_TABLE)

    def recorded(self, session: LakeSession) -> dict[str, str]:
        """Load id -> status of every load recorded for this folder and table."""
        with session.lock:
            if session.columns(self.ref) is None:
                return {}
            rows = session.con.execute(
                f"SELECT load_id, status FROM {self.ref.sql} WHERE landing = ? AND table_name = ? "
                f"AND status <> '{CLAIM}'",
                [self.landing, self.table],
            ).fetchall()
        return {str(load_id): str(status) for load_id, status in rows}

    def record(
        self, con: duckdb.DuckDBPyConnection, load_id: str, status: str, rows: int, run_id: str, note: str | None
    ) -> None:
        """Inside the open transaction: replaces the table's claim row, refuses a load recorded
        already, then records it."""
        con.execute(f"CREATE TABLE IF NOT EXISTS {self.ref.sql} ({_COLUMNS})")
        con.execute(
            f"DELETE FROM {self.ref.sql} WHERE landing = ? AND table_name = ? AND status = '{CLAIM}'",
            [self.landing, self.table],
        )
        found = con.execute(
            f"SELECT count(*) FROM {self.ref.sql} WHERE landing = ? AND table_name = ? AND load_id = ? "
            f"AND status <> '{CLAIM}'",
            [self.landing, self.table, load_id],
        ).fetchone()
        if found and found[0]:
            raise AlreadyPromoted(load_id)
        now = dt.datetime.now(dt.timezone.utc)
        con.execute(
            f"INSERT INTO {self.ref.sql} VALUES (?, ?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?, ?)",
            [self.landing, self.table, load_id, status, rows, now, run_id, note,
             self.landing, self.table, load_id, CLAIM, 0, now, run_id, "the last promotion's claim"],
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
