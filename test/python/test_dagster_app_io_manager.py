"""srdp's maintenance job and pressure monitor beside an application's own ``io_manager``, with real
Dagster (in process and through the ``dagster`` CLI) on a real DuckLake over SQLite.

The application's ``io_manager`` is a hand-written one that records every call and, like most
hand-written IO managers, reads ``context.asset_key`` (which raises for an op output): srdp's ops
must never reach it. Per dataset, the maintenance log line says what the whole step did, and its
numbers are checked against counts read from the DuckLake metadata tables (lakecheck) and the
files on disk, never against srdp's own functions.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import textwrap
from pathlib import Path
from typing import Any

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

# (schema, table): (Parquet batches of 20 rows, inlined batches of 5 rows). What the nightly step
# does to each: main.a flushes and merges, main.b only flushes (its flushed file is its only
# file), main.c only merges, other.d has nothing to do.
DATASETS = {("main", "a"): (3, 3), ("main", "b"): (0, 3), ("main", "c"): (2, 0), ("other", "d"): (1, 0)}

# Per dataset: (live files, inlined rows) before the run, as the metadata counts them.
BEFORE = {("main", "a"): (3, 15), ("main", "b"): (0, 15), ("main", "c"): (2, 0), ("other", "d"): (1, 0)}

# The log line of each dataset's step, up to the milliseconds srdp reports (checked against the
# output's duration_ms). "files x -> y": live files before the step and after it (the merge also
# counts the file the flush wrote). "attempts 0": srdp's plan proved every step idle and it called
# nothing (main.b's one file after the flush cannot merge, so only its flush is called; main.c has
# nothing inlined, so only its merge is; other.d has nothing at all).
LINES = {
    "lake__main__a": "srdp: lake.main.a: compacted; 15 inlined rows flushed, files 3 -> 1 (4 merged into 1), attempts 1",
    "lake__main__b": "srdp: lake.main.b: flushed; 15 inlined rows flushed, files 0 -> 1 (none merged), attempts 1",
    "lake__main__c": "srdp: lake.main.c: compacted; 0 inlined rows flushed, files 2 -> 1 (2 merged into 1), attempts 1",
    "lake__other__d": "srdp: lake.other.d: nothing to do; 0 inlined rows flushed, files 1 -> 1 (none merged), attempts 0",
}
STATUS = {
    "lake__main__a": "compacted",
    "lake__main__b": "flushed",
    "lake__main__c": "compacted",
    "lake__other__d": "nothing to do",
}

# The issue's failure: what a hand-written IO manager meets when it is handed an op output.
NO_ASSET_KEY = "Attempting to access asset_key, but it was not provided when constructing the OutputContext"


class RecordingIOManager(dg.ConfigurableIOManager):
    """An application's IO manager: appends each call to ``record_path`` (JSON lines), then stores
    the asset's value as JSON next to it, by asset key (so an op output raises ``NO_ASSET_KEY``)."""

    record_path: str

    def _record(self, call: str, step_key: str, name: str) -> None:
        with open(self.record_path, "a") as f:
            f.write(json.dumps([call, step_key, name]) + "\n")

    def _path(self, key: dg.AssetKey) -> Path:
        return Path(self.record_path).parent / ("__".join(key.path) + ".json")

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        self._record("handle_output", context.step_key, context.name)
        self._path(context.asset_key).write_text(json.dumps(obj))

    def load_input(self, context: dg.InputContext) -> Any:
        self._record("load_input", context.upstream_output.step_key, context.name)
        return json.loads(self._path(context.asset_key).read_text())


@dg.asset
def app_numbers() -> list[int]:
    """The application's own asset, stored by its io_manager."""
    return [1, 2, 3]


def app_definitions(config_path: str, record_path: str, **srdp_options: Any) -> dg.Definitions:
    """The application's Definitions (its asset and its io_manager) with srdp's added."""
    app = dg.Definitions(assets=[app_numbers], resources={"io_manager": RecordingIOManager(record_path=record_path)})
    return sd.add_srdp_definitions(app, config_path, **srdp_options)


def recorded(record_path: Path) -> list[list[str]]:
    """The calls the application's io_manager received."""
    if not record_path.exists():
        return []
    return [json.loads(line) for line in record_path.read_text().splitlines()]


