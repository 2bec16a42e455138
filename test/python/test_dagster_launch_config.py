"""A run's config cannot point srdp's Dagster resources at another definition or other secrets.

The code location builds ``SrdpIOManager(config="<dir>/srdp.toml")``, where ``raw`` is dlt's
schema, so the IO manager may not write it. ``evil.toml`` beside it is the same catalog with
``single_writer = false``. Launching ``raw/x`` with a run config that names ``evil.toml`` (as
``config`` or the deprecated ``config_path``) used to succeed and add a row to ``lake.raw.x``.
Now the IO manager, ``SrdpResource`` (maintenance job, monitor) and the landing promotion refuse a
run config that differs from the code location, at resource set-up, before anything attaches:
through ``execute_in_process(run_config=...)`` and through the ``dagster`` CLI's ``--config``. A
run config that repeats the code location's values (the path spelled another way included) runs.
"""

# No `from __future__ import annotations`: Dagster reads the assets' annotations as objects.

import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

from landing_support import LANDING_TOML, order, orders_resource, raw_rows  # sets dlt's telemetry off first

import dagster as dg  # noqa: E402
import dlt  # noqa: E402
import pyarrow as pa  # noqa: E402
import pytest  # noqa: E402
from dagster_dlt import DagsterDltResource  # noqa: E402

import srdp  # noqa: E402
import srdp.ingest.dlt as srdp_dlt  # noqa: E402
from conftest import REPO, write_config  # noqa: E402
from iomanager_support import _close_io_sessions_after_test  # noqa: E402,F401
from srdp import dagster as sd  # noqa: E402
from srdp.dagster import SrdpIOManager, srdp_dlt_assets, srdp_landing_assets  # noqa: E402

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"

[catalogs.lake.schemas.raw]
writer = "dlt"
layer = "raw"

[catalogs.lake.schemas.analytics]
writer = "io_manager"
layer = "curated"
"""

#: The same catalog, with the rule that keeps the IO manager out of dlt's schema relaxed.
EVIL = CONFIG + "\n[rules]\nsingle_writer = false\n"

WHY = (
    "srdp's resources take their definition file, secrets and settings from the code location only "
    "(so that a run cannot point them at another srdp.toml or other credentials), and nothing was attached."
)
SECRET_SQL = "CREATE OR REPLACE SECRET lake_writer (TYPE s3, KEY_ID 'w', SECRET 'launch-secret-never-shown')"


def remedy(key: str) -> str:
    return (
        f"Leave resources.{key} out of the run config (or repeat every value the code location gave), and change "
        "the value in the code location instead (dg.EnvVar(\"...\") reads it from the environment of the code "
        "location's process)"
    )


@dg.asset(key=["raw", "x"])
def raw_x() -> pa.Table:
    return pa.table({"id": [1]})


@dg.asset(key=["analytics", "y"])
def analytics_y() -> pa.Table:
    return pa.table({"id": [1, 2]})


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    """srdp.toml and evil.toml side by side, and the (empty) lake created through srdp's writer."""
    cfg = write_config(tmp_path, CONFIG)
    write_config(tmp_path, EVIL, name="evil.toml")
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
        con.execute("DETACH lake")
    finally:
        con.close()
    return cfg


def snapshots(cfg: Path) -> list[tuple[Any, ...]]:
    """The lake's snapshots and whether ``lake.raw.x`` exists, read on a connection of our own."""
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        found = con.execute("SELECT snapshot_id, changes FROM ducklake_snapshots('lake') ORDER BY 1").fetchall()
        tables = con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'lake' ORDER BY ALL"
        ).fetchall()
        con.execute("DETACH lake")
        return [*found, *tables]
    finally:
        con.close()


def failure_text(result: dg.ExecuteInProcessResult) -> str:
    """Every failure's error with its causes, as the run shows it."""
    texts = [
        e.event_specific_data.error.to_string()
        for e in result.all_events
        if e.is_failure and getattr(e.event_specific_data, "error", None) is not None
    ]
    assert texts, "the run did not fail"
    return "\n".join(texts)


def definitions(cfg: Path) -> dg.Definitions:
    return dg.Definitions(assets=[raw_x, analytics_y], resources={"io_manager": SrdpIOManager(config=str(cfg))})


def materialize(defs: dg.Definitions, key: list[str], run_config: dict | None = None) -> dg.ExecuteInProcessResult:
    job = defs.resolve_implicit_global_asset_job_def()
    return job.execute_in_process(
        run_config=run_config or {}, asset_selection=[dg.AssetKey(key)], raise_on_error=False
    )


