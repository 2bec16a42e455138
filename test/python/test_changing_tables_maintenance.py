"""Tables that change every day stay as healthy as append-only ones, end to end.

Two platforms, each run for several days with srdp's nightly Dagster job between the days (the
real ``srdp_dataset_maintenance`` job of ``add_srdp_definitions``, executed in process):

* dbt (real dbt-duckdb through srdp's dbt package and the profile ``python -m srdp dbt-profile``
  writes): an incremental model with ``merge``, one with ``delete+insert`` and a snapshot, over a
  source where 2 % of 3,000 keys change each day (small deletes: inline deletion markers);
* the IO manager: a daily-partitioned asset backfilled in one run (one file for 30 days), then
  five of its days replaced on each of the following days.

Every night, the job leaves no file with deletes (every file of these tables is under the target
size, so any file with a delete is rewritten), the observation it records for each table says so
(``srdp/files_with_deletes`` 0 after the night, where the monitor's read before it said more), and
every table's rows and checksum are the same before and after the night.
"""

# No `from __future__ import annotations`: Dagster reads the asset's context annotation as an object.

import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest

import srdp
import srdp.dagster as sd
from conftest import PY, REPO, write_config
from dbt_session import Step, run_session
from lakecheck import Lake

SRDP_TOML = """
[catalogs.lake]
metadata = "sqlite:lake/catalog.sqlite"
data_path = "lake/data/"

[catalogs.lake.schemas.curated]
writer = "dbt"
layer = "curated"

[catalogs.lake.schemas.analytics]
writer = "io_manager"
layer = "marts"
"""

DBT_PROJECT = """
name: changing
version: "1.0.0"
config-version: 2
profile: changing
flags:
  send_anonymous_usage_stats: false
dispatch:
  - macro_namespace: dbt
    search_order: [srdp, dbt]
"""

# Day d: key k carries the day that last changed it; the keys with hash % 50 = d change on day d
# (2 % of the keys a day).
SOURCE = """
select range::BIGINT as id,
       md5(range::VARCHAR || '-' || (case when hash(range) % 50 between 1 and {{ var('day') }}
                                          then hash(range) % 50 else 0 end)::VARCHAR) as v,
       range % 7 as grp
from range(3000)
"""

MODELS = {
    "orders_merge": "{{ config(materialized='incremental', incremental_strategy='merge', unique_key='id') }}\n"
    + SOURCE
    + "{% if is_incremental() %} where hash(range) % 50 = {{ var('day') }} {% endif %}",
    "orders_di": "{{ config(materialized='incremental', incremental_strategy='delete+insert', unique_key='id') }}\n"
    + SOURCE
    + "{% if is_incremental() %} where hash(range) % 50 = {{ var('day') }} {% endif %}",
}

SNAPSHOT = """
{% snapshot orders_snap %}
{{ config(unique_key='id', strategy='check', check_cols=['v'], target_schema='curated') }}
""" + SOURCE + """
{% endsnapshot %}
"""

DAYS = 4
TABLES = [("curated", "orders_merge"), ("curated", "orders_di"), ("curated", "orders_snap")]


def checksums(cfg: Path, tables: list[tuple[str, str]]) -> dict[tuple[str, str], tuple]:
    """Rows, a checksum over every column and the row ids of each table, read with plain SQL."""
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        return {
            (s, t): con.execute(
                f"SELECT count(*), sum(hash(columns(*)))::VARCHAR, sum(hash(rowid))::VARCHAR FROM lake.{s}.{t}"
            ).fetchone()
            for s, t in tables
        }
    finally:
        con.close()


def backlog(cfg: Path) -> dict[tuple[str, str], tuple[int, int, int]]:
    """Per table: files with deletes, deleted rows, rows of the live files (from the metadata)."""
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        return Lake(con).delete_backlog()
    finally:
        con.close()


def nightly(defs: dg.Definitions, instance: dg.DagsterInstance) -> dict[dg.AssetKey, dict[str, Any]]:
    """Runs the nightly maintenance job; the metadata of the observation each table got."""
    result = defs.resolve_job_def(sd.MAINTENANCE_JOB).execute_in_process(instance=instance)
    assert result.success
    observed: dict[dg.AssetKey, dict[str, Any]] = {}
    for event in result.all_events:
        if event.event_type_value == "ASSET_OBSERVATION":
            obs = event.event_specific_data.asset_observation
            observed[obs.asset_key] = {k: getattr(v, "value", v) for k, v in obs.metadata.items()}
    return observed


def night_keeps_rows_and_clears_the_backlog(
    cfg: Path, defs: dg.Definitions, instance: dg.DagsterInstance, tables: list[tuple[str, str]]
) -> int:
    """One night: the rows and checksums before equal those after, no table keeps a file with
    deletes, and each table the night rewrote says so in its observation. Returns how many files
    with deletes the tables had before the night."""
    before, pending = checksums(cfg, tables), backlog(cfg)
    observed = nightly(defs, instance)
    after = backlog(cfg)
    assert checksums(cfg, tables) == before
    for table in tables:
        assert after[table][:2] == (0, 0), (table, pending[table], after[table])
        if pending[table][0]:
            meta = observed[dg.AssetKey(["lake", *table])]
            assert (meta["srdp/files_with_deletes"], meta["srdp/deleted_rows"], meta["srdp/deleted_share"]) == (0, 0, 0.0)
            assert meta["srdp/files_rewritten"] >= 1
    return sum(pending[t][0] for t in tables)


