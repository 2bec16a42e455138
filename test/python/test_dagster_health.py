"""Each table's health on its own asset: the monitor's and the maintenance job's observations,
the two advisory checks, the run summaries, with real Dagster on a real SQLite lake.

The lake holds an IO-manager asset (``lake/analytics/events``, appended by Dagster runs) and two
tables no asset produces (``lake.main.loose``, with inline deletion markers, and
``lake.main.empty``). Every expected number is counted here, independently of srdp: live files
and inlined rows from the metadata tables (lakecheck), bytes from the files on disk, markers
from DuckLake's ``ducklake_inlined_delete_<table_id>`` table.
"""

# No `from __future__ import annotations`: Dagster reads the asset's config annotation as an object.

import os
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest

import srdp
from conftest import write_config
from lakecheck import Lake
from srdp import dagster as sd
from srdp.dagster import health

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"
data_inlining_row_limit = 10
pressure_warning_rows = 12

[catalogs.lake.schemas.analytics]
writer = "io_manager"
layer = "curated"
"""

KEYS = {name: dg.AssetKey(["lake", *name.split(".")]) for name in ("analytics.events", "main.loose", "main.empty")}


class Rows(dg.Config):
    rows: int = 20


def definitions(cfg: Path) -> dg.Definitions:
    table = sd.srdp_table("lake", "analytics", "events", config=cfg)

    @dg.asset(key=table.key, metadata={**table.metadata, "write_mode": "append"})
    def events(config: Rows) -> pa.Table:
        return pa.table({"id": pa.array(range(config.rows), pa.int64())})

    class Quiet:
        def publish(self, event):
            pass

    return sd.add_srdp_definitions(dg.Definitions(assets=[events]), cfg, io_manager=True, publisher=Quiet())


def materialize(defs: dg.Definitions, instance: dg.DagsterInstance, rows: int) -> None:
    job = defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(
        run_config={"ops": {"lake__analytics__events": {"config": {"rows": rows}}}},
        instance=instance,
        asset_selection=[KEYS["analytics.events"]],
    )
    assert result.success


def counted(cfg: Path) -> dict[dg.AssetKey, dict[str, int]]:
    """Per dataset, the health counted without srdp: files and inlined rows from the metadata
    tables, bytes from disk, markers from the marker table; every file is under 512 MiB."""
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        lake = Lake(con)
        files, inlined, ids = lake.live_files(), lake.inlined_rows(), lake.datasets()
        backlog = lake.delete_backlog()
        out = {}
        for (schema, table), paths in files.items():
            try:
                (markers,) = con.execute(
                    f"SELECT count(*) FROM {lake.table(f'ducklake_inlined_delete_{ids[(schema, table)]}')}"
                ).fetchone()
            except Exception:
                markers = 0
            out[dg.AssetKey(["lake", schema, table])] = {
                "srdp/inlined_rows": inlined[(schema, table)],
                "srdp/inline_deletion_markers": markers,
                "srdp/live_data_files": len(paths),
                "srdp/small_files": len(paths),
                "srdp/live_bytes": sum(os.path.getsize(p) for p in paths),
                "srdp/files_with_deletes": backlog[(schema, table)][0],
                "srdp/deleted_rows": backlog[(schema, table)][1],
                "srdp/deleted_share": round(backlog[(schema, table)][1] / backlog[(schema, table)][2], 6)
                if backlog[(schema, table)][2] else 0.0,
            }
        con.execute("DETACH lake")
        return out
    finally:
        con.close()


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    """The lake after three Dagster runs of the asset (two 20-row files, one 5-row inlined batch)
    and the loose tables (three files, two inlined batches, two deleted Parquet rows)."""
    tmp = tmp_path_factory.mktemp("health")
    cfg = write_config(tmp, CONFIG)
    con = srdp.connect(config=cfg)
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    con.execute("CREATE TABLE lake.main.loose (id BIGINT)")
    con.execute("CREATE TABLE lake.main.empty (id BIGINT)")
    for _ in range(3):
        con.execute("INSERT INTO lake.main.loose SELECT range FROM range(20)")
    for _ in range(2):
        con.execute("INSERT INTO lake.main.loose SELECT 100 + range FROM range(4)")
    con.execute("DELETE FROM lake.main.loose WHERE id = 7")  # one row in each of the 3 files
    con.execute("DETACH lake")
    con.close()
    instance = dg.DagsterInstance.ephemeral()
    defs = definitions(cfg)
    for rows in (20, 20, 5):
        materialize(defs, instance, rows)
    return cfg, defs, instance


def observations(result) -> dict[dg.AssetKey, dict]:
    out = {}
    for event in result.all_events:
        if event.event_type_value == "ASSET_OBSERVATION":
            obs = event.event_specific_data.asset_observation
            assert obs.asset_key not in out, obs.asset_key
            out[obs.asset_key] = {k: v.value for k, v in obs.metadata.items()}
    return out


def evaluations(result) -> dict[tuple[dg.AssetKey, str], tuple[bool, str]]:
    return {
        (e.asset_key, e.check_name): (e.passed, e.severity.value)
        for e in (ev.event_specific_data for ev in result.all_events if ev.event_type_value == "ASSET_CHECK_EVALUATION")
    }


def run_monitor(platform, **op_config):
    cfg, defs, instance = platform
    return defs.resolve_job_def(sd.MONITOR_JOB).execute_in_process(
        run_config={"ops": {"srdp_check_catalog_pressure": {"config": op_config}}}, instance=instance
    )


def test_the_monitor_records_each_tables_health_and_checks_on_its_own_key(platform):
    cfg, defs, instance = platform
    expected = counted(cfg)
    # What the lake holds, counted independently: the asset 2 files + 5 inlined rows; loose 3
    # files, 8 inlined rows, 3 markers; empty nothing.
    assert {k: (v["srdp/live_data_files"], v["srdp/inlined_rows"], v["srdp/inline_deletion_markers"]) for k, v in expected.items()} == {
        KEYS["analytics.events"]: (2, 5, 0),
        KEYS["main.loose"]: (3, 8, 3),
        KEYS["main.empty"]: (0, 0, 0),
    }
    result = run_monitor(platform, threshold=6, small_files_limit=2)
    assert result.success
    # One observation per dataset, on its physical-name key, with exactly the counted numbers;
    # the tables no asset produces included.
    assert observations(result) == expected
    # The checks are declared on the application's table asset (its badge), not on tables that
    # no asset produces (they have no check to show a result on): the monitor evaluates the
    # declared ones, and its evaluations are the checks' latest results.
    graph = defs.resolve_asset_graph()
    assert graph.asset_check_keys == {
        dg.AssetCheckKey(KEYS["analytics.events"], "inlined_rows_under_threshold"),
        dg.AssetCheckKey(KEYS["analytics.events"], "small_files_under_limit"),
    }
    assert evaluations(result) == {
        (KEYS["analytics.events"], "inlined_rows_under_threshold"): (True, "WARN"),
        (KEYS["analytics.events"], "small_files_under_limit"): (True, "WARN"),
    }
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(list(graph.asset_check_keys))
    assert {k.name: r.status.value for k, r in latest.items()} == {
        "inlined_rows_under_threshold": "SUCCEEDED",
        "small_files_under_limit": "SUCCEEDED",
    }
    # Over the limits (threshold 4 < 5 inlined rows, limit 1 < 2 small files): both warn.
    over = run_monitor(platform, threshold=4, small_files_limit=1)
    assert evaluations(over) == {
        (KEYS["analytics.events"], "inlined_rows_under_threshold"): (False, "WARN"),
        (KEYS["analytics.events"], "small_files_under_limit"): (False, "WARN"),
    }
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(list(graph.asset_check_keys))
    assert {k.name: r.status.value for k, r in latest.items()} == {
        "inlined_rows_under_threshold": "FAILED",
        "small_files_under_limit": "FAILED",
    }
    meta = _output_metadata(result, "srdp_check_catalog_pressure", "result")
    bytes_total = sum(v["srdp/live_bytes"] for v in expected.values())
    assert meta["srdp/summary"] == (
        "| datasets | inlined rows | inline deletion markers | live data files | small files | live bytes "
        "| files with deletes | deleted rows |\n"
        "|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        f"| 3 | 13 | 3 | 5 | 5 | {bytes_total} | 3 | 3 |\n"
        "\nTop datasets by inlined rows:\n\n| dataset | inlined rows |\n|---|---:|\n"
        "| lake.main.loose | 8 |\n| lake.analytics.events | 5 |\n"
        "\nTop datasets by small files:\n\n| dataset | small files |\n|---|---:|\n"
        "| lake.main.loose | 3 |\n| lake.analytics.events | 2 |\n"
        "\nTop datasets by files with deletes:\n\n| dataset | files with deletes |\n|---|---:|\n"
        "| lake.main.loose | 3 |"
    )
    # The catalog's pressure_warning_rows (12) and 100 small files are the defaults.
    again = run_monitor(platform)
    assert {k: v[0] for k, v in evaluations(again).items()} == dict.fromkeys(evaluations(result), True)
    assert observations(again) == expected


def _output_metadata(result, node: str, output: str) -> dict:
    for event in result.all_node_events:
        if event.event_type_value == "STEP_OUTPUT" and event.step_output_data.output_name == output:
            return {k: v.value for k, v in event.step_output_data.metadata.items()}
    raise AssertionError(f"no output {output} of {node}")


def test_the_declared_checks_run_on_their_own_and_agree(platform):
    cfg, defs, instance = platform
    result = dg.materialize(
        [*defs.assets, *defs.asset_checks],
        resources=defs.resources,
        instance=instance,
        selection=dg.AssetSelection.checks_for_assets(KEYS["analytics.events"]),
    )
    assert result.success
    assert evaluations(result) == {
        (KEYS["analytics.events"], "inlined_rows_under_threshold"): (True, "WARN"),
        (KEYS["analytics.events"], "small_files_under_limit"): (True, "WARN"),
    }


def test_maintenance_observes_every_step_and_summarises_the_run(platform):
    # Every dataset that had a step gets an observation; main.empty had nothing to do, so no
    # step and no observation (the hourly monitor observes it, test above).
    cfg, defs, instance = platform
    before = counted(cfg)
    result = defs.resolve_job_def(sd.MAINTENANCE_JOB).execute_in_process(instance=instance)
    assert result.success
    after = counted(cfg)
    # events: its 2 files and the flushed one merged into 1. loose: the markers went to delete
    # files, its 3 files were rewritten without the deleted rows into one, merged with the flushed
    # file: one file, no deletes.
    assert {k: (v["srdp/live_data_files"], v["srdp/inlined_rows"], v["srdp/inline_deletion_markers"],
                v["srdp/files_with_deletes"]) for k, v in after.items()} == {
        KEYS["analytics.events"]: (1, 0, 0, 0),
        KEYS["main.loose"]: (1, 0, 0, 0),
        KEYS["main.empty"]: (0, 0, 0, 0),
    }
    assert before[KEYS["main.loose"]]["srdp/files_with_deletes"] == 3
    assert before[KEYS["main.loose"]]["srdp/deleted_rows"] == 3
    got = observations(result)
    durations = {k: v.pop("srdp/duration_ms") for k, v in got.items()}
    assert all(isinstance(d, int) and d >= 0 for d in durations.values()), durations
    step = {
        KEYS["analytics.events"]: (5, 0, 3, "compacted"),
        KEYS["main.loose"]: (8, 3, 2, "compacted; 3 inline deletion markers written to a delete file; "
                                       "3 files with deletes rewritten (3 deleted rows left out)"),
    }
    assert got == {
        key: {
            **after[key],
            "srdp/rows_flushed": step[key][0],
            "srdp/files_rewritten": step[key][1],
            "srdp/files_merged": step[key][2],
            "srdp/status": step[key][3],
        }
        for key in step
    }
    # The rows flushed are the inlined rows counted before the run; main.empty had none.
    assert {k: v[0] for k, v in step.items()} == {k: v["srdp/inlined_rows"] for k, v in before.items() if k in step}
    assert before[KEYS["main.empty"]]["srdp/inlined_rows"] == 0
    meta = _output_metadata(result, "srdp_maintain_datasets", "summary")
    assert (meta["datasets"], meta["srdp/rows_flushed"], meta["srdp/files_rewritten"], meta["srdp/files_merged"]) == (
        3, 13, 3, 5)
    assert meta["srdp/by_status"] == {"compacted": 2, "nothing to do": 1}
    assert [(r["schema_name"], r["table_name"]) for r in meta["srdp/steps"]] == [("analytics", "events"), ("main", "loose")]
    assert meta["srdp/summary"] == (
        "| datasets | inlined rows | inline deletion markers | live data files | small files | live bytes "
        "| files with deletes | deleted rows |\n"
        "|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        f"| 3 | 0 | 0 | 2 | 2 | {sum(v['srdp/live_bytes'] for v in after.values())} | 0 | 0 |\n"
        "\nTop datasets by inlined rows:\n\n| dataset | inlined rows |\n|---|---:|\n| (none) | 0 |\n"
        "\nTop datasets by small files:\n\n| dataset | small files |\n|---|---:|\n"
        "| lake.analytics.events | 1 |\n| lake.main.loose | 1 |\n"
        "\nTop datasets by files with deletes:\n\n| dataset | files with deletes |\n|---|---:|\n| (none) | 0 |"
    )


def test_a_declared_table_no_asset_produces_gets_the_checks_too(platform):
    cfg = platform[0]
    orders = sd.srdp_table("lake", "main", "loose", config=cfg)
    app = dg.Definitions(assets=[dg.AssetSpec(key=orders.key, metadata=orders.metadata)])
    assert sd.add_srdp_definitions(app, cfg).resolve_asset_graph().asset_check_keys == {
        dg.AssetCheckKey(KEYS["main.loose"], "inlined_rows_under_threshold"),
        dg.AssetCheckKey(KEYS["main.loose"], "small_files_under_limit"),
    }
    # health_checks=False leaves them out; an asset whose table name is not its key gets none.
    assert sd.add_srdp_definitions(app, cfg, health_checks=False).resolve_asset_graph().asset_check_keys == set()
    other = dg.AssetSpec(key="loose", metadata=orders.metadata)
    assert sd.add_srdp_definitions(dg.Definitions(assets=[other]), cfg).resolve_asset_graph().asset_check_keys == set()
