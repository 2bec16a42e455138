"""One ``secrets=`` for srdp's Dagster definitions: the maintenance job, the pressure monitor and
the IO manager of ``add_srdp_definitions`` all run the same CREATE SECRET statements (given as
``dg.EnvVar``) before they attach a catalog whose roles need DuckDB secrets.

The catalog is SQLite with ``writer_secret`` / ``reader_secret``: srdp refuses to attach a role
whose secret the session lacks whatever the backend, so the secrets' reach is checked here
without a server (the PostgreSQL + S3 round trip is test_scale_out_platform). The secrets are
temporary: nothing appears in DuckDB's persistent secret folder, and the password is in no log.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa
import pytest

from conftest import write_config
from srdp import dagster as sd
from srdp.dagster.resource import SecretStatementError, SrdpResource

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"
data_inlining_row_limit = 10
pressure_warning_rows = 2
writer_secret = "lake_writer"
reader_secret = "lake_reader"

[catalogs.lake.schemas.analytics]
writer = "io_manager"
layer = "curated"
"""

PASSWORD = "S3ntinel-pw-never-shown"
WRITER_SQL = f"CREATE OR REPLACE SECRET lake_writer (TYPE s3, KEY_ID 'w', SECRET '{PASSWORD}')"
READER_SQL = f"CREATE OR REPLACE SECRET lake_reader (TYPE s3, KEY_ID 'r', SECRET '{PASSWORD}')"
HIDDEN = "the statement and DuckDB's message are not shown because they may hold credentials"


@dg.asset(key_prefix=["analytics"])
def orders() -> pa.Table:
    return pa.table({"id": [1, 2, 3, 4, 5]})


def definitions(cfg: Path, secrets: list[str]) -> dg.Definitions:
    return sd.add_srdp_definitions(dg.Definitions(assets=[orders]), cfg, io_manager=True, secrets=secrets)


def run(defs: dg.Definitions, instance: dg.DagsterInstance, job: str | None = None) -> dg.ExecuteInProcessResult:
    if job is None:
        return dg.materialize(
            [orders], resources=defs.resources, instance=instance, raise_on_error=False  # type: ignore[arg-type]
        )
    return defs.resolve_job_def(job).execute_in_process(instance=instance, raise_on_error=False)


