"""srdp_write_audit after writes by each writer on one SQLite lake: dbt (the dbt CLI, the package's
``srdp_commit_message`` pre-hook), the IO manager (``dg.materialize``), srdp's maintenance
(``srdp_compact``) and one deliberate foreign write (plain SQL, no commit author).

Each writer's snapshots are told apart by the catalog's last snapshot id after it; the expected
authors and messages come from DuckLake's own metadata tables (``ducklake_snapshot_changes``,
read with sqlite3, no DuckDB, no srdp) and from what each writer was asked to do.
"""

# No `from __future__ import annotations`: Dagster reads the asset's annotations as objects.

import sqlite3
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa

import srdp
from conftest import PY, REPO, write_config
from dbt_session import Step, run_session
from iomanager_support import _close_io_sessions_after_test, io_manager, release  # noqa: F401

SRDP_TOML = """
[catalogs.lake]
metadata = "sqlite:lake/catalog.sqlite"
data_path = "lake/data/"
data_inlining_row_limit = 10

[catalogs.lake.schemas.curated]
writer = "dbt"
layer = "curated"

[catalogs.lake.schemas.analytics]
writer = "io_manager"
layer = "curated"

[catalogs.lake.schemas.raw]
writer = "dlt"
layer = "raw"
"""

DBT_PROJECT = """
name: aud
version: "1.0.0"
config-version: 2
profile: aud
flags:
  send_anonymous_usage_stats: false
dispatch:
  - macro_namespace: dbt
    search_order: [aud, srdp, dbt]
models:
  aud:
    +database: lake
    +pre-hook: "{{ srdp.srdp_commit_message() }}"
"""

# 20 rows a run, appended: two Parquet files after two runs (over the inlining limit).
MODEL = """
{{ config(materialized='incremental', incremental_strategy='append') }}
select range::BIGINT as id from range(20)
"""

Row = tuple[Any, ...]


def changes(catalog: Path, after: int) -> list[Row]:
    """(snapshot, author, message, changes_made) of every snapshot after ``after``, by sqlite3."""
    con = sqlite3.connect(f"file:{catalog}?mode=ro", uri=True)
    try:
        return con.execute(
            "SELECT snapshot_id, author, commit_message, changes_made FROM ducklake_snapshot_changes "
            "WHERE snapshot_id > ? ORDER BY snapshot_id", [after]
        ).fetchall()
    finally:
        con.close()


def last_snapshot(catalog: Path) -> int:
    return max(row[0] for row in changes(catalog, -1))


def run_dbt(root: Path, cfg: Path) -> list[Any]:
    project = root / "project"
    for relative, text in {
        "dbt_project.yml": DBT_PROJECT,
        "packages.yml": f"packages:\n  - local: {REPO / 'dbt'}\n",
        "models/orders_clean.sql": MODEL,
    }.items():
        path = project / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    profile = subprocess.run(
        [PY, "-m", "srdp", "dbt-profile", "--config", str(cfg), "--profile", "aud", "--schema", "curated"],
        cwd=root, capture_output=True, text=True, timeout=120,
    )
    assert profile.returncode == 0, profile.stderr
    (root / "profiles").mkdir()
    (root / "profiles" / "profiles.yml").write_text(profile.stdout)
    (root / "home").mkdir()
    env = {
        "HOME": str(root / "home"),
        "DBT_PROFILES_DIR": str(root / "profiles"),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "DO_NOT_TRACK": "1",
        "SRDP_CONFIG": "",
    }
    steps = [Step("deps", ["deps"]), Step("run 1", ["run"]), Step("run 2", ["run"])]
    results = run_session(project, env, steps, root / "lake" / "catalog.sqlite")
    for label in ("deps", "run 1", "run 2"):
        assert results[label].success, results[label].text
    return [results["run 1"], results["run 2"]]


