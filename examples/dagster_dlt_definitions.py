"""Dagster definitions: a dlt source loaded into `raw` of catalog `lake` through srdp.ingest.dlt.

Everything about the lake comes from examples/srdp.toml: the ducklake destination (catalog
`lake`, SQLite metadata and data folder under demo/), the dataset (`raw`, owned by dlt), and the
rules (raw is append-only, data types are frozen). The assets report their physical tables
(`lake.raw.orders`) as `dagster/table_name`, so lineage meets dbt's sources of the same name.

    dagster definitions validate -f examples/dagster_dlt_definitions.py
    dagster dev -f examples/dagster_dlt_definitions.py
"""

import os
from pathlib import Path

os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")

import dagster as dg  # noqa: E402
import dlt  # noqa: E402
from dagster_dlt import DagsterDltResource  # noqa: E402

import srdp  # noqa: E402
import srdp.ingest.dlt as srdp_dlt  # noqa: E402
from srdp.dagster import srdp_dlt_assets  # noqa: E402

CONFIG = Path(__file__).with_name("srdp.toml")


@dlt.source
def shop():
    """A stand-in for a real source: append-only order and customer events."""

    @dlt.resource
    def orders():
        yield [{"id": i, "customer_id": i % 3, "amount": 10 * i} for i in range(10)]

    @dlt.resource
    def customers():
        yield [{"id": i, "name": f"customer-{i}"} for i in range(3)]

    return orders, customers


raw = srdp_dlt.destination("lake", config=CONFIG)  # layer "raw", writer "dlt"

shop_assets = srdp_dlt_assets(
    dlt_source=shop(),
    destination=raw,
    pipeline_name="shop",
    name="shop",
    group_name="raw",
)


@dg.asset(deps=[dg.AssetKey(["lake", "raw", "orders"])], group_name="reports")
def order_count() -> dg.MaterializeResult:
    """Reads lake.raw.orders through srdp, the way every Python integration attaches the lake."""
    con = srdp.connect(config=CONFIG)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')")
        (count,) = con.execute(f"SELECT count(*) FROM {raw.table_name('orders')}").fetchone()
    finally:
        con.close()
    return dg.MaterializeResult(metadata={"orders": count})


defs = dg.Definitions(
    assets=[shop_assets, order_count],
    resources={"dlt": DagsterDltResource()},
)