def failure_text(result: dg.ExecuteInProcessResult) -> str:
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    return failure.step_failure_data.error.to_string()


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The two statements in environment variables, and a HOME whose DuckDB secret folder is watched."""
    monkeypatch.setenv("LAKE_WRITER_SECRET_SQL", WRITER_SQL)
    monkeypatch.setenv("LAKE_READER_SECRET_SQL", READER_SQL)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def test_without_secrets_srdps_jobs_cannot_attach(tmp_path: Path) -> None:
    """What the issue saw: the maintenance job needs the writer's secret, the monitor the reader's."""
    cfg = write_config(tmp_path, CONFIG)
    defs = definitions(cfg, [])
    instance = dg.DagsterInstance.ephemeral()
    maintenance = run(defs, instance, sd.MAINTENANCE_JOB)
    assert not maintenance.success
    assert (
        "srdp_attach_catalog: catalog 'lake' needs the DuckDB secret 'lake_writer' for the writer role, "
        "and this session has none by that name. Create it first (CREATE SECRET lake_writer (...)); nothing was "
        "attached. In Dagster, put that CREATE SECRET lake_writer statement in an environment variable and add it "
        "to secrets=[...]: add_srdp_definitions(..., secrets=[dg.EnvVar('LAKE_WRITER_SECRET_SQL')]) (or secrets= "
        "of SrdpIOManager / SrdpResource when built by hand)"
    ) in failure_text(maintenance)
    monitor = run(defs, instance, sd.MONITOR_JOB)
    assert "catalog 'lake' needs the DuckDB secret 'lake_reader' for the reader role" in failure_text(monitor)
    assert "add_srdp_definitions(..., secrets=[dg.EnvVar('LAKE_READER_SECRET_SQL')])" in failure_text(monitor)
    # The IO manager's write says the same, once.
    materialized = run(defs, instance)
    assert not materialized.success
    text = failure_text(materialized)
    assert text.count("In Dagster, put that CREATE SECRET lake_writer statement in an environment variable") == 1
    assert "secrets=[dg.EnvVar('LAKE_WRITER_SECRET_SQL')]" in text


def test_one_secrets_list_serves_the_io_manager_the_maintenance_job_and_the_monitor(
    tmp_path: Path, secret_env: Path
) -> None:
    cfg = write_config(tmp_path, CONFIG)
    defs = definitions(cfg, [dg.EnvVar("LAKE_WRITER_SECRET_SQL"), dg.EnvVar("LAKE_READER_SECRET_SQL")])
    instance = dg.DagsterInstance.ephemeral()
    for _ in range(2):  # two writes: 10 inlined rows, over the monitor's threshold of 2
        written = run(defs, instance)
        assert written.success
    monitor = run(defs, instance, sd.MONITOR_JOB)
    assert monitor.success
    assert monitor.output_for_node("srdp_check_catalog_pressure") == 1
    maintenance = run(defs, instance, sd.MAINTENANCE_JOB)
    assert maintenance.success
    (result,) = maintenance.output_for_node("srdp_maintain_datasets", "summary")["results"]
    assert (result["schema_name"], result["table_name"], result["rows_flushed"]) == ("analytics", "orders", 10)
    assert result["status"].startswith(("compacted", "flushed"))
    # Each resource shows the variables' names, never the statements.
    resource = defs.resources[sd.RESOURCE_KEY]  # type: ignore[index]
    assert isinstance(resource, SrdpResource)
    assert [s.env_var_name for s in resource.secrets] == ["LAKE_WRITER_SECRET_SQL", "LAKE_READER_SECRET_SQL"]
    # Temporary secrets only: nothing in DuckDB's persistent secret folder.
    assert not (secret_env / ".duckdb" / "stored_secrets").exists()
    logs = " ".join(str(e.user_message) for run_ in instance.get_runs() for e in instance.all_logs(run_.run_id))
    assert "lake.analytics.orders: compacted" in logs or "lake.analytics.orders: flushed" in logs
    assert PASSWORD not in logs


def refusal(result: dg.ExecuteInProcessResult) -> tuple[str, Any]:
    """Where the run stopped (``"set-up"``: the resource's set-up, before any step ran; ``"step"``)
    and the srdp error (Dagster's error info) that stopped it."""
    for event in result.all_events:
        if event.event_type_value == "RESOURCE_INIT_FAILURE":
            return "set-up", event.event_specific_data.error
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    return "step", failure.step_failure_data.error.cause


PERSISTENT = (
    "it would store the secret on disk (PERSISTENT, or IN a storage other than memory), in plain text under "
    "~/.duckdb/stored_secrets where every later DuckDB process of this OS user loads it; srdp runs temporary "
    "secrets only: write CREATE SECRET or CREATE TEMPORARY SECRET, without PERSISTENT and IN"
)
NAMED = "SrdpResource secrets[1] (dg.EnvVar('BAD_SECRET_SQL'))"


@pytest.mark.parametrize(
    ("statement", "where", "message"),
    [
        (f"SELECT '{PASSWORD}'", "set-up", f"{NAMED}: it must be exactly one CREATE SECRET statement (found 1 statement(s))"),
        (f"CREATE SECRET s (TYPE s3, SECRET '{PASSWORD}", "set-up", f"{NAMED}: it does not parse (ParserException)"),
        (f"CREATE SECRET s (TYPE s3, BOGUS '{PASSWORD}')", "step", "SrdpResource secrets[1]: DuckDB refused it (BinderException)"),
        # Secrets DuckDB would write in plain text under ~/.duckdb/stored_secrets: refused before they run.
        (f"CREATE PERSISTENT SECRET s (TYPE s3, SECRET '{PASSWORD}')", "set-up", f"{NAMED}: {PERSISTENT}"),
        (f"create or replace persistent secret s (TYPE s3, SECRET '{PASSWORD}')", "set-up", f"{NAMED}: {PERSISTENT}"),
        (f"CREATE SECRET s IN LOCAL_FILE (TYPE s3, SECRET '{PASSWORD}')", "set-up", f"{NAMED}: {PERSISTENT}"),
        (f'CREATE SECRET IF NOT EXISTS s IN "local_file" (TYPE s3, SECRET \'{PASSWORD}\')', "set-up", f"{NAMED}: {PERSISTENT}"),
        (f"CREATE/* a comment */PERSISTENT SECRET (TYPE s3, SECRET '{PASSWORD}')", "set-up", f"{NAMED}: {PERSISTENT}"),
    ],
    ids=["select", "unterminated", "refused by DuckDB", "persistent", "persistent lower case", "in local_file",
         "in quoted local_file", "persistent after a comment"],
)
def test_a_bad_secret_fails_the_maintenance_job_without_showing_it(
    tmp_path: Path, secret_env: Path, statement: str, where: str, message: str
) -> None:
    cfg = write_config(tmp_path, CONFIG)
    os.environ["BAD_SECRET_SQL"] = statement
    try:
        defs = definitions(cfg, [dg.EnvVar("LAKE_WRITER_SECRET_SQL"), dg.EnvVar("BAD_SECRET_SQL")])
        instance = dg.DagsterInstance.ephemeral()
        result = run(defs, instance, sd.MAINTENANCE_JOB)
    finally:
        del os.environ["BAD_SECRET_SQL"]
    assert not result.success
    stopped, error = refusal(result)
    assert error is not None and error.cls_name == "SecretStatementError"
    assert (stopped, error.message.strip()) == (
        where, f"srdp.dagster.resource.SecretStatementError: {message}; {HIDDEN}"
    )
    assert error.cause is None and error.context is None  # DuckDB's message is not chained
    everything = " ".join(str(e.user_message) for e in instance.all_logs(result.run_id)) + " ".join(
        e.event_specific_data.error.to_string()
        for e in result.all_events
        if getattr(e.event_specific_data, "error", None) is not None
    )
    assert PASSWORD not in everything
    assert not (tmp_path / "catalog").exists()  # nothing attached: the lake was never created
    # Nothing persisted: DuckDB's secret folder under this HOME was never created.
    assert not (secret_env / ".duckdb" / "stored_secrets").exists()


def test_secret_statements_are_checked_before_any_attach(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, CONFIG)
    resource = SrdpResource(config_path=str(cfg), secrets=[WRITER_SQL, f"{WRITER_SQL}; SELECT 1"])
    with pytest.raises(SecretStatementError) as refused:
        resource.connect(role="writer")
    assert str(refused.value) == (
        f"SrdpResource secrets[1]: it must be exactly one CREATE SECRET statement (found 2 statement(s)); {HIDDEN}"
    )
    assert refused.value.__cause__ is None and refused.value.__context__ is None
    assert not (tmp_path / "catalog").exists()