def build_lake(directory: Path) -> Path:
    cfg = write_config(directory, CONFIG)
    con = srdp.connect(config=cfg)
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    con.execute("CREATE SCHEMA lake.other")
    for (schema, table), (big, small) in DATASETS.items():
        con.execute(f"CREATE TABLE lake.{schema}.{table} (id BIGINT, v VARCHAR)")
        n = 0
        for _ in range(big):
            con.execute(f"INSERT INTO lake.{schema}.{table} SELECT {n} + range, 'big' || range FROM range(20)")
            n += 20
        for _ in range(small):
            con.execute(f"INSERT INTO lake.{schema}.{table} SELECT {n} + range, 'small' || range FROM range(5)")
            n += 5
    con.execute("DETACH lake")
    con.close()
    return cfg


def lake_state(cfg: Path) -> dict[tuple[str, str], tuple[int, str, int, int, int]]:
    """Per dataset: (rows, checksum, live files, inlined rows, files retired by a merge), read by a
    fresh reader from the data and the metadata tables. Every registered file is on disk and every
    Parquet file on disk is registered."""
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        lake = Lake(con)
        data = cfg.parent / "data" / "lake"
        assert lake.registered_files() == parquet_files(data)
        retired = [str(Path(f).parent.relative_to(data)) for f in lake.retired_files()]
        files, inlined = lake.file_counts(), lake.inlined_rows()
        out = {}
        for schema, table in lake.datasets():
            rows, checksum = con.execute(
                f"SELECT count(*), sum(hash(id, v))::VARCHAR FROM lake.{schema}.{table}"
            ).fetchone()
            key = (schema, table)
            out[key] = (rows, checksum, files[key], inlined[key], retired.count(f"{schema}/{table}"))
        return out
    finally:
        con.close()


def check_lake_after_maintenance(before: dict, after: dict) -> None:
    """The same rows; one live file and nothing inlined per dataset; the files the log lines say
    were merged are exactly the ones retired (main.a: its 3 files and the one its flush wrote)."""
    assert {k: v[2:4] for k, v in before.items()} == BEFORE
    assert {k: v[4] for k, v in before.items()} == dict.fromkeys(BEFORE, 0)
    assert {k: v[:2] for k, v in after.items()} == {k: v[:2] for k, v in before.items()}
    assert {k: v[2:] for k, v in after.items()} == {
        ("main", "a"): (1, 0, 4),
        ("main", "b"): (1, 0, 0),
        ("main", "c"): (1, 0, 2),
        ("other", "d"): (1, 0, 0),
    }


def maintenance_report(instance: dg.DagsterInstance, run_id: str) -> tuple[list[str], dict[str, dict[str, Any]], dict[str, Any]]:
    """The run's srdp log lines, the results of the datasets that had a step by
    catalog__schema__table (the ``srdp/steps`` metadata of the job's one output, ``summary``), and
    that output's metadata, from the instance's event log."""
    lines, steps, summary = [], {}, {}
    outputs = []
    for entry in instance.all_logs(run_id):
        if entry.user_message.startswith("srdp: "):
            lines.append(entry.user_message)
        event = entry.dagster_event
        if event is not None and event.event_type_value == "STEP_OUTPUT":
            data = event.step_output_data
            outputs.append((data.output_name, data.mapping_key))
            summary = {k: v.value for k, v in data.metadata.items()}
            steps = {f"{r['catalog']}__{r['schema_name']}__{r['table_name']}": r for r in summary["srdp/steps"]}
    assert outputs == [("summary", None)]  # one output per run, never one per dataset
    return lines, steps, summary


def check_maintenance_report(lines: list[str], steps: dict[str, dict[str, Any]], summary: dict[str, Any]) -> None:
    """One exact log line per dataset that had a step, in order, whose milliseconds are its
    duration_ms, then one line for the dataset with nothing to do; the summary lists exactly the
    datasets that had a step, with their whole status, and counts every status."""
    stepped = [key for key in LINES if STATUS[key] != "nothing to do"]
    assert list(steps) == stepped
    assert lines == [f"{LINES[key]}, {steps[key]['duration_ms']} ms" for key in stepped] + [
        "srdp: lake: 1 dataset had nothing to do (1/1): other.d"
    ]
    assert {key: meta["status"] for key, meta in steps.items()} == {key: STATUS[key] for key in stepped}
    assert summary["srdp/by_status"] == {"compacted": 2, "flushed": 1, "nothing to do": 1}
    assert summary["datasets"] == len(LINES) and summary["dry_run"] is False
    counts = ("rows_flushed", "files_before", "files_after", "files_processed", "files_created", "attempts")
    assert {key: tuple(meta[c] for c in counts) for key, meta in steps.items()} == {
        "lake__main__a": (15, 3, 1, 4, 1, 1),
        "lake__main__b": (15, 0, 1, 0, 0, 1),
        "lake__main__c": (0, 2, 1, 2, 1, 1),
    }
    assert all(isinstance(meta["duration_ms"], int) for meta in steps.values())


