"""The whole platform in one Dagster code location: dlt -> dbt -> IO manager, with maintenance.

* dlt (``srdp.ingest.dlt``, the strict way: raw append-only and validated) loads the ``shop``
  source into ``lake.raw.orders`` and its child table ``lake.raw.orders__items``;
* dlt, the quarantine way, lands a partner's ``payments`` file in the landing zone (a folder
  outside DuckLake, ``landing_path``), and a promotion asset validates each load and appends it
  to ``lake.raw_landed.payments`` through the IO manager (:func:`srdp_landing_assets`), with the
  landing zone's daily retention;
* dbt (``dbt/``, through dagster-dbt and :class:`SrdpDbtTranslator`) builds
  ``lake.curated.orders_clean`` from those two sources;
* an asset written by ``SrdpIOManager`` reads that model and writes ``lake.analytics.daily_revenue``;
* :func:`add_srdp_definitions` adds the nightly maintenance and the hourly pressure monitor.

Every asset is keyed by its physical table (``lake/raw/orders``, ...) and carries it as
``dagster/table_name``, so the graph is one chain with no phantom node:

    lake/raw/orders ----------\\
                               +--> lake/curated/orders_clean --> lake/analytics/daily_revenue
    lake/raw/orders__items ---/

    lake/landing/payments --> lake/raw_landed/payments

Run it (the lake goes to demo/platform/, git-ignored; SRDP_CONFIG points elsewhere):

    .venv/bin/dagster definitions validate -f examples/platform/definitions.py
    .venv/bin/dagster asset materialize -f examples/platform/definitions.py --select '*'
    .venv/bin/dagster job execute -f examples/platform/definitions.py -j srdp_dataset_maintenance

Loading this module runs ``dbt deps`` and ``dbt parse`` once (dagster-dbt needs the manifest).
"""

# No `from __future__ import annotations`: Dagster reads the asset functions' annotations.

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")
os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")

import dagster as dg  # noqa: E402
import dlt  # noqa: E402
import pandas as pd  # noqa: E402
from dagster_dbt import DbtCliResource, DbtProject, dbt_assets  # noqa: E402
from dagster_dlt import DagsterDltResource  # noqa: E402

import srdp  # noqa: E402
import srdp.ingest.dlt as srdp_dlt  # noqa: E402
from srdp.dagster import (  # noqa: E402
    SrdpDbtTranslator,
    add_srdp_definitions,
    landing_retention_schedule,
    srdp_dlt_assets,
    srdp_landing_assets,
    srdp_table,
)

HERE = Path(__file__).resolve().parent
CONFIG = os.environ.setdefault("SRDP_CONFIG", str(HERE / "srdp.toml"))
# The dbt profile (dbt/profiles.yml) reads both from the environment.
os.environ.setdefault("SRDP_EXTENSION_DIR", str(srdp.extension_directory()))


# --- dlt: lake.raw.orders and lake.raw.orders__items -------------------------------------------
ORDERS = [
    {"id": 1, "order_date": "2026-12-01", "customer": "ada", "items": [{"sku": "tea", "qty": 2, "price": 3.5}]},
    {"id": 2, "order_date": "2026-12-01", "customer": "bob",
     "items": [{"sku": "cup", "qty": 1, "price": 8.0}, {"sku": "tea", "qty": 1, "price": 3.5}]},
    {"id": 3, "order_date": "2026-12-02", "customer": "ada", "items": [{"sku": "pot", "qty": 1, "price": 24.0}]},
]


@dlt.source
def shop() -> Any:
    """A stand-in for a real source: orders, each with its items (dlt's child table ``orders__items``)."""

    # nested_hints declares the child table, so it is an asset of its own before the first load.
    @dlt.resource(primary_key="id", nested_hints={"items": dlt.mark.make_nested_hints(columns=[])})
    def orders() -> Iterator[list[dict[str, Any]]]:
        yield ORDERS

    return orders


raw = srdp_dlt.destination("lake", config=CONFIG)  # layer "raw", writer "dlt"; the rules stay on
shop_assets = srdp_dlt_assets(dlt_source=shop(), destination=raw, pipeline_name="platform_shop", name="shop")


# --- dlt, the quarantine way: landing zone -> lake.raw_landed.payments --------------------------
PAYMENTS = [
    {"payment_id": "p-1", "order_id": 1, "amount": 7.0},
    {"payment_id": "p-2", "order_id": 2, "amount": 11.5},
    {"payment_id": "p-3", "order_id": 3, "amount": 24.0},
]


@dlt.source
def partner() -> Any:
    """Untrusted input: a partner's payments file, landed first and promoted once validated."""

    @dlt.resource(write_disposition="append")
    def payments() -> Iterator[list[dict[str, Any]]]:
        yield PAYMENTS

    return payments


landing = srdp_dlt.destination("lake", config=CONFIG, layer="landing")  # dlt's filesystem destination
partner_landed = srdp_dlt_assets(
    dlt_source=partner(), destination=landing, pipeline_name="platform_partner", name="partner"
)
partner_promoted = srdp_landing_assets(landing, ["payments"], keys={"payments": ["payment_id"]})


# --- dbt: lake.curated.orders_clean --------------------------------------------------------------
# dbt from this Python's environment (the venv need not be on PATH).
DBT = shutil.which("dbt", path=str(Path(sys.executable).parent)) or shutil.which("dbt") or "dbt"
dbt_project = DbtProject(project_dir=HERE / "dbt")
dbt = DbtCliResource(project_dir=dbt_project, dbt_executable=DBT)
dbt.cli(["deps", "--quiet"], target_path=dbt_project.target_path).wait()  # links srdp's dbt package (no download)
dbt.cli(["parse", "--quiet"], target_path=dbt_project.target_path).wait()  # the manifest dagster-dbt reads


@dbt_assets(manifest=dbt_project.manifest_path, project=dbt_project, dagster_dbt_translator=SrdpDbtTranslator(CONFIG))
def shop_dbt(context: dg.AssetExecutionContext, dbt: DbtCliResource) -> Iterator[Any]:
    yield from dbt.cli(["build"], context=context).stream()


# --- IO manager: lake.analytics.daily_revenue ------------------------------------------------------
orders_clean = srdp_table("lake", "curated", "orders_clean", config=CONFIG)
daily_revenue_table = srdp_table("lake", "analytics", "daily_revenue", config=CONFIG)


@dg.asset(
    key=daily_revenue_table.key,
    metadata=daily_revenue_table.metadata,
    ins={"orders": dg.AssetIn(key=orders_clean.key)},
    group_name="analytics",
)
def daily_revenue(orders: pd.DataFrame) -> pd.DataFrame:
    """Revenue and orders per day, from dbt's model (read and written by SrdpIOManager)."""
    by_day = orders.groupby("order_date", as_index=False).agg(orders=("order_id", "count"), revenue=("amount", "sum"))
    by_day["order_date"] = by_day["order_date"].dt.date  # pandas reads DATE as datetime64: keep a DATE
    return by_day.astype({"orders": "int64", "revenue": "float64"})


defs = add_srdp_definitions(
    dg.Definitions(
        assets=[shop_assets, partner_landed, *partner_promoted, shop_dbt, daily_revenue],
        schedules=[landing_retention_schedule(landing)],
        resources={"dlt": DagsterDltResource(), "dbt": dbt},
    ),
    CONFIG,
    io_manager=True,
)
