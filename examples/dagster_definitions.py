"""An application's Dagster composition root: its assets write DuckLake through srdp's IO manager,
and srdp's maintenance and monitor are added beside them.

    .venv/bin/dagster definitions validate -f examples/dagster_definitions.py
    .venv/bin/dagster asset materialize -f examples/dagster_definitions.py --select orders,order_revenue
    .venv/bin/dagster asset materialize -f examples/dagster_definitions.py --select daily_orders --partition 2026-12-01
    .venv/bin/dagster job execute -f examples/dagster_definitions.py -j srdp_dataset_maintenance

Every asset here that is not a dlt load or a dbt model writes through ``SrdpIOManager``
(``io_manager=True`` below): ``lake.analytics.orders`` (replaced on each run),
``lake.analytics.daily_orders`` (one day per partition, replaced alone) and
``lake.analytics.order_revenue``, which reads ``orders`` at the snapshot its materialization
committed. All of it reads the same srdp.toml as every other component; set SRDP_CONFIG to use
another definition file.
"""

# No `from __future__ import annotations`: Dagster reads the context and input annotations.

import os
from datetime import date
from pathlib import Path

import dagster as dg
import pandas as pd
import pyarrow as pa

from srdp.dagster import add_srdp_definitions

SRDP_TOML = os.environ.get("SRDP_CONFIG") or str(Path(__file__).resolve().parent / "srdp.toml")

DAYS = dg.DailyPartitionsDefinition(start_date="2026-11-01", end_offset=1)


@dg.asset(key_prefix=["analytics"], group_name="app")
def orders() -> pa.Table:
    """A plain asset: the whole table is replaced on each materialization (one snapshot)."""
    return pa.table(
        {
            "order_id": [1, 2, 3, 4],
            "customer": ["ada", "bob", "ada", "cy"],
            "amount": [12.5, 8.0, 30.25, 4.75],
        }
    )


@dg.asset(
    key_prefix=["analytics"],
    group_name="app",
    partitions_def=DAYS,
    metadata={"partition_expr": "order_date"},
)
def daily_orders(context: dg.AssetExecutionContext) -> pd.DataFrame:
    """A partitioned asset: each run replaces exactly its day's rows."""
    day = date.fromisoformat(context.partition_key)
    return pd.DataFrame({"order_date": [day, day], "orders": [3, 5]})


@dg.asset(key_prefix=["analytics"], group_name="app", ins={"orders": dg.AssetIn(key=["analytics", "orders"])})
def order_revenue(orders: pd.DataFrame) -> pd.DataFrame:
    """A downstream asset: reads ``orders`` as pandas (at the upstream's snapshot)."""
    return orders.groupby("customer", as_index=False)["amount"].sum().rename(columns={"amount": "revenue"})


def app_definitions() -> dg.Definitions:
    """The application's own definitions (its modules would contribute here)."""
    return dg.Definitions(assets=[orders, daily_orders, order_revenue])


# At the composition root, beside the module definitions: only when datasets are enabled.
defs = add_srdp_definitions(
    app_definitions(),
    SRDP_TOML,
    enabled=os.environ.get("SRDP_DATASETS", "1") != "0",
    io_manager=True,
)