def test_a_hand_written_io_manager_fails_on_an_op_output_as_the_issue_says(tmp_path):
    # The control: the application's io_manager is as hostile to op outputs as the issue reports,
    # so srdp's jobs succeeding beside it below means their outputs never reached it.
    @dg.op
    def plain() -> int:
        return 1

    @dg.job
    def plain_job() -> None:
        plain()

    record = tmp_path / "record.jsonl"
    job = dg.Definitions(jobs=[plain_job], resources={"io_manager": RecordingIOManager(record_path=str(record))})
    result = job.resolve_job_def("plain_job").execute_in_process(raise_on_error=False)
    assert not result.success
    error = result.get_step_failure_events()[0].step_failure_data.error
    assert (error.cls_name, error.message) == (
        "DagsterInvariantViolationError",
        f"dagster._core.errors.DagsterInvariantViolationError: {NO_ASSET_KEY}\n",
    )
    assert recorded(record) == [["handle_output", "plain", "result"]]


def test_maintenance_and_monitor_in_process_never_reach_the_application_io_manager(tmp_path):
    cfg = build_lake(tmp_path / "lake")
    record = tmp_path / "app" / "record.jsonl"
    record.parent.mkdir()
    collector: list[sd.PressureEvent] = []

    class Collector:
        def publish(self, event: sd.PressureEvent) -> None:
            collector.append(event)

    defs = app_definitions(str(cfg), str(record), publisher=Collector())
    instance = dg.DagsterInstance.ephemeral()

    # The application's io_manager works: the asset goes through it (and nothing else so far).
    assert defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=instance).success
    assert recorded(record) == [["handle_output", "app_numbers", "result"]]
    assert json.loads((record.parent / "app_numbers.json").read_text()) == [1, 2, 3]

    # The monitor: main.a and main.b are over 12 inlined rows.
    monitor = defs.resolve_job_def(sd.MONITOR_JOB).execute_in_process(instance=instance)
    assert monitor.success
    assert monitor.output_for_node("srdp_check_catalog_pressure") == 2
    assert [(e.schema_name, e.table_name, e.inlined_rows, e.threshold) for e in collector] == [
        ("main", "a", 15, 12),
        ("main", "b", 15, 12),
    ]
    warnings = [e.user_message for e in instance.all_logs(monitor.run_id) if e.level == logging.WARNING]
    assert warnings == [
        f"DatasetCatalogPressure: lake.main.{t} has 15 inlined rows (threshold 12); run srdp_flush or the "
        "srdp_dataset_maintenance job"
        for t in ("a", "b")
    ]

    # The maintenance job, every dataset, once.
    before = lake_state(cfg)
    maintenance = defs.resolve_job_def(sd.MAINTENANCE_JOB).execute_in_process(instance=instance)
    assert maintenance.success
    check_lake_after_maintenance(before, lake_state(cfg))
    check_maintenance_report(*maintenance_report(instance, maintenance.run_id))
    # The outputs are still there for a caller in process (the demo prints them).
    results = maintenance.output_for_node("srdp_maintain_datasets", "summary")["results"]
    assert {f"lake__{r['schema_name']}__{r['table_name']}": r["status"] for r in results} == STATUS

    # Nothing of srdp's ever reached the application's io_manager.
    assert recorded(record) == [["handle_output", "app_numbers", "result"]]

    # A rerun has nothing to do anywhere, and says so.
    again = defs.resolve_job_def(sd.MAINTENANCE_JOB).execute_in_process(instance=instance)
    assert again.success
    lines, steps, summary = maintenance_report(instance, again.run_id)
    assert steps == {}
    assert summary["srdp/by_status"] == {"nothing to do": len(LINES)}
    assert lines == ["srdp: lake: 4 datasets had nothing to do (1/1): main.a, main.b, main.c, other.d"]
    assert recorded(record) == [["handle_output", "app_numbers", "result"]]


