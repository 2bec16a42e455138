"""srdp's health checks in a run where one asset fails: the assets that succeeded still get their
checks. A real Dagster run of the application's asset job (assets and srdp's checks, as the UI's
"Materialize all" runs them) on a SQLite lake: ``orders`` and the two tables of ``shop`` (one op)
succeed, ``broken`` raises. Each group of assets one op materializes has its own check step, so
only ``broken``'s checks are skipped; the others are evaluated on the lake the run just wrote.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pyarrow as pa

from conftest import write_config
from srdp import dagster as sd

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"

[catalogs.lake.schemas.analytics]
writer = "io_manager"
layer = "curated"
"""

CHECKS = ("inlined_rows_under_threshold", "small_files_under_limit")


def test_one_failed_asset_skips_only_its_own_health_checks(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, CONFIG)
    tables = {name: sd.srdp_table("lake", "analytics", name, config=cfg) for name in ("orders", "broken", "items", "customers")}

    @dg.asset(key=tables["orders"].key, metadata=tables["orders"].metadata)
    def orders() -> pa.Table:
        return pa.table({"id": [1, 2, 3]})

    @dg.asset(key=tables["broken"].key, metadata=tables["broken"].metadata)
    def broken() -> pa.Table:
        raise RuntimeError("the source is down")

    @dg.multi_asset(
        outs={n: dg.AssetOut(key=tables[n].key, metadata=tables[n].metadata) for n in ("items", "customers")}
    )
    def shop() -> tuple[pa.Table, pa.Table]:
        return pa.table({"sku": ["a"]}), pa.table({"name": ["x", "y"]})

    defs = sd.add_srdp_definitions(dg.Definitions(assets=[orders, broken, shop]), cfg, io_manager=True)
    checks = [c for c in defs.asset_checks or []]
    assert sorted(c.node_def.name for c in checks) == [
        "srdp_table_health_checks__lake__analytics__broken",
        "srdp_table_health_checks__lake__analytics__items",
        "srdp_table_health_checks__lake__analytics__orders",
    ]
    job = defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(instance=dg.DagsterInstance.ephemeral(), raise_on_error=False)
    assert not result.success
    materialized = {e.asset_key.path[-1] for e in result.all_events if e.event_type_value == "ASSET_MATERIALIZATION"}
    assert materialized == {"orders", "items", "customers"}
    evaluated = {
        (e.asset_check_evaluation_data.asset_key.path[-1], e.asset_check_evaluation_data.check_name):
            (e.asset_check_evaluation_data.passed, e.asset_check_evaluation_data.metadata["srdp/inlined_rows"].value
             if "srdp/inlined_rows" in e.asset_check_evaluation_data.metadata else None)
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }
    # Every check of the three tables that were written ran (and read their inlined rows); none
    # of broken's.
    assert evaluated == {
        ("orders", CHECKS[0]): (True, 3),
        ("orders", CHECKS[1]): (True, None),
        ("items", CHECKS[0]): (True, 1),
        ("items", CHECKS[1]): (True, None),
        ("customers", CHECKS[0]): (True, 2),
        ("customers", CHECKS[1]): (True, None),
    }
    # The monitor still evaluates every declared check, broken's included (the table is missing:
    # passed with a note, advisory).
    declared = {(k.asset_key.path[-1], k.name) for k in defs.resolve_asset_graph().asset_check_keys}
    assert declared == {(t, c) for t in ("orders", "broken", "items", "customers") for c in CHECKS}
