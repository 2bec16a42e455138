"""Which landing loads are in raw: a ledger table in the promotion schema, written in the same
DuckLake transaction as the rows it records.

``<catalog>.<promote_into>._srdp_landing_loads``: one row per (landing folder, table, load) that
was promoted (or skipped on purpose). Because the row commits with the data, a promotion killed
at any point either left both or neither, and a rerun promotes each load exactly once.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import duckdb

from srdp.dagster.lake import LakeSession
from srdp.dagster.tables import TableRef, quote

__all__ = ["LEDGER_TABLE", "AlreadyPromoted", "Ledger"]

LEDGER_TABLE = "_srdp_landing_loads"

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
                f"SELECT load_id, status FROM {self.ref.sql} WHERE landing = ? AND table_name = ?",
                [self.landing, self.table],
            ).fetchall()
        return {str(load_id): str(status) for load_id, status in rows}

    def record(
        self, con: duckdb.DuckDBPyConnection, load_id: str, status: str, rows: int, run_id: str, note: str | None
    ) -> None:
        """Inside the open transaction: refuses a load recorded already, then records it."""
        con.execute(f"CREATE TABLE IF NOT EXISTS {self.ref.sql} ({_COLUMNS})")
        found = con.execute(
            f"SELECT count(*) FROM {self.ref.sql} WHERE landing = ? AND table_name = ? AND load_id = ?",
            [self.landing, self.table, load_id],
        ).fetchone()
        if found and found[0]:
            raise AlreadyPromoted(load_id)
        con.execute(
            f"INSERT INTO {self.ref.sql} VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [self.landing, self.table, load_id, status, rows, dt.datetime.now(dt.timezone.utc), run_id, note],
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