def test_a_dry_run_reports_the_plan_once_and_changes_nothing(tmp_path):
    cfg = build_lake(tmp_path / "lake")
    record = tmp_path / "record.jsonl"
    instance = dg.DagsterInstance.ephemeral()
    before = lake_state(cfg)
    result = app_definitions(str(cfg), str(record)).resolve_job_def(sd.MAINTENANCE_JOB).execute_in_process(
        run_config={"ops": {"srdp_maintain_datasets": {"config": {"namespace": "main", "dry_run": True}}}},
        instance=instance,
    )
    assert result.success
    assert lake_state(cfg) == before
    lines, steps, summary = maintenance_report(instance, result.run_id)
    # The planned rows are the inlined rows, from srdp_compact's one plan.
    assert lines == [
        f"srdp: lake.main.{t}: planned (dry run, nothing changed); {inlined} inlined rows to flush, 0 files with deletes to rewrite, "
        f"files {files}, {steps[f'lake__main__{t}']['duration_ms']} ms"
        for t, (files, inlined) in ((t, BEFORE[("main", t)]) for t in ("a", "b", "c"))
    ]
    assert [meta["rows_flushed"] for meta in steps.values()] == [15, 15, 0]
    assert summary["dry_run"] is True and summary["srdp/rows_flushed"] == 0
    assert recorded(record) == []
    # A dry run changed nothing, so it records no table's health: no observation at all (the
    # hourly monitor records the health; a dry run's would show a step that never ran).
    assert [e.asset_key for e in result.all_events if e.event_type_value == "ASSET_OBSERVATION"] == []
    assert instance.fetch_observations(dg.AssetKey(["lake", "main", "a"]), limit=10).records == []


def test_the_maintenance_job_through_the_dagster_cli_beside_the_application_io_manager(tmp_path):
    cfg = build_lake(tmp_path / "lake")
    home, app = tmp_path / "dagster_home", tmp_path / "app"
    home.mkdir()
    app.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    record = app / "record.jsonl"
    (app / "srdp_app_definitions.py").write_text(
        textwrap.dedent(
            """
            import os

            from test_dagster_app_io_manager import app_definitions

            defs = app_definitions(os.environ["SRDP_CONFIG"], os.environ["APP_RECORD"])
            """
        )
    )
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "SRDP_CONFIG": str(cfg),
        "APP_RECORD": str(record),
        "PYTHONPATH": os.pathsep.join([str(app), str(REPO / "test" / "python"), os.environ.get("PYTHONPATH", "")]),
    }
    before = lake_state(cfg)
    done = subprocess.run(
        [str(REPO / ".venv" / "bin" / "dagster"), "job", "execute", "-m", "srdp_app_definitions"]
        + ["-j", sd.MAINTENANCE_JOB],
        cwd=app,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    check_lake_after_maintenance(before, lake_state(cfg))
    assert recorded(record) == []

    with dg.DagsterInstance.from_config(str(home)) as instance:
        (run,) = instance.get_runs()
        assert (run.job_name, run.status) == (sd.MAINTENANCE_JOB, dg.DagsterRunStatus.SUCCESS)
        check_maintenance_report(*maintenance_report(instance, run.run_id))


def test_an_srdp_op_output_is_not_stored_and_loading_it_is_refused(tmp_path):
    cfg = build_lake(tmp_path / "lake")

    @dg.op
    def consume(events: int) -> None:
        raise AssertionError(f"never reached: {events}")

    @dg.job
    def chained() -> None:
        consume(sd.check_catalog_pressure())

    defs = dg.Definitions.merge(sd.srdp_definitions(cfg), dg.Definitions(jobs=[chained]))
    result = defs.resolve_job_def("chained").execute_in_process(raise_on_error=False)
    assert not result.success
    (failure,) = result.get_step_failure_events()
    assert failure.step_key == "consume"
    assert failure.step_failure_data.error.cause.message == (
        "RuntimeError: srdp stores no op outputs: srdp_check_catalog_pressure.result cannot be loaded as input "
        "'events' of 'consume'; read its numbers from the output's metadata in the run instead\n"
    )


STOPPED, RUNNING = dg.DefaultScheduleStatus.STOPPED, dg.DefaultScheduleStatus.RUNNING


@pytest.mark.parametrize(("options", "status"), [({}, RUNNING), ({"default_status": STOPPED}, STOPPED)])
def test_both_schedules_take_the_default_status(tmp_path, options: dict[str, Any], status: dg.DefaultScheduleStatus):
    cfg = tmp_path / "srdp.toml"
    app = app_definitions(str(cfg), str(tmp_path / "record.jsonl"), **options)
    for defs in (app, sd.srdp_definitions(cfg, **options)):
        schedules = {name: defs.resolve_schedule_def(name) for name in (sd.MAINTENANCE_SCHEDULE, sd.MONITOR_SCHEDULE)}
        assert {name: s.default_status for name, s in schedules.items()} == dict.fromkeys(schedules, status)
        assert [schedules[sd.MAINTENANCE_SCHEDULE].cron_schedule, schedules[sd.MONITOR_SCHEDULE].cron_schedule] == [
            "0 2 * * *",
            "0 * * * *",
        ]
    # The module-level schedules stay running.
    assert (sd.nightly_schedule.default_status, sd.hourly_schedule.default_status) == (RUNNING, RUNNING)
