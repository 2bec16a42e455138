"""The IO managers the scenario benches put side by side in real Dagster runs, each call timed.

* :func:`srdp_io_manager_class`: ``SrdpIOManager`` itself, ``handle_output`` and ``load_input``
  timed into :class:`Clock`.
* :func:`hand_io_manager_class`: what a user writes without srdp (the issue's "hand-written
  DuckLake IO manager"): one connection per process with the lake attached once (``srdp.connect``
  and ``srdp_attach_catalog``, as srdp's own attach, so both sides attach the same way and before
  the clock); a partitioned write is ``BEGIN; DELETE FROM t WHERE day >= ? AND day < ?; INSERT
  INTO t SELECT * FROM frame; COMMIT``; an unpartitioned write is either the same transaction
  without the WHERE (``replace="transaction"``) or ``CREATE OR REPLACE TABLE t AS SELECT * FROM
  frame`` (``replace="create or replace"``); a read is ``SELECT * FROM t [WHERE day >= 'start'
  AND day < 'end']`` converted with DuckDB's ``.df()`` / ``.pl()`` / ``.to_arrow_table()`` /
  ``.to_arrow_reader()``. Both are timed the same way.

No ``from __future__ import annotations``: Dagster reads the IO managers' fields as objects.
"""

import time
from typing import Any

#: Rows per batch of a streamed (RecordBatchReader) input, srdp's own batch size.
BATCH_ROWS = 100_000


class Clock:
    """Seconds this process spent in the IO managers' calls (and what the benches add to it)."""

    spent = 0.0


def srdp_io_manager_class() -> type:
    """``SrdpIOManager`` with its two calls timed into :class:`Clock`."""
    from srdp.dagster.io_manager import SrdpIOManager

    class TimedSrdpIOManager(SrdpIOManager):
        def handle_output(self, context, obj) -> None:
            start = time.perf_counter()
            try:
                super().handle_output(context, obj)
            finally:
                Clock.spent += time.perf_counter() - start

        def load_input(self, context) -> Any:
            start = time.perf_counter()
            try:
                return super().load_input(context)
            finally:
                Clock.spent += time.perf_counter() - start

    return TimedSrdpIOManager


def convert(relation: Any, kind: Any) -> Any:
    """A DuckDB relation as the input's annotated type, the way a user converts one."""
    import pyarrow as pa

    if kind is pa.RecordBatchReader:
        return relation.to_arrow_reader(BATCH_ROWS)
    if kind is pa.Table:
        return relation.to_arrow_table()
    if kind.__module__.startswith("pandas"):
        return relation.df()
    return relation.pl()


def hand_io_manager_class() -> type:
    """The hand-written DuckLake IO manager (see the module doc), its calls timed."""
    import dagster as dg

    import srdp

    connection: dict[str, Any] = {}

    class HandWrittenIOManager(dg.ConfigurableIOManager):
        config: str
        role: str = "reader"
        replace: str = "transaction"
        partition_column: str = "day"

        def con(self) -> Any:
            """The process's connection, attached on first use."""
            if "con" not in connection:
                con = srdp.connect(config=self.config)
                srdp.call(con, "srdp_attach_catalog", "lake", role=self.role)  # as srdp's own attach
                connection["con"] = con
            return connection["con"]

        @staticmethod
        def _table(context) -> str:
            return "lake." + ".".join(f'"{p}"' for p in context.asset_key.path)

        def handle_output(self, context, obj) -> None:
            if obj is None:
                return
            start = time.perf_counter()
            con, table = self.con(), self._table(context)
            con.register("frame", obj)
            if context.has_asset_partitions:
                window = context.asset_partitions_time_window
                con.execute("BEGIN TRANSACTION")
                con.execute(f"DELETE FROM {table} WHERE {self.partition_column} >= ? AND {self.partition_column} < ?",
                            [window.start.date(), window.end.date()])
                con.execute(f"INSERT INTO {table} SELECT * FROM frame")
                con.execute("COMMIT")
            elif self.replace == "create or replace":
                con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM frame")
            else:
                con.execute("BEGIN TRANSACTION")
                con.execute(f"DELETE FROM {table}")
                con.execute(f"INSERT INTO {table} SELECT * FROM frame")
                con.execute("COMMIT")
            con.unregister("frame")
            Clock.spent += time.perf_counter() - start

        def load_input(self, context) -> Any:
            start = time.perf_counter()
            where = ""
            if context.has_asset_partitions:
                window = context.asset_partitions_time_window
                where = (f" WHERE {self.partition_column} >= '{window.start.date()}' "
                         f"AND {self.partition_column} < '{window.end.date()}'")
            relation = self.con().sql(f"SELECT * FROM {self._table(context)}{where}")
            value = convert(relation, context.dagster_type.typing_type)
            Clock.spent += time.perf_counter() - start
            return value

    return HandWrittenIOManager
