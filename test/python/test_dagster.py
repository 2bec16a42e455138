"""srdp.dagster with real Dagster: the nightly maintenance job, the hourly pressure monitor, the
schedules, and the composition with an application's Definitions.

Lakes are SQLite catalogs built through srdp with ``data_inlining_row_limit = 10``: 5-row batches
stay inlined, 20-row batches become Parquet files. Every data check compares row counts and
checksums before and after; live files and inlined rows are counted from the metadata tables
(lakecheck), never with srdp's functions, and the Parquet files on disk are exactly the files the
metadata knows (srdp deletes none).
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

import dagster as dg
import pytest

import srdp
from conftest import REPO, write_config
from lakecheck import Lake, parquet_files
from srdp import dagster as sd

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"
data_inlining_row_limit = 10
pressure_warning_rows = 12
"""

# One ephemeral Dagster instance for all runs, so that their logs can be read back.
INSTANCE = dg.DagsterInstance.ephemeral()

# (schema, table): (inlined batches of 5 rows, Parquet batches of 20 rows)
DATASETS = {("main", "a"): (3, 3), ("main", "b"): (2, 4), ("other", "c"): (4, 2)}


def build_lake(tmp_path, datasets=DATASETS, extra_sql=()):
    cfg = write_config(tmp_path, CONFIG)
    con = srdp.connect(config=cfg)
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    con.execute("CREATE SCHEMA IF NOT EXISTS lake.other")
    for (schema, table), (small, big) in datasets.items():
        con.execute(f"CREATE TABLE lake.{schema}.{table} (id BIGINT, v VARCHAR)")
        n = 0
        for _ in range(big):
            con.execute(f"INSERT INTO lake.{schema}.{table} SELECT {n} + range, 'big' || range FROM range(20)")
            n += 20
        for _ in range(small):
            con.execute(f"INSERT INTO lake.{schema}.{table} SELECT {n} + range, 'small' || range FROM range(5)")
            n += 5
    for statement in extra_sql:
        con.execute(statement)
    con.execute("DETACH lake")
    con.close()
    return cfg


def state(cfg: Path, orphans: list[str] | None = None) -> dict[tuple[str, str], tuple[int, str, int, int]]:
    """Per live dataset: (rows, checksum, live files, inlined rows), read by a fresh reader.

    Files and inlined rows come from the metadata tables. Every file the metadata registers (live
    or retired) is on disk, and the Parquet files on disk that it does not register are exactly
    ``orphans`` (one ``schema/table`` entry per file; none unless given).
    """
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        lake = Lake(con)
        data = cfg.parent / "data" / "lake"
        on_disk, registered = parquet_files(data), lake.registered_files()
        assert registered <= on_disk, sorted(registered - on_disk)
        unregistered = sorted(str(Path(f).parent.relative_to(data)) for f in on_disk - registered)
        assert unregistered == sorted(orphans or []), unregistered
        files, inlined = lake.file_counts(), lake.inlined_rows()
        out = {}
        for schema, table in lake.datasets():
            rows, checksum = con.execute(
                f"SELECT count(*), sum(hash(id, v))::VARCHAR FROM lake.{schema}.{table}"
            ).fetchone()
            out[(schema, table)] = (rows, checksum, files[(schema, table)], inlined[(schema, table)])
        return out
    finally:
        con.close()


def compacted(before: tuple[int, str, int, int]) -> tuple[int, str, int, int]:
    """A dataset after srdp_compact: the same rows, in one live file, nothing inlined."""
    return (*before[:2], 1, 0)


def run_maintenance(cfg, raise_on_error=True, **op_config):
    job = sd.srdp_definitions(cfg).resolve_job_def(sd.MAINTENANCE_JOB)
    return job.execute_in_process(
        run_config={"ops": {"srdp_maintain_datasets": {"config": op_config}}},
        raise_on_error=raise_on_error,
        instance=INSTANCE,
    )


def messages(result, level: int | None = None) -> list[str]:
    """The run's log lines (context.log calls included), optionally of one level."""
    return [
        entry.user_message
        for entry in INSTANCE.all_logs(result.run_id)
        if level is None or entry.level == level
    ]


