"""Each table's health on its own asset across the platform example: the dlt tables, the dbt model
and the IO-manager assets get the monitor's observation on their own key and srdp's two checks,
after the whole chain was materialized once (examples/platform, loaded as test_lineage_graph
loads it). Expected numbers are counted from the metadata tables and the files on disk, never
with srdp.
"""

# No `from __future__ import annotations`: the platform module's assets are read by Dagster.

import os
from pathlib import Path
from types import ModuleType

import dagster as dg

import srdp
from lakecheck import Lake
from srdp import dagster as sd
from test_lineage_graph import (  # noqa: F401
    DAILY_REVENUE,
    LANDED_PAYMENTS,
    ORDERS_CLEAN,
    PROMOTED_PAYMENTS,
    RAW_ITEMS,
    RAW_ORDERS,
    platform,
)

CHECKED = {RAW_ORDERS, RAW_ITEMS, ORDERS_CLEAN, DAILY_REVENUE, PROMOTED_PAYMENTS}


def counted(config: Path) -> dict[dg.AssetKey, dict[str, int]]:
    """Per live table: files and inlined rows from the metadata tables, bytes from disk (every
    file of this small lake is under the merge target; no deletes, so no markers)."""
    con = srdp.connect(config=config)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        lake = Lake(con)
        files, inlined, backlog = lake.live_files(), lake.inlined_rows(), lake.delete_backlog()
        out = {
            dg.AssetKey(["lake", schema, table]): {
                "srdp/inlined_rows": inlined[(schema, table)],
                "srdp/inline_deletion_markers": 0,
                "srdp/live_data_files": len(paths),
                "srdp/small_files": len(paths),
                "srdp/live_bytes": sum(os.path.getsize(p) for p in paths),
                "srdp/files_with_deletes": backlog[(schema, table)][0],
                "srdp/deleted_rows": backlog[(schema, table)][1],
                "srdp/deleted_share": round(backlog[(schema, table)][1] / backlog[(schema, table)][2], 6)
                if backlog[(schema, table)][2] else 0.0,
            }
            for (schema, table), paths in files.items()
        }
        con.execute("DETACH lake")
        return out
    finally:
        con.close()


def test_dlt_dbt_and_io_manager_tables_get_observations_and_checks_on_their_keys(platform: ModuleType) -> None:  # noqa: F811
    defs = platform.defs
    # The checks are declared on every table asset of the code location (dlt, dbt, IO manager),
    # the landing zone's dlt asset included (its dagster/table_name is lake.landing.payments,
    # a folder outside DuckLake: the monitor never sees it, so it never gets an evaluation).
    declared = {k.asset_key for k in defs.resolve_asset_graph().asset_check_keys}
    assert declared - {dg.AssetKey(["lake", "landing", "payments"])} == CHECKED
    assert LANDED_PAYMENTS in declared
    instance = dg.DagsterInstance.ephemeral()
    job = defs.resolve_implicit_global_asset_job_def()
    built = job.execute_in_process(instance=instance, raise_on_error=False)
    assert built.success, [e.event_specific_data.error.to_string() for e in built.all_events if e.is_step_failure]

    result = defs.resolve_job_def(sd.MONITOR_JOB).execute_in_process(
        run_config={"ops": {"srdp_check_catalog_pressure": {"config": {"threshold": 0, "small_files_limit": 0}}}},
        instance=instance,
    )
    assert result.success
    expected = counted(Path(platform.CONFIG))
    assert CHECKED <= set(expected)
    observed = {
        e.event_specific_data.asset_observation.asset_key: {
            k: v.value for k, v in e.event_specific_data.asset_observation.metadata.items()
        }
        for e in result.all_events
        if e.event_type_value == "ASSET_OBSERVATION"
    }
    assert observed == expected
    # Threshold 0 and limit 0: a table with inlined rows or any file warns, one without passes.
    evaluations = {
        (e.asset_key, e.check_name): (e.passed, e.severity.value)
        for e in (ev.event_specific_data for ev in result.all_events if ev.event_type_value == "ASSET_CHECK_EVALUATION")
    }
    assert evaluations == {
        **{(key, "inlined_rows_under_threshold"): (expected[key]["srdp/inlined_rows"] == 0, "WARN") for key in CHECKED},
        **{(key, "small_files_under_limit"): (expected[key]["srdp/small_files"] == 0, "WARN") for key in CHECKED},
    }
    assert any(not passed for passed, _ in evaluations.values())
