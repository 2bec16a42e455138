"""One asset graph: dlt -> dbt -> IO manager assets joined by their physical table names.

The platform example (examples/platform/definitions.py, copied into tmp with its lake there) is
loaded for real: dagster-dbt reads the manifest of a real `dbt parse`, dlt's source has a nested
child table (`orders__items`) declared with `nested_hints`. The graph's nodes and edges are
asserted exactly, then the whole chain is materialized once and every table is read back with
plain DuckDB + DuckLake (no srdp), against values computed here from the source's rows.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import sys
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import dagster as dg
import duckdb
import pytest

import srdp
from conftest import REPO

EXAMPLE = REPO / "examples" / "platform"

RAW_ORDERS = dg.AssetKey(["lake", "raw", "orders"])
RAW_ITEMS = dg.AssetKey(["lake", "raw", "orders__items"])
ORDERS_CLEAN = dg.AssetKey(["lake", "curated", "orders_clean"])
DAILY_REVENUE = dg.AssetKey(["lake", "analytics", "daily_revenue"])
LANDED_PAYMENTS = dg.AssetKey(["lake", "landing", "payments"])
PROMOTED_PAYMENTS = dg.AssetKey(["lake", "raw_landed", "payments"])


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The example, copied into tmp (srdp's dbt package by absolute path, the lake under tmp)."""
    root = tmp_path_factory.mktemp("platform")
    project = root / "platform"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(
        "target", "dbt_packages", "logs", "package-lock*", "__pycache__"))
    packages = project / "dbt" / "packages.yml"
    packages.write_text(packages.read_text().replace("../../../dbt", str(REPO / "dbt")))
    config = project / "srdp.toml"
    config.write_text(config.read_text().replace("../../demo/platform/", "lake/"))
    home = root / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    saved = dict(os.environ)
    os.environ.update({
        "SRDP_CONFIG": str(config),
        "DAGSTER_HOME": str(home),
        "DLT_DATA_DIR": str(root / "dlt"),
        "RUNTIME__DLTHUB_TELEMETRY": "false",
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "DO_NOT_TRACK": "1",
    })
    try:
        spec = importlib.util.spec_from_file_location("srdp_platform_example", project / "definitions.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("srdp_platform_example", None)
        os.environ.clear()
        os.environ.update(saved)


def _edges(graph: Any) -> dict[dg.AssetKey, set[dg.AssetKey]]:
    return {key: set(graph.get(key).parent_keys) for key in graph.get_all_asset_keys()}


def test_dlt_dbt_and_io_manager_assets_form_one_graph_by_physical_name(platform: ModuleType) -> None:
    graph = platform.defs.resolve_asset_graph()
    # Exactly the four tables, each materializable: no phantom `shop_orders`, no dbt source stub.
    assert _edges(graph) == {
        RAW_ORDERS: set(),
        RAW_ITEMS: set(),
        ORDERS_CLEAN: {RAW_ORDERS, RAW_ITEMS},
        DAILY_REVENUE: {ORDERS_CLEAN},
        LANDED_PAYMENTS: set(),
        PROMOTED_PAYMENTS: {LANDED_PAYMENTS},
    }
    assert all(graph.get(key).is_materializable for key in graph.get_all_asset_keys())
    assert {key: graph.get(key).metadata["dagster/table_name"] for key in graph.get_all_asset_keys()} == {
        RAW_ORDERS: "lake.raw.orders",
        RAW_ITEMS: "lake.raw.orders__items",
        ORDERS_CLEAN: "lake.curated.orders_clean",
        DAILY_REVENUE: "lake.analytics.daily_revenue",
        LANDED_PAYMENTS: "lake.landing.payments",
        PROMOTED_PAYMENTS: "lake.raw_landed.payments",
    }
    # The dbt source dependencies carry the table name too (dagster-dbt's source metadata).
    dbt_spec = next(s for s in platform.shop_dbt.specs if s.key == ORDERS_CLEAN)
    assert {d.asset_key: d.metadata["dagster/table_name"] for d in dbt_spec.deps} == {
        RAW_ORDERS: "lake.raw.orders",
        RAW_ITEMS: "lake.raw.orders__items",
    }
    # srdp's maintenance and monitor are there too, beside the assets.
    assert {"srdp_dataset_maintenance", "srdp_catalog_pressure_monitor"} <= {j.name for j in platform.defs.resolve_all_job_defs()}


def test_dbt_sources_join_dlt_assets_with_keys_of_their_own_by_table_name(platform: ModuleType) -> None:
    """dlt assets keyed dagster-dlt's way still meet the dbt sources: by ``dagster/table_name``."""
    from srdp.dagster import SrdpDltTranslator
    from srdp.dagster import srdp_dlt_assets

    own_keys = srdp_dlt_assets(
        dlt_source=platform.shop(), destination=platform.raw, pipeline_name="platform_shop_own_keys",
        name="shop_own_keys", dagster_dlt_translator=SrdpDltTranslator(keys_from_table_names=False),
    )
    defs = dg.Definitions(
        assets=[own_keys, platform.shop_dbt, platform.daily_revenue],
        resources={"dlt": platform.DagsterDltResource(), "dbt": platform.dbt},
    )
    orders, items = dg.AssetKey("dlt_shop_orders"), dg.AssetKey("dlt_shop_orders__items")
    assert _edges(defs.resolve_asset_graph()) == {
        orders: set(),
        items: set(),
        ORDERS_CLEAN: {orders, items},
        DAILY_REVENUE: {ORDERS_CLEAN},
    }


def _read(config: Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` on the lake attached by plain DuckDB and DuckLake (read only, no srdp)."""
    lake = config.parent / "lake"
    con = duckdb.connect(config={
        "extension_directory": str(srdp.extension_directory()),
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "true",
    })
    try:
        con.execute(
            f"ATTACH 'ducklake:sqlite:{lake / 'catalog' / 'lake.sqlite'}' AS lake "
            f"(DATA_PATH '{lake / 'data'}/', READ_ONLY)"
        )
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_the_whole_chain_materializes_once_and_every_table_holds_its_rows(platform: ModuleType) -> None:
    job = platform.defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(instance=dg.DagsterInstance.ephemeral(), raise_on_error=False)
    failures = [e.event_specific_data.error.to_string() for e in result.all_events if e.is_step_failure]
    assert result.success, failures
    materialized = {e.asset_key for e in result.get_asset_materialization_events()}
    assert materialized == {RAW_ORDERS, RAW_ITEMS, ORDERS_CLEAN, DAILY_REVENUE, LANDED_PAYMENTS, PROMOTED_PAYMENTS}
    named = {
        e.asset_key: e.materialization.metadata["dagster/table_name"].value
        for e in result.get_asset_materialization_events()
        if "dagster/table_name" in e.materialization.metadata
    }
    assert named[RAW_ORDERS] == "lake.raw.orders" and named[RAW_ITEMS] == "lake.raw.orders__items"
    assert named[DAILY_REVENUE] == "lake.analytics.daily_revenue"

    # What each table must hold, computed here from the source's rows.
    orders = platform.ORDERS
    items = [(o["id"], i["sku"], i["qty"], i["price"]) for o in orders for i in o["items"]]
    amount = {o["id"]: sum(Decimal(str(i["qty"] * i["price"])) for i in o["items"]) for o in orders}
    by_day: dict[str, list[Decimal]] = defaultdict(list)
    for o in orders:
        by_day[o["order_date"]].append(amount[o["id"]])

    config = Path(platform.CONFIG)
    assert _read(config, "SELECT id, customer FROM lake.raw.orders ORDER BY id") == [
        (o["id"], o["customer"]) for o in orders
    ]
    assert _read(config, "SELECT o.id, i.sku, i.qty, i.price FROM lake.raw.orders__items i "
                         "JOIN lake.raw.orders o ON i._dlt_parent_id = o._dlt_id ORDER BY 1, 2") == sorted(items)
    assert _read(config, "SELECT order_id, customer, items, amount FROM lake.curated.orders_clean ORDER BY 1") == [
        (o["id"], o["customer"], len(o["items"]), amount[o["id"]]) for o in orders
    ]
    assert _read(config, "SELECT typeof(order_date), order_date::VARCHAR, orders, revenue FROM lake.analytics.daily_revenue ORDER BY 1") == [
        ("DATE", day, len(amounts), float(sum(amounts))) for day, amounts in sorted(by_day.items())
    ]
    # The quarantine way: the partner's payments landed outside the lake, promoted into raw_landed.
    assert _read(config, "SELECT payment_id, order_id, amount FROM lake.raw_landed.payments ORDER BY 1") == [
        (p["payment_id"], p["order_id"], p["amount"]) for p in platform.PAYMENTS
    ]
    assert named[PROMOTED_PAYMENTS] == "lake.raw_landed.payments"


def test_a_child_table_selected_without_its_parent_is_refused_before_any_load(platform: ModuleType) -> None:
    resources = {"dlt": platform.DagsterDltResource()}
    before = _read(Path(platform.CONFIG), "SELECT count(*) FROM lake.snapshots()")
    result = dg.materialize([platform.shop_assets], selection=[RAW_ITEMS], resources=resources, raise_on_error=False)
    assert not result.success
    error = result.get_step_failure_events()[0].event_specific_data.error
    message = error.cause.message if error.cause else error.message
    assert "dlt loads a child table only with its parent: select lake/raw/orders with lake/raw/orders__items" in message
    assert _read(Path(platform.CONFIG), "SELECT count(*) FROM lake.snapshots()") == before


def test_an_undeclared_child_table_is_loaded_and_named_in_a_warning(platform: ModuleType) -> None:
    import dlt

    from srdp.dagster import srdp_dlt_assets

    @dlt.source
    def baskets_source() -> Any:
        @dlt.resource
        def baskets() -> Any:
            yield [{"id": 1, "lines": [{"sku": "tea"}, {"sku": "cup"}]}]

        return baskets

    assets = srdp_dlt_assets(dlt_source=baskets_source(), destination=platform.raw, pipeline_name="baskets", name="baskets")
    assert {s.key for s in assets.specs} == {dg.AssetKey(["lake", "raw", "baskets"])}
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([assets], resources={"dlt": platform.DagsterDltResource()}, instance=instance)
    assert result.success
    warnings = [e.user_message for e in instance.all_logs(result.run_id) if e.level == logging.WARNING]
    assert any("dlt loaded child table(s) baskets__lines of resource 'baskets' that are not assets" in w for w in warnings), warnings
    assert _read(Path(platform.CONFIG), "SELECT count(*) FROM lake.raw.baskets__lines") == [(2,)]