@pytest.mark.parametrize("field", ["config", "config_path"])
def test_a_run_config_cannot_point_the_io_manager_at_another_definition(
    lake: Path, field: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    evil = str(lake.parent / "evil.toml")
    before = snapshots(lake)
    defs = definitions(lake)
    # The code location's definition keeps the IO manager out of dlt's schema.
    control = materialize(defs, ["raw", "x"])
    assert (
        "srdp_check_writer: writer 'io_manager' may not write schema 'raw' of catalog 'lake': it is owned by "
        "'dlt' (single_writer)"
    ) in failure_text(control)
    # The attack: the run's config names evil.toml.
    result = materialize(defs, ["raw", "x"], {"resources": {"io_manager": {"config": {field: evil}}}})
    assert not result.success
    assert (
        f"srdp.dagster.launch_config.LaunchConfigError: SrdpIOManager: the run's config names the srdp.toml "
        f"{evil!r}, but the code location gave {str(lake)!r}; {WHY} {remedy('io_manager')}"
    ) in failure_text(result)
    assert snapshots(lake) == before  # no table raw.x, no snapshot: nothing was attached or written
    # A run config that repeats the code location runs: the same file spelled relative to the
    # working directory, under either key, with a default repeated.
    monkeypatch.chdir(lake.parent)
    for config in ({field: "srdp.toml"}, {field: "./srdp.toml", "catalog": "lake"}, {field: str(lake)}):
        assert materialize(defs, ["analytics", "y"], {"resources": {"io_manager": {"config": config}}}).success, config
    con = srdp.connect(config=lake)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        assert con.execute("SELECT count(*), sum(id) FROM lake.analytics.y").fetchone() == (2, 3)
        assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'raw'").fetchone() == (0,)
        con.execute("DETACH lake")
    finally:
        con.close()


def test_a_run_config_cannot_change_the_io_managers_writer_or_secrets(lake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKE_WRITER_SECRET_SQL", SECRET_SQL)
    defs = dg.Definitions(
        assets=[raw_x],
        resources={"io_manager": SrdpIOManager(config=str(lake), secrets=[dg.EnvVar("LAKE_WRITER_SECRET_SQL")])},
    )
    before = snapshots(lake)
    same = {"config": str(lake), "secrets": [{"env": "LAKE_WRITER_SECRET_SQL"}]}
    writer = materialize(defs, ["raw", "x"], {"resources": {"io_manager": {"config": {**same, "writer": "dlt"}}}})
    assert (
        f"SrdpIOManager: the run's config gives writer another value than the code location; {WHY} "
        f"{remedy('io_manager')}"
    ) in failure_text(writer)
    other = "CREATE OR REPLACE SECRET lake_writer (TYPE s3, KEY_ID 'x', SECRET 'other-secret-never-shown')"
    secrets = materialize(defs, ["raw", "x"], {"resources": {"io_manager": {"config": {**same, "secrets": [other]}}}})
    text = failure_text(secrets)
    assert (
        "SrdpIOManager: the run's config gives secrets another value than the code location (secrets[0], "
        f"dg.EnvVar('LAKE_WRITER_SECRET_SQL') in the code location); {WHY} {remedy('io_manager')}"
    ) in text
    assert "never-shown" not in text
    # A run config for the resource that leaves the secrets out: Dagster leaves the code location's
    # dg.EnvVar unread (the variable's name as the statement), so the run's secrets differ: refused.
    dropped = materialize(defs, ["raw", "x"], {"resources": {"io_manager": {"config": {"config": str(lake)}}}})
    assert (
        "SrdpIOManager: the run's config gives secrets another value than the code location (secrets[0], "
        "dg.EnvVar('LAKE_WRITER_SECRET_SQL') in the code location)"
    ) in failure_text(dropped)
    assert snapshots(lake) == before


def test_configure_at_launch_is_refused(lake: Path) -> None:
    defs = dg.Definitions(assets=[analytics_y], resources={"io_manager": SrdpIOManager.configure_at_launch()})
    result = materialize(defs, ["analytics", "y"], {"resources": {"io_manager": {"config": {"config": str(lake)}}}})
    assert (
        f"SrdpIOManager: the run's config names the srdp.toml {str(lake)!r}, but the code location gave none; "
        f"{WHY}"
    ) in failure_text(result)


@pytest.mark.parametrize("job", [sd.MAINTENANCE_JOB, sd.MONITOR_JOB])
def test_a_run_config_cannot_point_srdp_resource_at_another_definition(lake: Path, job: str) -> None:
    cfg, tmp_path = lake, lake.parent
    # Another lake: a metadata file the code location never names.
    evil = write_config(tmp_path, CONFIG.replace("catalog/lake.sqlite", "elsewhere/lake.sqlite"), name="evil.toml")
    defs = sd.add_srdp_definitions(dg.Definitions(), cfg)
    run = defs.resolve_job_def(job).execute_in_process(
        run_config={"resources": {sd.RESOURCE_KEY: {"config": {"config": str(evil)}}}}, raise_on_error=False
    )
    assert not run.success
    assert (
        f"SrdpResource: the run's config names the srdp.toml {str(evil)!r}, but the code location gave "
        f"{str(cfg)!r}; {WHY} {remedy(sd.RESOURCE_KEY)}"
    ) in failure_text(run)
    assert not (tmp_path / "elsewhere").exists()  # never attached
    # Without the run config the job attaches the code location's lake.
    assert defs.resolve_job_def(job).execute_in_process().success


def test_a_run_config_cannot_change_srdp_resources_secrets_or_settings(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, CONFIG)
    defs = sd.add_srdp_definitions(dg.Definitions(), cfg)
    for field, value in (("secrets", [SECRET_SQL]), ("connection_config", {"secret_directory": str(tmp_path)})):
        run = defs.resolve_job_def(sd.MAINTENANCE_JOB).execute_in_process(
            run_config={"resources": {sd.RESOURCE_KEY: {"config": {"config": str(cfg), field: value}}}},
            raise_on_error=False,
        )
        text = failure_text(run)
        detail = " (1 statement(s) for the run, 0 in the code location)" if field == "secrets" else ""
        assert f"SrdpResource: the run's config gives {field} another value than the code location{detail}; " in text
        assert "never-shown" not in text


CLI_DEFINITIONS = """
import os
import dagster as dg
import pyarrow as pa
from srdp.dagster import SrdpIOManager

@dg.asset(key=["raw", "x"])
def raw_x() -> pa.Table:
    return pa.table({"id": [1]})

defs = dg.Definitions(assets=[raw_x], resources={"io_manager": SrdpIOManager(config=os.environ["SRDP_APP_CONFIG"])})
"""


def test_the_dagster_clis_config_cannot_point_the_io_manager_at_another_definition(lake: Path, tmp_path: Path) -> None:
    home, app = tmp_path / "dagster_home", tmp_path / "app"
    home.mkdir()
    app.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    (app / "defs.py").write_text(textwrap.dedent(CLI_DEFINITIONS))
    evil = lake.parent / "evil.toml"
    (app / "evil.yaml").write_text(f"resources:\n  io_manager:\n    config:\n      config: {str(evil)!r}\n")
    before = snapshots(lake)
    done = subprocess.run(
        [str(REPO / ".venv" / "bin" / "dagster"), "asset", "materialize", "-f", "defs.py", "--select", "raw/x",
         "--config", "evil.yaml"],
        cwd=app,
        env={**os.environ, "DAGSTER_HOME": str(home), "SRDP_APP_CONFIG": str(lake)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    assert (
        f"SrdpIOManager: the run's config names the srdp.toml {str(evil)!r}, but the code location gave "
        f"{str(lake)!r}; {WHY}"
    ) in done.stdout + done.stderr
    assert snapshots(lake) == before


def test_a_run_config_cannot_point_the_landing_promotion_at_another_definition(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, LANDING_TOML.format(landing="landing", extra=""))
    # The same landing zone promoted into another lake, with the rules relaxed.
    evil = write_config(
        tmp_path,
        LANDING_TOML.format(landing="landing", extra="").replace("catalog/lake.sqlite", "elsewhere/lake.sqlite")
        + "\n[rules]\nsingle_writer = false\n",
        name="evil.toml",
    )
    landing = srdp_dlt.destination("lake", config=cfg, layer="landing")
    rows = [order(i) for i in range(1, 4)]
    landed = srdp_dlt_assets(
        dlt_source=dlt.source(lambda: orders_resource(rows), name="shop")(),
        destination=landing,
        dlt_pipeline=landing.pipeline("shop", pipelines_dir=str(tmp_path / "p")),
    )
    promoted = srdp_landing_assets(landing, ["orders"], keys={"orders": ["id"]})
    resources = {"io_manager": SrdpIOManager(config=str(cfg)), "dlt": DagsterDltResource()}
    assert dg.materialize([landed], resources=resources).success
    attack = dg.materialize(
        promoted,
        resources=resources,
        run_config={"resources": {"io_manager": {"config": {"config": str(evil)}}}},
        raise_on_error=False,
    )
    assert not attack.success
    assert (
        f"SrdpIOManager: the run's config names the srdp.toml {str(evil)!r}, but the code location gave "
        f"{str(cfg)!r}; {WHY} {remedy('io_manager')}"
    ) in failure_text(attack)
    assert not (tmp_path / "elsewhere").exists()  # the other lake was never attached
    # Without the run config the load is promoted into the code location's lake, once.
    assert dg.materialize(promoted, resources=resources).success
    assert raw_rows(cfg) == [(i, i * 10) for i in range(1, 4)]
