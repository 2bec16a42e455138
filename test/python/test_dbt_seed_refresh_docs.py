"""What srdp's dbt package does beyond dbt-duckdb on a DuckLake: a seed's full refresh and
persist_docs, run after run (real dbt-duckdb 1.11.1, the documented set-up of docs/dbt.md).

One dbt session (dbt_session.py) on a project with two seeds and views built on them:

* ``colors`` (refreshed with ``--full-refresh``) has views built on it directly (``colors_v``),
  through a view (``colors_vv``) and through an ephemeral model (``eph_v``), a table model
  (``colors_t``) with a view on that table (``table_v``), and a view that does not read it
  (``other_v``);
* ``sizes`` has ``+full_refresh: true`` in dbt_project.yml and one view (``sizes_v``);
* ``merged``, an incremental model on colors with merge_clauses of one update, a ``do_nothing``
  and two inserts (the most one DuckLake MERGE may do);
* ``doc_t`` (table), ``doc_v`` (view), ``merged`` and the seed ``sizes`` have ``persist_docs:
  {relation: true, columns: true}`` and documented columns.

Steps: seed, run, ``seed --full-refresh`` of colors with a new CSV (twice), a plain ``seed`` of
sizes (twice), run, ``build --full-refresh --select colors colors_v`` with a new CSV, run. Each
full refresh drops exactly the views a PostgreSQL CASCADE would (colors_v, colors_vv, eph_v;
sizes_v with the plain seed) but those the same invocation rebuilds (colors_v in the build), in
the seed's own DuckLake snapshot, and the next run rebuilds them over the new rows. Comments are
read back from DuckDB's catalog.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

import srdp

from conftest import PY, REPO, write_config
from dbt_session import Step, StepResult, run_session

SRDP_TOML = """
[catalogs.lake]
metadata = "sqlite:lake/catalog.sqlite"
data_path = "lake/data/"

[catalogs.lake.schemas.curated]
writer = "dbt"
layer = "curated"
"""

DBT_PROJECT = """
name: sr
version: "1.0.0"
config-version: 2
profile: sr
flags:
  send_anonymous_usage_stats: false
dispatch:
  - macro_namespace: dbt
    search_order: [sr, srdp, dbt]
seeds:
  sr:
    sizes:
      +full_refresh: true
      +persist_docs: {relation: true, columns: true}
"""

MODELS = {
    "colors_v": "{{ config(materialized='view') }} select id, name from {{ ref('colors') }}",
    "colors_vv": "{{ config(materialized='view') }} select id from {{ ref('colors_v') }}",
    "colors_eph": "{{ config(materialized='ephemeral') }} select id, name from {{ ref('colors') }}",
    "eph_v": "{{ config(materialized='view') }} select name from {{ ref('colors_eph') }}",
    "colors_t": "{{ config(materialized='table') }} select id, name from {{ ref('colors') }}",
    "table_v": "{{ config(materialized='view') }} select id from {{ ref('colors_t') }}",
    "other_v": "{{ config(materialized='view') }} select 1 as one",
    "sizes_v": "{{ config(materialized='view') }} select size from {{ ref('sizes') }}",
    "doc_t": "{{ config(materialized='table') }} select 1 as id, 'x' as label",
    "merged": """
        {{ config(materialized='incremental', incremental_strategy='merge', unique_key='id', merge_clauses={
            'when_matched': [{'action': 'do_nothing', 'condition': 'DBT_INTERNAL_SOURCE.id = 1'},
                             {'action': 'update', 'mode': 'by_name'}],
            'when_not_matched': [{'action': 'insert', 'mode': 'explicit', 'condition': 'DBT_INTERNAL_SOURCE.id = 4',
                                  'insert': {'columns': ['id', 'name'], 'values': ['DBT_INTERNAL_SOURCE.id', "'four'"]}},
                                 {'action': 'insert', 'mode': 'by_name'}]}) }}
        select id, name from {{ ref('colors') }}
    """,
    "doc_v": "{{ config(materialized='view') }} select 1 as id, 'x' as label",
}

DOCS = """
version: 2
models:
  - name: doc_t
    description: "Table's description, with 'quotes' and $dollars$"
    config: {persist_docs: {relation: true, columns: true}}
    columns:
      - name: id
        description: "id of doc_t"
      - name: label
  - name: doc_v
    description: "View's description"
    config: {persist_docs: {relation: true, columns: true}}
    columns:
      - name: id
        description: "id of doc_v"
  - name: merged
    description: "Merged colors"
    config: {persist_docs: {relation: true, columns: true}}
    columns:
      - name: name
        description: "name, merged"
seeds:
  - name: sizes
    description: "Sizes seed"
    columns:
      - name: size
        description: "a size"