def outputs(result) -> dict:
    """Every dataset's result from the job's one output, ``summary``, keyed catalog__schema__table."""
    summary = result.output_for_node("srdp_maintain_datasets", "summary")
    return {f"{r['catalog']}__{r['schema_name']}__{r['table_name']}": r for r in summary["results"]}


def summary_metadata(result) -> dict:
    (event,) = [
        e for e in result.all_node_events
        if e.event_type_value == "STEP_OUTPUT" and e.step_output_data.output_name == "summary"
    ]
    return {k: v.value for k, v in event.step_output_data.metadata.items()}


def test_maintenance_job_flushes_and_compacts_every_dataset_and_keeps_the_rows(tmp_path):
    cfg = build_lake(tmp_path)
    before = state(cfg)
    assert {k: v[3] for k, v in before.items()} == {("main", "a"): 15, ("main", "b"): 10, ("other", "c"): 20}
    assert {k: v[2] for k, v in before.items()} == {("main", "a"): 3, ("main", "b"): 4, ("other", "c"): 2}

    result = run_maintenance(cfg)
    assert result.success
    after = state(cfg)
    # The same rows; the flushed file and the Parquet files merged into one; nothing inlined.
    assert after == {key: compacted(value) for key, value in before.items()}
    # Every dataset's result in the summary output, in (schema, table) order. The numbers are the
    # ones counted from the metadata before the run.
    out = outputs(result)
    assert list(out) == ["lake__main__a", "lake__main__b", "lake__other__c"]
    for (schema, table), (_, _, files, inlined) in before.items():
        assert out[f"lake__{schema}__{table}"] == {
            "catalog": "lake",
            "schema_name": schema,
            "table_name": table,
            "rows_flushed": inlined,
            "files_before": files,
            "files_after": 1,
            "files_processed": files + 1,  # the Parquet files + the one the flush wrote
            "files_created": 1,
            "files_rewritten": 0,
            "deletes_applied": 0,
            "attempts": 1,
            "duration_ms": out[f"lake__{schema}__{table}"]["duration_ms"],
            "status": "compacted",
        }
    events = result.get_step_success_events()
    assert [e.step_key for e in events] == ["srdp_maintain_datasets"]
    # One output, not one per dataset; its metadata lists the datasets that had a step.
    assert [e.step_output_data.output_name for e in result.all_node_events if e.event_type_value == "STEP_OUTPUT"] == [
        "summary"
    ]
    meta = summary_metadata(result)
    assert [r["table_name"] for r in meta["srdp/steps"]] == ["a", "b", "c"]
    assert meta["srdp/steps"][2]["rows_flushed"] == 20
    assert (meta["srdp/steps"][2]["files_before"], meta["srdp/steps"][2]["files_after"]) == (2, 1)
    assert meta["srdp/by_status"] == {"compacted": 3}
    assert (meta["datasets"], meta["srdp/rows_flushed"], meta["srdp/files_merged"]) == (3, 45, 12)
    logs = messages(result)
    assert not any("nothing to do" in m for m in logs), logs
    for line in (
        "srdp: lake.main.a: compacted; 15 inlined rows flushed, files 3 -> 1 (4 merged into 1), attempts 1, ",
        "srdp: lake.main.b: compacted; 10 inlined rows flushed, files 4 -> 1 (5 merged into 1), attempts 1, ",
        "srdp: lake.other.c: compacted; 20 inlined rows flushed, files 2 -> 1 (3 merged into 1), attempts 1, ",
    ):
        assert sum(line in m for m in logs) == 1, (line, logs)

    # A rerun revisits every dataset harmlessly.
    again = run_maintenance(cfg)
    assert again.success
    assert state(cfg) == after
    assert {k: v["status"] for k, v in outputs(again).items()} == dict.fromkeys(out, "nothing to do")
    # Nothing to do: no line per dataset, one line for the catalog naming all three.
    logs = messages(again)
    assert [m for m in logs if m.startswith("srdp: lake")] == [
        "srdp: lake: 3 datasets had nothing to do (1/1): main.a, main.b, other.c"
    ]
    assert summary_metadata(again)["srdp/steps"] == []
    assert summary_metadata(again)["srdp/by_status"] == {"nothing to do": 3}