@pytest.fixture
def platform(tmp_path: Path) -> tuple[Path, dg.Definitions, dg.DagsterInstance]:
    cfg = write_config(tmp_path, SRDP_TOML)
    con = srdp.connect(config=cfg)
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    con.close()
    return cfg, dg.Definitions(), dg.DagsterInstance.ephemeral()


def test_dbt_merges_deletes_and_snapshots_stay_healthy_night_after_night(tmp_path: Path, platform) -> None:
    cfg, _, instance = platform
    project = tmp_path / "project"
    for relative, text in {
        "dbt_project.yml": DBT_PROJECT,
        "packages.yml": f"packages:\n  - local: {REPO / 'dbt'}\n",
        "snapshots/orders_snap.sql": SNAPSHOT,
        **{f"models/{name}.sql": sql for name, sql in MODELS.items()},
    }.items():
        path = project / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    profile = subprocess.run(
        [PY, "-m", "srdp", "dbt-profile", "--config", str(cfg), "--profile", "changing", "--schema", "curated"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert profile.returncode == 0, profile.stderr
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "profiles.yml").write_text(profile.stdout)
    (tmp_path / "home").mkdir()
    env = {
        "HOME": str(tmp_path / "home"),
        "DBT_PROFILES_DIR": str(tmp_path / "profiles"),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "DO_NOT_TRACK": "1",
        "SRDP_CONFIG": "",
    }
    defs = sd.add_srdp_definitions(dg.Definitions(), str(cfg))
    catalog = tmp_path / "lake" / "catalog.sqlite"
    pending = []
    for day in range(1, DAYS + 1):
        var = ["--vars", json.dumps({"day": day})]
        steps = ([Step("deps", ["deps"])] if day == 1 else []) + [
            Step("run", ["run", *var]), Step("snapshot", ["snapshot", *var])]
        results = run_session(project, env, steps, catalog)
        assert all(r.success for r in results.values()), {k: r.text[-2000:] for k, r in results.items()}
        pending.append(night_keeps_rows_and_clears_the_backlog(cfg, defs, instance, TABLES))
    # From the second day on the merges, deletes and snapshot updates left files with deletes,
    # which each night cleared.
    assert pending[0] == 0 and all(n >= 2 for n in pending[1:]), pending
    # The tables hold what the last day says (the nights changed no row).
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        assert con.execute("SELECT count(*), count(DISTINCT id) FROM lake.curated.orders_merge").fetchone() == (3000, 3000)
        assert con.execute(
            "SELECT count(*) FROM lake.curated.orders_snap WHERE dbt_valid_to IS NULL").fetchone() == (3000,)
    finally:
        con.close()


PARTITIONS = dg.DailyPartitionsDefinition(start_date="2026-11-01", end_date="2026-12-01")


def day_rows(day: str, version: int) -> pd.DataFrame:
    return pd.DataFrame({
        "day": pd.to_datetime([day] * 200),
        "n": range(200),
        "v": [f"{day}-{i}-v{version}" for i in range(200)],
    })


def test_io_manager_partition_replaces_stay_healthy_night_after_night(platform) -> None:
    cfg, _, instance = platform
    version = {"v": 0}

    @dg.asset(key=["lake", "analytics", "daily"], partitions_def=PARTITIONS, metadata={"partition_expr": "day"},
              backfill_policy=dg.BackfillPolicy.single_run())
    def daily(context: dg.AssetExecutionContext) -> pd.DataFrame:
        window = context.partition_time_window
        days = pd.date_range(window.start, window.end, freq="D", inclusive="left").strftime("%Y-%m-%d")
        return pd.concat([day_rows(d, version["v"]) for d in days], ignore_index=True)

    defs = sd.add_srdp_definitions(dg.Definitions(assets=[daily]), str(cfg), io_manager=True)
    keys = PARTITIONS.get_partition_keys()
    # The backfill: all 30 days in one run, one file.
    backfill = dg.materialize([daily], resources=defs.resources, instance=instance, tags={
        "dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]})
    assert backfill.success
    table = [("analytics", "daily")]
    assert backlog(cfg)[table[0]] == (0, 0, 6000)
    pending = []
    for night in range(1, 4):
        version["v"] = night
        for day in keys[night * 5: night * 5 + 5]:  # five days replaced
            assert dg.materialize([daily], resources=defs.resources, instance=instance, partition_key=day).success
        pending.append(night_keeps_rows_and_clears_the_backlog(cfg, defs, instance, table))
    assert all(n >= 1 for n in pending), pending
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        assert con.execute(
            "SELECT count(*), count(DISTINCT day), count(*) FILTER (WHERE v LIKE '%-v0') FROM lake.analytics.daily"
        ).fetchone() == (6000, 30, 6000 - 15 * 200)
    finally:
        con.close()