"""

#: Views a CASCADE from each seed reaches (table_v reads colors_t, a table: not reached).
COLORS_VIEWS = ["colors_v", "colors_vv", "eph_v"]
ALL_VIEWS = ["colors_v", "colors_vv", "doc_v", "eph_v", "other_v", "sizes_v", "table_v"]
VIEW_WARNING = (
    "srdp: the column descriptions of view \"lake\".\"curated\".\"doc_v\" are not persisted: DuckLake 1.0 cannot "
    "comment on the columns of a view (Binder Error: Cannot comment on columns for entry doc_v - it is not a table). "
    "The view's own description is. Materialize it as a table to keep column comments in the catalog."
)


def colors_csv(gen: int) -> str:
    return "id,name\n" + "".join(f"{i},color {i} v{gen}\n" for i in range(1, gen + 2))


def make_project(root: Path, cfg: Path) -> Path:
    project = root / "project"
    for relative, text in {
        "dbt_project.yml": DBT_PROJECT,
        "packages.yml": f"packages:\n  - local: {REPO / 'dbt'}\n",
        "seeds/colors.csv": colors_csv(1),
        "seeds/sizes.csv": "size\nS\nM\n",
        "models/docs.yml": DOCS,
        **{f"models/{name}.sql": sql for name, sql in MODELS.items()},
    }.items():
        path = project / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    profile = subprocess.run(
        [PY, "-m", "srdp", "dbt-profile", "--config", str(cfg), "--profile", "sr", "--schema", "curated"],
        cwd=root, capture_output=True, text=True, timeout=120,
    )
    assert profile.returncode == 0, profile.stderr
    (root / "profiles").mkdir()
    (root / "profiles" / "profiles.yml").write_text(profile.stdout)
    return project


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("dbt_seed_refresh")
    cfg = write_config(root, SRDP_TOML)
    project = make_project(root, cfg)
    (root / "home").mkdir()
    env = {
        "HOME": str(root / "home"),
        "DBT_PROFILES_DIR": str(root / "profiles"),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "DO_NOT_TRACK": "1",
        "SRDP_CONFIG": "",
    }
    colors = str(project / "seeds" / "colors.csv")
    steps = [
        Step("deps", ["deps"]),
        Step("seed", ["seed"]),
        Step("run 1", ["run"]),
        Step("full refresh 1", ["seed", "--full-refresh", "--select", "colors"], files={colors: colors_csv(2)}),
        Step("full refresh 2", ["seed", "--full-refresh", "--select", "colors"], files={colors: colors_csv(3)}),
        Step("sizes seed 1", ["seed", "--select", "sizes"]),
        Step("sizes seed 2", ["seed", "--select", "sizes"]),
        Step("run 2", ["run"]),
        Step("build refresh", ["build", "--full-refresh", "--select", "colors", "colors_v"], files={colors: colors_csv(4)}),
        Step("run 3", ["run"]),
    ]
    catalog = cfg.parent / "lake" / "catalog.sqlite"
    results = run_session(project, env, steps, catalog)
    return {"steps": results, "cfg": cfg}


@pytest.fixture(scope="module")
def lake(session: dict[str, Any]) -> dict[str, Any]:
    """What the lake holds: the views of schema curated at each step's last snapshot (from
    DuckLake's metadata), rows by time travel, comments from DuckDB's catalog, the audit."""
    steps: dict[str, StepResult] = session["steps"]
    failed = [f"{label}:\n{r.text}" for label, r in steps.items() if not r.success]
    assert not failed, "\n".join(failed)
    con = srdp.connect(config=session["cfg"])
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'reader')").fetchall()
    meta = '"__ducklake_metadata_lake".main'
    views_by_snapshot = {snapshot: [r[0] for r in con.execute(
        f"SELECT v.view_name FROM {meta}.ducklake_view v JOIN {meta}.ducklake_schema s USING (schema_id) "
        "WHERE s.schema_name = 'curated' AND v.begin_snapshot <= ? AND (v.end_snapshot IS NULL OR v.end_snapshot > ?) "
        "ORDER BY 1", [snapshot, snapshot]).fetchall()] for snapshot in range(steps["run 3"].snapshot + 1)}
    read = {
        "views_by_snapshot": views_by_snapshot,
        "views_at": {label: views_by_snapshot[result.snapshot] for label, result in steps.items()
                     if result.snapshot is not None},  # deps: no catalog yet
        "colors_at": {label: sorted(con.execute(
            f"SELECT id, name FROM lake.curated.colors AT (VERSION => {steps[label].snapshot})").fetchall())
            for label in ("run 1", "full refresh 1", "full refresh 2")},
        "colors_v": sorted(con.execute("SELECT * FROM lake.curated.colors_v").fetchall()),
        "colors_vv": sorted(con.execute("SELECT * FROM lake.curated.colors_vv").fetchall()),
        "eph_v": sorted(con.execute("SELECT * FROM lake.curated.eph_v").fetchall()),
        "colors_t": sorted(con.execute("SELECT * FROM lake.curated.colors_t").fetchall()),
        "merged_at": {label: sorted(con.execute(
            f"SELECT id, name FROM lake.curated.merged AT (VERSION => {steps[label].snapshot})").fetchall())
            for label in ("run 1", "run 2", "run 3")},
        "sizes_v": sorted(con.execute("SELECT * FROM lake.curated.sizes_v").fetchall()),
        "table_comment": con.execute(
            "SELECT comment FROM duckdb_tables() WHERE database_name = 'lake' AND table_name = 'doc_t'").fetchall(),
        "comments": sorted(con.execute(
            "SELECT table_name, NULL, comment FROM duckdb_tables() WHERE database_name = 'lake' AND table_name IN ('merged', 'sizes') "
            "UNION ALL SELECT table_name, column_name, comment FROM duckdb_columns() "
            "WHERE database_name = 'lake' AND table_name IN ('merged', 'sizes')").fetchall(), key=str),
        "table_columns": con.execute(
            "SELECT column_name, comment FROM duckdb_columns() WHERE database_name = 'lake' AND table_name = 'doc_t' "
            "ORDER BY column_index").fetchall(),
        "view_comment": con.execute(
            "SELECT comment FROM duckdb_views() WHERE database_name = 'lake' AND view_name = 'doc_v'").fetchall(),
        "view_columns": con.execute(
            "SELECT column_name, comment FROM duckdb_columns() WHERE database_name = 'lake' AND table_name = 'doc_v' "
            "ORDER BY column_index").fetchall(),
        "audit": con.execute(
            "SELECT snapshot_id, author, commit_message, table_name, change, allowed FROM srdp_write_audit('lake') "
            "WHERE snapshot_id IS NOT NULL ORDER BY snapshot_id, table_name").fetchall(),
    }
    con.close()
    return read


def step(session: dict[str, Any], label: str) -> StepResult:
    return session["steps"][label]


def test_every_step_succeeds_with_each_node_built(session: dict[str, Any]) -> None:
    for label, result in session["steps"].items():
        assert result.success, f"{label}:\n{result.text}"
    assert "Done. PASS=2 WARN=0 ERROR=0 SKIP=0 NO-OP=0 TOTAL=2" in step(session, "seed").text
    for label in ("run 1", "run 2", "run 3"):
        assert "Done. PASS=10 WARN=0 ERROR=0 SKIP=0 NO-OP=0 TOTAL=10" in step(session, label).text, step(session, label).text
    for label in ("full refresh 1", "full refresh 2", "sizes seed 1", "sizes seed 2"):
        assert "Done. PASS=1 WARN=0 ERROR=0 SKIP=0 NO-OP=0 TOTAL=1" in step(session, label).text
    assert "Done. PASS=2 WARN=0 ERROR=0 SKIP=0 NO-OP=0 TOTAL=2" in step(session, "build refresh").text


def test_a_seed_full_refresh_drops_the_views_built_on_it_in_the_seeds_snapshot(
        session: dict[str, Any], lake: dict[str, Any]) -> None:
    views_at = lake["views_at"]
    assert views_at["run 1"] == ALL_VIEWS
    assert views_at["full refresh 1"] == [v for v in ALL_VIEWS if v not in COLORS_VIEWS]
    # One DuckLake snapshot for the whole command: the drops, the new table and its rows.
    assert step(session, "full refresh 1").snapshot == step(session, "run 1").snapshot + 1
    assert lake["colors_at"]["full refresh 1"] == [(i, f"color {i} v2") for i in range(1, 4)]
    text = step(session, "full refresh 1").text
    for view in COLORS_VIEWS:
        assert (f'srdp: the full refresh of seed colors drops the view "lake"."curated"."{view}" built on it '
                "(as dbt on PostgreSQL does by CASCADE); the next dbt run rebuilds it") in text, text
    assert text.count("srdp: the full refresh of seed colors drops the view") == len(COLORS_VIEWS)


def test_a_second_full_refresh_with_the_views_gone_reloads_the_seed(session: dict[str, Any], lake: dict[str, Any]) -> None:
    assert lake["views_at"]["full refresh 2"] == lake["views_at"]["full refresh 1"]
    assert step(session, "full refresh 2").snapshot == step(session, "full refresh 1").snapshot + 1
    assert lake["colors_at"]["full refresh 2"] == [(i, f"color {i} v3") for i in range(1, 5)]
    assert "drops the view" not in step(session, "full refresh 2").text


def test_a_view_the_same_invocation_rebuilds_is_never_missing(session: dict[str, Any], lake: dict[str, Any]) -> None:
    """``dbt build --full-refresh --select colors colors_v``: colors_v (selected) is replaced by
    its own node, never dropped; colors_vv and eph_v (not selected) are dropped with the seed."""
    before, after = step(session, "run 2").snapshot, step(session, "build refresh").snapshot
    assert after >= before + 2  # the seed's snapshot, then the view's
    for snapshot in range(before, after + 1):
        assert "colors_v" in lake["views_by_snapshot"][snapshot], (snapshot, lake["views_by_snapshot"][snapshot])
    assert lake["views_at"]["build refresh"] == [v for v in ALL_VIEWS if v not in ("colors_vv", "eph_v")]
    text = step(session, "build refresh").text
    assert 'drops the view "lake"."curated"."colors_vv"' in text and 'drops the view "lake"."curated"."eph_v"' in text, text
    assert 'drops the view "lake"."curated"."colors_v"' not in text, text


def test_the_next_runs_rebuild_the_views_over_the_new_rows(session: dict[str, Any], lake: dict[str, Any]) -> None:
    assert lake["views_at"]["run 2"] == ALL_VIEWS
    assert lake["views_at"]["run 3"] == ALL_VIEWS
    rows = [(i, f"color {i} v4") for i in range(1, 6)]
    assert lake["colors_v"] == rows
    assert lake["colors_t"] == rows
    assert lake["colors_vv"] == [(i,) for i in range(1, 6)]
    assert lake["eph_v"] == sorted((name,) for _, name in rows)
    assert lake["sizes_v"] == [("M",), ("S",)]


def test_full_refresh_config_drops_the_views_on_every_seed_run(session: dict[str, Any], lake: dict[str, Any]) -> None:
    remaining = [v for v in ALL_VIEWS if v not in COLORS_VIEWS and v != "sizes_v"]
    assert lake["views_at"]["sizes seed 1"] == remaining
    assert lake["views_at"]["sizes seed 2"] == remaining
    assert 'drops the view "lake"."curated"."sizes_v"' in step(session, "sizes seed 1").text
    assert "drops the view" not in step(session, "sizes seed 2").text


def test_each_full_refresh_is_dbts_one_allowed_write(session: dict[str, Any], lake: dict[str, Any]) -> None:
    snapshot = step(session, "full refresh 1").snapshot
    rows = [row for row in lake["audit"] if row[0] == snapshot]
    assert rows, lake["audit"]
    assert {(r[1], r[2].split(" ", 3)[3], r[5]) for r in rows} == {("dbt", "seed colors", True)}, rows
    assert {r[3] for r in rows} >= {"colors", *COLORS_VIEWS}, rows


def test_merge_clauses_with_one_update_do_nothing_and_two_inserts(lake: dict[str, Any]) -> None:
    merged = lake["merged_at"]
    assert merged["run 1"] == [(1, "color 1 v1"), (2, "color 2 v1")]
    # Run 2, source colors v3 (ids 1-4): id 1 matched: do nothing; 2 matched: update; 3: the insert
    # by name; 4: the first insert (its condition holds). Run 3, v4 (ids 1-5): 4 matched: update.
    assert merged["run 2"] == [(1, "color 1 v1"), (2, "color 2 v3"), (3, "color 3 v3"), (4, "four")]
    assert merged["run 3"] == [(1, "color 1 v1"), *[(i, f"color {i} v4") for i in range(2, 6)]]


def test_persist_docs_comments_tables_their_columns_and_views(session: dict[str, Any], lake: dict[str, Any]) -> None:
    assert lake["table_comment"] == [("Table's description, with 'quotes' and $dollars$",)]
    assert lake["table_columns"] == [("id", "id of doc_t"), ("label", "")]  # dbt-duckdb's empty comment
    assert lake["view_comment"] == [("View's description",)]
    # An incremental model after two merges, a seed after two fully refreshed loads.
    assert lake["comments"] == sorted([
        ("merged", None, "Merged colors"), ("merged", "id", None), ("merged", "name", "name, merged"),
        ("sizes", None, "Sizes seed"), ("sizes", "size", "a size"),
    ], key=str)


def test_a_views_column_descriptions_are_a_warning_not_a_failed_model(session: dict[str, Any], lake: dict[str, Any]) -> None:
    assert lake["view_columns"] == [("id", None), ("label", None)]
    for label in ("run 1", "run 2", "run 3"):
        text = step(session, label).text
        assert VIEW_WARNING in text, text
        assert text.count("srdp: the column descriptions of view") == 1, text