def test_selection_by_namespace_and_name_touches_only_that_dataset(tmp_path):
    cfg = build_lake(tmp_path)
    before = state(cfg)
    result = run_maintenance(cfg, namespace="main", name="b")
    assert result.success
    assert list(outputs(result)) == ["lake__main__b"]
    b = compacted(before[("main", "b")])
    assert state(cfg) == {**before, ("main", "b"): b}
    # Namespace alone selects the whole schema.
    result = run_maintenance(cfg, namespace="other")
    assert result.success
    assert list(outputs(result)) == ["lake__other__c"]
    assert state(cfg) == {**before, ("main", "b"): b, ("other", "c"): compacted(before[("other", "c")])}


def test_a_failing_dataset_fails_the_run_after_the_earlier_ones_were_committed(tmp_path):
    # main.m's flush is rejected by DuckLake 1.0 for real (duckdb/ducklake#1383): DROP NOT NULL
    # does not create a new inlined table, so flushing a NULL into the old one fails.
    datasets = {("main", "a"): (3, 3), ("main", "z"): (2, 2)}
    cfg = build_lake(
        tmp_path,
        datasets,
        extra_sql=[
            "CREATE TABLE lake.main.m (id BIGINT NOT NULL, v VARCHAR)",
            "INSERT INTO lake.main.m VALUES (1, 'x')",
            "ALTER TABLE lake.main.m ALTER COLUMN id DROP NOT NULL",
            "INSERT INTO lake.main.m VALUES (NULL, 'y')",
        ],
    )
    before = state(cfg)
    result = run_maintenance(cfg, raise_on_error=False)
    assert not result.success
    failure = result.failure_data_for_node("srdp_maintain_datasets")
    description = failure.user_failure_data.description
    assert failure.error.message == f"dagster._core.definitions.events.Failure: {description}\n"
    assert description.startswith(
        "srdp maintenance failed at dataset lake.main.m: Invalid Input Error: srdp_compact: dataset 'main.m' "
        "failed to flush after 1 attempt(s): Constraint Error: NOT NULL constraint failed: m.id. "
    ), description
    assert description.endswith(
        "Datasets committed before it: lake.main.a. A rerun revisits the committed datasets harmlessly."
    ), description
    # One list of the committed datasets: srdp_compact's own ("main.a") becomes the run's.
    assert description.count("Datasets committed before it:") == 1, description
    assert {k: v.value for k, v in failure.user_failure_data.metadata.items()} == {"dataset": "lake.main.m", "datasets_done": 1}
    # main.a compacted; main.m (nothing half done) and main.z (never reached) as they were. The
    # failed flush leaves the Parquet file it wrote for main.m behind, unregistered (DuckLake
    # rolls back the metadata, not the file; ducklake_delete_orphaned_files would remove it).
    assert state(cfg, orphans=["main/m"]) == {**before, ("main", "a"): compacted(before[("main", "a")])}


def test_schedules_and_no_retry_policy():
    defs = sd.srdp_definitions(REPO / "examples" / "srdp.toml")
    nightly = defs.resolve_schedule_def(sd.MAINTENANCE_SCHEDULE)
    assert (nightly.cron_schedule, nightly.execution_timezone, nightly.default_status) == (
        "0 2 * * *",
        "UTC",
        dg.DefaultScheduleStatus.RUNNING,
    )
    assert nightly.job_name == sd.MAINTENANCE_JOB
    hourly = defs.resolve_schedule_def(sd.MONITOR_SCHEDULE)
    assert (hourly.cron_schedule, hourly.execution_timezone, hourly.job_name) == ("0 * * * *", "UTC", sd.MONITOR_JOB)
    assert hourly.default_status == dg.DefaultScheduleStatus.RUNNING
    for name in (sd.MAINTENANCE_JOB, sd.MONITOR_JOB):
        job = defs.resolve_job_def(name)
        assert job.op_retry_policy is None, name
        for node in job.graph.node_dict.values():
            assert node.retry_policy is None and node.definition.retry_policy is None, (name, node.name)
    # The same job runs by hand: it is a plain job of the definitions.
    assert sd.MAINTENANCE_JOB in [j.name for j in defs.resolve_all_job_defs()]


