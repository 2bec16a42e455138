"""srdp.dagster with real Dagster: the nightly maintenance job, the hourly pressure monitor, the
schedules, and the composition with an application's Definitions.

Lakes are SQLite catalogs built through srdp with ``data_inlining_row_limit = 10``: 5-row batches
stay inlined, 20-row batches become Parquet files. Every data check compares row counts and
checksums before and after.
"""

from __future__ import annotations

import logging
import os
import subprocess

import dagster as dg
import pytest

import srdp
from conftest import REPO, write_config
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


def state(cfg):
    """Per dataset: (rows, checksum, live files, inlined rows), read by a fresh reader."""
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        inlined = {
            (s, t): n
            for s, t, n in con.execute(
                "SELECT schema_name, table_name, inlined_rows FROM srdp_inlined_row_count('lake')"
            ).fetchall()
        }
        out = {}
        for (schema, table), n in inlined.items():
            rows, checksum = con.execute(
                f"SELECT count(*), sum(hash(id, v))::VARCHAR FROM lake.{schema}.{table}"
            ).fetchone()
            (files,) = con.execute(
                "SELECT count(*) FROM __ducklake_metadata_lake.main.ducklake_data_file f "
                "JOIN __ducklake_metadata_lake.main.ducklake_table t USING (table_id) "
                "JOIN __ducklake_metadata_lake.main.ducklake_schema s USING (schema_id) "
                "WHERE f.end_snapshot IS NULL AND t.end_snapshot IS NULL AND s.end_snapshot IS NULL "
                "AND s.schema_name = ? AND t.table_name = ?",
                [schema, table],
            ).fetchone()
            out[(schema, table)] = (rows, checksum, files, n)
        return out
    finally:
        con.close()


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
    return result.output_for_node("srdp_maintain_datasets")


def test_maintenance_job_flushes_and_compacts_every_dataset_and_keeps_the_rows(tmp_path):
    cfg = build_lake(tmp_path)
    before = state(cfg)
    assert {k: v[3] for k, v in before.items()} == {("main", "a"): 15, ("main", "b"): 10, ("other", "c"): 20}
    assert {k: v[2] for k, v in before.items()} == {("main", "a"): 3, ("main", "b"): 4, ("other", "c"): 2}

    result = run_maintenance(cfg)
    assert result.success
    after = state(cfg)
    for key, (rows, checksum, files, inlined) in after.items():
        assert (rows, checksum) == before[key][:2], key  # the same rows
        assert inlined == 0, key
        assert files == 1 < before[key][2] + 1, key  # flushed file + Parquet files merged into one
    # One dynamic output per dataset, in (schema, table) order, with the result as metadata.
    out = outputs(result)
    assert list(out) == ["lake__main__a", "lake__main__b", "lake__other__c"]
    assert out["lake__main__b"] == {
        "catalog": "lake",
        "schema_name": "main",
        "table_name": "b",
        "inlined_rows_before": 10,
        "rows_flushed": 10,
        "files_before": 5,  # 4 Parquet files + the one the flush wrote
        "files_after": 1,
        "files_processed": 5,
        "files_created": 1,
        "flush_attempts": 1,
        "attempts": 1,
        "status": "compacted",
    }
    events = result.get_step_success_events()
    assert [e.step_key for e in events] == ["srdp_maintain_datasets"]
    materialized = [
        e for e in result.all_node_events if e.event_type_value == "STEP_OUTPUT" and e.step_output_data.mapping_key
    ]
    meta = {e.step_output_data.mapping_key: e.step_output_data.metadata for e in materialized}
    assert meta["lake__other__c"]["rows_flushed"].value == 20
    assert meta["lake__other__c"]["files_before"].value == 3 and meta["lake__other__c"]["files_after"].value == 1
    logs = messages(result)
    assert any("srdp: lake.main.a: compacted; 15 inlined rows, 15 flushed, files 4 -> 1" in m for m in logs), logs

    # A rerun revisits every dataset harmlessly.
    again = run_maintenance(cfg)
    assert again.success
    assert state(cfg) == after
    assert {k: v["status"] for k, v in outputs(again).items()} == dict.fromkeys(out, "nothing to do")


def test_selection_by_namespace_and_name_touches_only_that_dataset(tmp_path):
    cfg = build_lake(tmp_path)
    before = state(cfg)
    result = run_maintenance(cfg, namespace="main", name="b")
    assert result.success
    assert list(outputs(result)) == ["lake__main__b"]
    after = state(cfg)
    assert after[("main", "b")][:2] == before[("main", "b")][:2]
    assert after[("main", "b")][2:] == (1, 0)
    assert after[("main", "a")] == before[("main", "a")]
    assert after[("other", "c")] == before[("other", "c")]
    # Namespace alone selects the whole schema.
    result = run_maintenance(cfg, namespace="other")
    assert list(outputs(result)) == ["lake__other__c"]
    assert state(cfg)[("main", "a")] == before[("main", "a")]


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
    message = str(failure.error.message) + str(failure.user_failure_data.description if failure.user_failure_data else "")
    assert "srdp maintenance failed at dataset lake.main.m" in message, message
    assert "srdp_flush: dataset 'main.m' failed to flush after 1 attempt(s)" in message, message
    assert "NOT NULL constraint failed" in message, message
    assert "Datasets committed before it: lake.main.a" in message, message
    after = state(cfg)
    assert after[("main", "a")][:2] == before[("main", "a")][:2] and after[("main", "a")][2:] == (1, 0)
    assert after[("main", "z")] == before[("main", "z")]  # never reached
    assert after[("main", "m")] == before[("main", "m")]  # nothing half done


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
    assert len(errors) == 2 and "message bus is down" in errors[0], errors


def test_add_srdp_definitions_composes_with_an_application(tmp_path):
    @dg.asset
    def unrelated() -> int:
        return 1

    app = dg.Definitions(assets=[unrelated])
    assert sd.add_srdp_definitions(app, tmp_path / "srdp.toml", enabled=False) is app
    combined = sd.add_srdp_definitions(app, tmp_path / "srdp.toml")
    assert {j.name for j in combined.resolve_all_job_defs()} >= {sd.MAINTENANCE_JOB, sd.MONITOR_JOB}
    assert combined.resolve_assets_def("unrelated") is not None


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