def test_the_audit_names_each_writer_and_flags_the_foreign_write(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, SRDP_TOML)
    catalog = tmp_path / "lake" / "catalog.sqlite"
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    finally:
        release(con)

    # dbt: the schema and two runs of the model, each labelled by the package.
    run_dbt(tmp_path, cfg)
    after_dbt = last_snapshot(catalog)

    # The IO manager: one asset into its own schema.
    @dg.asset(key=["daily"], metadata={"dagster/table_name": "lake.analytics.daily"})
    def daily() -> pa.Table:
        return pa.table({"day": pa.array([1, 2, 3], pa.int64())})

    result = dg.materialize([daily], resources={"io_manager": io_manager(cfg)})
    assert result.success
    after_io = last_snapshot(catalog)

    # The foreign write (no commit author, into the IO manager's schema), then maintenance.
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
        con.execute("INSERT INTO lake.analytics.daily VALUES (99)")
        compacted = con.execute(
            "SELECT schema_name, table_name, files_processed FROM srdp_compact('lake') ORDER BY ALL").fetchall()
        audit = con.execute(
            "SELECT snapshot_id, author, commit_message, schema_name, table_name, change, owner, allowed, note "
            "FROM srdp_write_audit('lake', since := '1')").fetchall()
    finally:
        release(con)
    assert compacted == [("analytics", "daily", 0), ("curated", "orders_clean", 2)]

    # DuckLake's own record: who labelled which snapshot.
    recorded = changes(catalog, 0)
    labels = {s: (author, message) for s, author, message, _ in recorded}
    dbt_snapshots = [s for s, *_ in recorded if s <= after_dbt]
    assert [labels[s][0] for s in dbt_snapshots] == ["dbt"] * 3
    invocation = labels[dbt_snapshots[1]][1].split()[2]
    assert labels[dbt_snapshots[0]][1].startswith("dbt invocation ")
    assert labels[dbt_snapshots[0]][1].endswith(" schema curated")
    assert labels[dbt_snapshots[1]][1] == f"dbt invocation {invocation} model orders_clean"
    io_snapshot, foreign, flush, merge = after_dbt + 1, after_io + 1, after_io + 2, after_io + 3
    assert io_snapshot == after_io
    assert labels[io_snapshot] == ("io_manager", f"dagster run {result.run_id} asset daily (whole table)")
    assert labels[foreign] == (None, None)
    assert labels[merge] == ("srdp", "srdp_compact: merge curated.orders_clean")
    assert labels[flush] == ("srdp", "srdp_compact: flush analytics.daily")
    assert [s for s, *_ in recorded] == [*dbt_snapshots, io_snapshot, foreign, flush, merge]

    ok = (True, None)
    unknown = (False, "unknown writer (no commit author)")
    expected: list[Row] = [
        (dbt_snapshots[0], *labels[dbt_snapshots[0]], "curated", None, "schema created", "dbt", *ok),
        (dbt_snapshots[1], *labels[dbt_snapshots[1]], "curated", "orders_clean", "created", "dbt", *ok),
        (dbt_snapshots[1], *labels[dbt_snapshots[1]], "curated", "orders_clean", "inserted", "dbt", *ok),
        (dbt_snapshots[2], *labels[dbt_snapshots[2]], "curated", "orders_clean", "inserted", "dbt", *ok),
        (io_snapshot, *labels[io_snapshot], "analytics", None, "schema created", "io_manager", *ok),
        (io_snapshot, *labels[io_snapshot], "analytics", "daily", "created", "io_manager", *ok),
        (io_snapshot, *labels[io_snapshot], "analytics", "daily", "inserted", "io_manager", *ok),
        (foreign, None, None, "analytics", "daily", "inserted", "io_manager", *unknown),
        (flush, "srdp", "srdp_compact: flush analytics.daily", "analytics", "daily", "flushed", "io_manager", True,
         "srdp maintenance; the rows are unchanged"),
        (merge, *labels[merge], "curated", "orders_clean", "compacted", "dbt", True,
         "srdp maintenance; the rows are unchanged"),
    ]
    assert audit == expected