class Collector:
    def __init__(self):
        self.events = []

    def publish(self, event):
        self.events.append(event)


class Broken:
    calls = 0

    def publish(self, event):
        Broken.calls += 1
        raise RuntimeError("message bus is down")


def run_monitor(cfg, publisher, **op_config):
    job = sd.srdp_definitions(cfg, publisher=publisher).resolve_job_def(sd.MONITOR_JOB)
    return job.execute_in_process(
        run_config={"ops": {"srdp_check_catalog_pressure": {"config": op_config}}},
        instance=INSTANCE,
    )


def test_monitor_emits_one_event_per_dataset_over_the_limit_on_every_run(tmp_path):
    cfg = build_lake(tmp_path)  # inlined: a 15, b 10, c 20; pressure_warning_rows 12
    collector = Collector()
    for run in (1, 2):
        result = run_monitor(cfg, collector)
        assert result.success and result.output_for_node("srdp_check_catalog_pressure") == 2
        got = [(e.event, e.catalog, e.schema_name, e.table_name, e.inlined_rows, e.threshold) for e in collector.events]
        assert got == [
            ("DatasetCatalogPressure", "lake", "main", "a", 15, 12),
            ("DatasetCatalogPressure", "lake", "other", "c", 20, 12),
        ] * run
        warnings = messages(result, logging.WARNING)
        assert warnings == [
            "DatasetCatalogPressure: lake.main.a has 15 inlined rows (threshold 12); run srdp_flush or the srdp_dataset_maintenance job",
            "DatasetCatalogPressure: lake.other.c has 20 inlined rows (threshold 12); run srdp_flush or the srdp_dataset_maintenance job",
        ]
    # A threshold in the run config overrides the definition's.
    collector.events.clear()
    run_monitor(cfg, collector, threshold=5)
    assert [(e.table_name, e.threshold) for e in collector.events] == [("a", 5), ("b", 5), ("c", 5)]
    # Nothing over the limit after maintenance: no events.
    collector.events.clear()
    assert run_maintenance(cfg).success
    assert run_monitor(cfg, collector).output_for_node("srdp_check_catalog_pressure") == 0
    assert collector.events == []


def test_a_failing_publisher_does_not_fail_the_monitor(tmp_path):
    cfg = build_lake(tmp_path)
    Broken.calls = 0
    result = run_monitor(cfg, Broken())
    assert result.success
    assert Broken.calls == 2
    errors = messages(result, logging.ERROR)
    assert errors == [
        f"publishing DatasetCatalogPressure for lake.{dataset} failed (ignored): RuntimeError('message bus is down')"
        for dataset in ("main.a", "other.c")
    ]


def test_add_srdp_definitions_composes_with_an_application(tmp_path):
    @dg.asset
    def unrelated() -> int:
        return 1

    app = dg.Definitions(assets=[unrelated])
    assert sd.add_srdp_definitions(app, tmp_path / "srdp.toml", enabled=False) is app
    combined = sd.add_srdp_definitions(app, tmp_path / "srdp.toml")
    # The application's asset (and Dagster's implicit job for it) next to srdp's jobs and schedules.
    assert {j.name for j in combined.resolve_all_job_defs()} == {"__ASSET_JOB", sd.MAINTENANCE_JOB, sd.MONITOR_JOB}
    assert {s.name for s in combined.schedules} == {sd.MAINTENANCE_SCHEDULE, sd.MONITOR_SCHEDULE}
    assert list(combined.assets) == [unrelated]
    assert combined.resolve_asset_graph().get_all_asset_keys() == {dg.AssetKey("unrelated")}
    assert combined.resources["srdp"].config_path == str(tmp_path / "srdp.toml")
    assert app.resources in (None, {})  # the application's Definitions were not changed


def test_dagster_definitions_validate_passes_for_the_example(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    example = REPO / "examples" / "dagster_definitions.py"
    result = subprocess.run(
        [str(REPO / ".venv" / "bin" / "dagster"), "definitions", "validate", "-f", str(example)],
        cwd=tmp_path,  # dagster keeps a temporary home in the working directory
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "All code locations passed validation." in result.stdout + result.stderr
