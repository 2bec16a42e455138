"""The landing zone in Dagster: dlt lands (srdp_dlt_assets on the landing destination), the
promotion asset appends to raw through SrdpIOManager, an IO-manager asset reads it; the graph is
the physical names, the asset check reports a quarantined load, the retention job keeps dlt's
state. Real dagster ``materialize`` and dlt; raw read back through srdp's attach.
"""

# No `from __future__ import annotations`: Dagster reads the asset's annotations as objects.

import os

os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"

import datetime as dt  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import dagster as dg  # noqa: E402
import dlt  # noqa: E402
import pyarrow as pa  # noqa: E402
from dagster_dlt import DagsterDltResource  # noqa: E402

import srdp.ingest.dlt as srdp_dlt  # noqa: E402
from conftest import write_config  # noqa: E402
from iomanager_support import _close_io_sessions_after_test  # noqa: E402,F401
from landing_support import LANDING_TOML, expected_items, files_under, order, raw_rows  # noqa: E402
from srdp.dagster import SrdpIOManager, landing_retention_schedule, srdp_dlt_assets, srdp_landing_assets  # noqa: E402

ROWS: list[dict[str, Any]] = []


@dlt.source
def shop() -> Any:
    @dlt.resource(write_disposition="append", nested_hints={"items": dlt.mark.make_nested_hints(columns=[])})
    def orders(cursor: Any = dlt.sources.incremental("id", initial_value=0)) -> Iterator[dict[str, Any]]:
        yield from (r for r in ROWS if r["id"] > cursor.last_value)

    return orders


def definitions(cfg: Path, tmp_path: Path) -> tuple[dg.Definitions, list[dg.AssetsDefinition]]:
    landing = srdp_dlt.destination("lake", config=cfg, layer="landing")
    landed = srdp_dlt_assets(dlt_source=shop(), destination=landing,
                             dlt_pipeline=landing.pipeline("shop", pipelines_dir=str(tmp_path / "p")))
    promoted = srdp_landing_assets(landing, {"orders": ["orders__items"]}, keys={"orders": ["id"]})

    @dg.asset(key=["lake", "analytics", "order_total"], ins={"orders": dg.AssetIn(key=["lake", "raw_landed", "orders"])})
    def order_total(orders: pa.Table) -> pa.Table:
        return pa.table({"orders": [orders.num_rows], "amount": [sum(orders.column("amount").to_pylist())]})

    assets = [landed, *promoted, order_total]
    defs = dg.Definitions(
        assets=assets,
        schedules=[landing_retention_schedule(landing, older_than=dt.timedelta(0))],
        resources={"io_manager": SrdpIOManager(config_path=str(cfg)), "dlt": DagsterDltResource()},
    )
    return defs, assets


def test_land_promote_read_in_one_graph_and_a_quarantined_load_fails_the_check(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, LANDING_TOML.format(landing="landing", extra=""))
    defs, assets = definitions(cfg, tmp_path)
    graph = defs.resolve_asset_graph()
    edges = sorted(
        (parent.to_user_string(), key.to_user_string())
        for key in graph.get_all_asset_keys()
        for parent in graph.get(key).parent_keys
    )
    assert edges == [
        ("lake/landing/orders", "lake/raw_landed/orders"),
        ("lake/landing/orders__items", "lake/raw_landed/orders__items"),
        ("lake/raw_landed/orders", "lake/analytics/order_total"),
    ]
    names = {k.to_user_string(): graph.get(k).metadata.get("dagster/table_name") for k in graph.get_all_asset_keys()}
    assert names["lake/raw_landed/orders"] == "lake.raw_landed.orders"
    assert names["lake/landing/orders"] == "lake.landing.orders"

    ROWS[:] = [order(i) for i in range(1, 5)]
    result = dg.materialize(assets, resources=defs.resources, selection="*")
    assert result.success
    promoted = result.asset_materializations_for_node("promote_lake_landing_orders")
    by_key = {m.asset_key.to_user_string(): m.metadata for m in promoted}
    assert by_key["lake/raw_landed/orders"]["srdp/rows_promoted"].value == 4
    assert by_key["lake/raw_landed/orders__items"]["srdp/rows_promoted"].value == len(expected_items([1, 2, 3, 4]))
    assert by_key["lake/raw_landed/orders"]["dagster/table_name"].value == "lake.raw_landed.orders"
    (check,) = result.get_asset_check_evaluations()
    assert (check.check_name, check.passed) == ("landing_loads", True)
    (total,) = result.asset_materializations_for_node("lake__analytics__order_total")
    assert total.metadata["dagster/row_count"].value == 1
    assert raw_rows(cfg) == [(i, i * 10) for i in range(1, 5)]

    # A load whose amount does not fit: quarantined, the check fails with the reason.
    ROWS.append(order(5, amount="five"))
    result = dg.materialize(assets, resources=defs.resources, selection="*", raise_on_error=False)
    (check,) = result.get_asset_check_evaluations()
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    assert "variant column 'amount__v_text'" in check.metadata["quarantined"].value
    assert raw_rows(cfg) == [(i, i * 10) for i in range(1, 5)]

    # Retention (the schedule's job) keeps init, the newest state file and the quarantined load.
    zone = tmp_path / "landing" / "landing"
    job = defs.resolve_job_def("srdp_landing_retention_lake_landing")
    assert job.execute_in_process(resources=defs.resources).success
    left = files_under(zone)
    assert "init" in left and sum(f.startswith("_dlt_pipeline_state/") for f in left) == 1
    assert sum(f.startswith("orders/") for f in left) == 1  # the quarantined load's file
    schedule = defs.resolve_schedule_def("srdp_landing_retention_lake_landing_schedule")
    assert (schedule.cron_schedule, schedule.execution_timezone, schedule.default_status) == (
        "30 3 * * *", "UTC", dg.DefaultScheduleStatus.RUNNING)
