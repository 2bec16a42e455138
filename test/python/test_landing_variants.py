"""dlt's variant columns (``<col>__v_<type>``) and the promotion: one with values quarantines its
load; one with no values is not promoted, so raw keeps its columns.

The real dlt 1.31 sequence: a value that does not fit ``amount`` makes dlt add ``amount__v_text``
to its schema; that load is quarantined and skipped; dlt keeps the column, so every later load
carries it, all NULL. Raw is read back through srdp's attach (DESCRIBE, row count, checksum), and
srdp_compact shows the table's rows end in ONE file (files of two column sets are never merged).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

import srdp
import srdp.ingest.dlt as srdp_dlt
from conftest import write_config
from iomanager_support import _close_io_sessions_after_test  # noqa: F401
from landing_support import LANDING_TOML, checksum, order, orders_resource, raw_rows
from srdp.dagster import SrdpIOManager
from srdp.ingest import promote_landing

RAW_COLUMNS = [("id", "BIGINT"), ("amount", "BIGINT"), ("_dlt_load_id", "VARCHAR"), ("_dlt_id", "VARCHAR")]


def statuses(outcomes: list[Any]) -> list[tuple[str, str]]:
    return [(o.load_id, o.status) for o in outcomes]


def variant_reason(value_kind: str = "text") -> str:
    return (
        f"lake.raw_landed.orders: column 'amount' has value(s) of type {value_kind} that do not fit its type "
        f"(dlt put them in variant column 'amount__v_{value_kind}'); fix the values at the source and re-deliver "
        "the load (replace its files in the landing zone and rerun), or list the load in skip_loads"
    )


def test_an_all_null_variant_column_is_not_promoted_and_one_with_values_still_quarantines(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, LANDING_TOML.format(landing="landing", extra=""))
    io = SrdpIOManager(config_path=str(cfg))
    dest = srdp_dlt.destination("lake", config=cfg, layer="landing")
    pipeline = dest.pipeline("shop", pipelines_dir=str(tmp_path / "p"))
    source = [order(1), order(2)]
    first = dest.run(pipeline, orders_resource(source)).loads_ids[0]
    assert statuses(promote_landing(dest, "orders", io_manager=io)) == [(first, "promoted")]
    source.append(order(3, amount="three"))  # dlt adds amount__v_text to its schema
    bad = dest.run(pipeline, orders_resource(source)).loads_ids[0]
    outcomes = promote_landing(dest, "orders", io_manager=io)
    assert statuses(outcomes) == [(bad, "quarantined")] and outcomes[0].reasons == [variant_reason()]

    source.append(order(4))
    after = dest.run(pipeline, orders_resource(source)).loads_ids[0]
    # dlt kept the variant column: the valid load carries it, all NULL.
    (landed,) = (tmp_path / "landing" / "landing" / "orders").glob(f"{after}.*.parquet")
    assert pq.read_table(landed, columns=["id", "amount", "amount__v_text"]).to_pylist() == [
        {"id": 4, "amount": 40, "amount__v_text": None}]
    assert statuses(promote_landing(dest, "orders", io_manager=io, skip_loads=[bad])) == [
        (bad, "skipped"), (after, "promoted")]

    expected = [(1, 10), (2, 20), (4, 40)]
    assert describe(cfg) == RAW_COLUMNS
    rows = raw_rows(cfg)
    assert (len(rows), checksum(rows)) == (3, checksum(expected))

    # A variant column with values still quarantines its load, and raw keeps its columns.
    source.append(order(5, amount="five"))
    again = dest.run(pipeline, orders_resource(source)).loads_ids[0]
    outcomes = promote_landing(dest, "orders", io_manager=io, skip_loads=[bad])
    assert statuses(outcomes) == [(again, "quarantined")] and outcomes[0].reasons == [variant_reason()]
    assert describe(cfg) == RAW_COLUMNS
    assert raw_rows(cfg) == expected

    # One column set: flushing and merging leaves the table's rows in one file.
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
        (compacted,) = srdp.call(con, "srdp_compact", "lake", schema_name="raw_landed", table_name="orders")
        assert (compacted["rows_flushed"], compacted["files_after"]) == (3, 1)
        files = con.execute("SELECT count(*) FROM ducklake_list_files('lake', 'orders', schema => 'raw_landed')")
        assert files.fetchone() == (1,)
    finally:
        con.close()
    rows = raw_rows(cfg)
    assert (len(rows), checksum(rows)) == (3, checksum(expected))


def describe(cfg: Path) -> list[tuple[str, str]]:
    """``lake.raw_landed.orders``'s columns and types, through srdp's attach."""
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        return [(r[0], r[1]) for r in con.execute("DESCRIBE lake.raw_landed.orders").fetchall()]
    finally:
        con.close()
