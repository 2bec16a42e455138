"""Every dbt materialization on an srdp-attached DuckLake, again and again (real dbt-duckdb 1.11.1).

The project is one written for the earlier set-up (`+database: lake` and the on-run-start hook
`srdp_check_writes()`): it keeps working with today's profile (the lake as target database).

One project (written into tmp, profile from ``python -m srdp dbt-profile``) with a table, a view,
incremental models (append, delete+insert, merge), a seed, a snapshot and a model with a custom
schema, run through one dbt session (dbt_session.py: each command a fresh forked process):

* refused 0: a custom schema under dbt's default naming (``curated_marts``) on a fresh lake;
* run 1-3 and ``--full-refresh`` (run 4): each run builds every node with new data (the seed's
  CSV is rewritten before each run, the models read the var ``gen``);
* failing A and B: the table, view, incremental and snapshot SQL or their post-hooks fail mid-build
  (B also a seed full refresh whose CSV no longer loads);
* refused 1: a model in dlt's schema ``raw``;
* relaxed: the same model with ``--vars {srdp_config: <a copy of srdp.toml with single_writer =
  false>}``: built, with srdp's warning.

Expected contents are computed here in Python from the run number; the lake is read back through
DuckLake (``AT (VERSION => n)``) and its metadata tables, never through srdp's functions.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import duckdb
import pytest

import srdp

from conftest import PY, REPO, write_config
from dbt_session import Step, StepResult, run_session

SRDP_TOML = """
[catalogs.lake]
metadata = "sqlite:lake/catalog.sqlite"
data_path = "lake/data/"
data_inlining_row_limit = 10

[catalogs.lake.schemas.curated]
writer = "dbt"
layer = "curated"

[catalogs.lake.schemas.marts]
writer = "dbt"
layer = "marts"

[catalogs.lake.schemas.raw]
writer = "dlt"
layer = "raw"
"""

DBT_PROJECT = """
name: mat
version: "1.0.0"
config-version: 2
profile: mat
flags:
  send_anonymous_usage_stats: false
dispatch:
  - macro_namespace: dbt
    search_order: [mat, srdp, dbt]
on-run-start:
  - "{{ srdp.srdp_check_writes() }}"
models:
  mat:
    +database: lake
seeds:
  mat:
    +database: lake
    colors:
      +column_types: {id: integer, name: varchar}
snapshots:
  mat:
    +database: lake
"""

# The var dbt_schema_names switches back to dbt's default naming (`<target schema>_<custom>`).
GENERATE_SCHEMA_NAME = """
{% macro generate_schema_name(custom_schema_name, node) -%}
  {%- if var('dbt_schema_names', false) -%}
    {{- dbt.default__generate_schema_name(custom_schema_name, node) -}}
  {%- else -%}
    {{- srdp.srdp_generate_schema_name(custom_schema_name, node) -}}
  {%- endif -%}
{%- endmacro %}
"""

# Run `gen` of each model; with the var fail, the SQL or an in-transaction post-hook fails.
MODELS = {
    # A table whose columns change after run 1 (extra added); fails mid-scan.
    "tbl": """
        {{ config(materialized='table') }}
        select range::BIGINT as id, {{ var('gen') }} as gen, 'row ' || range || ' of run {{ var('gen') }}' as label
        {%- if var('gen') >= 2 %}, range * {{ var('gen') }} as extra{% endif %}
        from range({{ 10 * var('gen') }})
        {%- if var('fail', false) %}
        where case when range = 3 then error('tbl failed mid-build') else true end
        {%- endif %}
    """,
    # A view over the seed; its post-hook fails inside the transaction, after the swap.
    "vw": """
        {{ config(materialized='view') }}
        {% if var('fail', false) %}{{ config(post_hook="select error('vw post-hook failed')") }}{% endif %}
        select id, upper(name) as name from {{ ref('colors') }}
    """,
    "inc_append": """
        {{ config(materialized='incremental', incremental_strategy='append') }}
        {% if var('fail', false) %}{{ config(post_hook="select error('inc_append post-hook failed')") }}{% endif %}
        select range::INTEGER as i, {{ var('gen') }} as gen from range(5)
    """,
    "inc_di": """
        {{ config(materialized='incremental', incremental_strategy='delete+insert', unique_key='id') }}
        select range::INTEGER as id, {{ var('gen') }} as gen from range({{ var('gen') }}, {{ var('gen') }} + 3)
    """,
    "inc_merge": """
        {{ config(materialized='incremental', incremental_strategy='merge', unique_key='id') }}
        select range::INTEGER as id, {{ var('gen') }} as gen from range({{ var('gen') }}, {{ var('gen') }} + 3)
        {%- if var('fail', false) %}
        where case when range = {{ var('gen') }} + 1 then error('inc_merge failed mid-build') else true end
        {%- endif %}
    """,
    # config(schema='marts'): lake.marts.mart with srdp's naming, lake.curated_marts with dbt's.
    "mart": """
        {{ config(materialized='table', schema='marts') }}
        select count(*) as n, max(gen) as gen from {{ ref('tbl') }}
    """,
    # dlt's schema: always refused.
    "raw_copy": """
        {{ config(materialized='table', schema='raw') }}
        select 1 as one
    """,
}

SNAPSHOT = """
{% snapshot snap %}
{{ config(unique_key='id', strategy='check', check_cols='all') }}
select id, name from {{ ref('colors') }}
{%- if var('fail', false) %}
where case when id = 2 then error('snap failed mid-build') else true end
{%- endif %}
{% endsnapshot %}
"""

RELAXED = """
[rules]
single_writer = false
"""

NODES = ["colors", "tbl", "vw", "inc_append", "inc_di", "inc_merge", "mart", "snap"]  # all but raw_copy
RUNS = (1, 2, 3, 4)  # run 4 is --full-refresh


def colors_csv(gen: int) -> str:
    """The seed of run ``gen``: ids 1..gen+1, the name of id 1 changes every run."""
    rows = [(1, f"red v{gen}")] + [(i, f"color {i}") for i in range(2, gen + 2)]
    return "id,name\n" + "".join(f"{i},{name}\n" for i, name in rows)


def expected(gen: int) -> dict[str, list[tuple]]:
    """Every model's rows after run ``gen`` (sorted), computed from the models' definitions."""
    tbl = [(i, gen, f"row {i} of run {gen}") + ((i * gen,) if gen >= 2 else ()) for i in range(10 * gen)]
    seed = [(i, name) for i, name in (line.split(",", 1) for line in colors_csv(gen).splitlines()[1:])]
    appended = [(i, g) for g in ((4,) if gen == 4 else range(1, gen + 1)) for i in range(5)]
    keyed: dict[int, int] = {}
    for g in (4,) if gen == 4 else range(1, gen + 1):
        keyed.update({i: g for i in range(g, g + 3)})
    # The snapshot (never full-refreshed): id 1 has one version per run, the others one each.
    versions = [(1, f"red v{g}", g == gen) for g in range(1, gen + 1)]
    versions += [(i, f"color {i}", True) for i in range(2, gen + 2)]
    return {
        "tbl": sorted(tbl),
        "colors": sorted((int(i), name) for i, name in seed),
        "vw": sorted((int(i), name.upper()) for i, name in seed),
        "inc_append": sorted(appended),
        "inc_di": sorted(keyed.items()),
        "inc_merge": sorted(keyed.items()),
        "mart": [(10 * gen, gen)],
        "snap": sorted(versions),
    }


# How each model is read back (the snapshot: its key, value and whether it is current).
READS = {
    "tbl": "SELECT * FROM lake.curated.tbl{at}",
    "colors": "SELECT id, name FROM lake.curated.colors{at}",
    "vw": "SELECT id, name FROM lake.curated.vw{at}",
    "inc_append": "SELECT i, gen FROM lake.curated.inc_append{at}",
    "inc_di": "SELECT id, gen FROM lake.curated.inc_di{at}",
    "inc_merge": "SELECT id, gen FROM lake.curated.inc_merge{at}",
    "mart": "SELECT n, gen FROM lake.marts.mart{at}",
    "snap": "SELECT id, name, dbt_valid_to IS NULL FROM lake.curated.snap{at}",
}


def read_models(con: duckdb.DuckDBPyConnection, version: int | None) -> dict[str, list[tuple] | str]:
    """Each model's rows (sorted) at ``version`` (None: now); a model that does not exist: its error."""
    at = "" if version is None else f" AT (VERSION => {version})"
    rows: dict[str, list[tuple] | str] = {}
    for name, sql in READS.items():
        try:
            rows[name] = sorted(con.execute(sql.format(at=at)).fetchall())
        except duckdb.CatalogException as error:
            rows[name] = str(error).splitlines()[0]
    return rows


def make_project(root: Path, cfg: Path) -> Path:
    project = root / "project"
    for relative, text in {
        "dbt_project.yml": DBT_PROJECT,
        "packages.yml": f"packages:\n  - local: {REPO / 'dbt'}\n",
        "macros/generate_schema_name.sql": GENERATE_SCHEMA_NAME,
        "snapshots/snap.sql": SNAPSHOT,
        "seeds/colors.csv": colors_csv(1),
        **{f"models/{name}.sql": sql for name, sql in MODELS.items()},
    }.items():
        path = project / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    # The profile as a user gets it: generated from srdp.toml (dbt owns two schemas: pick one).
    profile = subprocess.run(
        [PY, "-m", "srdp", "dbt-profile", "--config", str(cfg), "--profile", "mat", "--schema", "curated"],
        cwd=root, capture_output=True, text=True, timeout=120,
    )
    assert profile.returncode == 0, profile.stderr
    (root / "profiles").mkdir()
    (root / "profiles" / "profiles.yml").write_text(profile.stdout)
    return project


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("dbt_mat")
    cfg = write_config(root, SRDP_TOML)
    project = make_project(root, cfg)
    (root / "home").mkdir()
    env = {
        "HOME": str(root / "home"),
        "DBT_PROFILES_DIR": str(root / "profiles"),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "DO_NOT_TRACK": "1",
        "SRDP_CONFIG": "",  # the config comes from the profile's settings
    }
    seed = str(project / "seeds" / "colors.csv")
    relaxed = write_config(root, SRDP_TOML + RELAXED, name="srdp_relaxed.toml")

    def run(gen: int, *extra: str, fail: bool = False, dbt_schema_names: bool = False) -> list[str]:
        var = {"gen": gen, **({"fail": True} if fail else {}), **({"dbt_schema_names": True} if dbt_schema_names else {})}
        return [*extra, "--vars", json.dumps(var)]

    steps = [Step("deps", ["deps"]),
             Step("refused 0", ["run", "--select", "tbl", "mart", *run(1, dbt_schema_names=True)])]
    steps += [Step(f"run {g}", ["build", "--exclude", "raw_copy", *run(g, *(["--full-refresh"] if g == 4 else []))],
                   files={seed: colors_csv(g)}) for g in RUNS]
    steps += [
        Step("failing A", ["build", "--select", "tbl", "vw", "inc_merge", "snap", *run(5, fail=True)]),
        Step("failing B", ["build", "--select", "inc_append", "colors", *run(5, "--full-refresh", fail=True)],
             files={seed: "id,name\n1,red\nx,not a number\n"}),
        Step("refused 1", ["run", "--select", "tbl", "raw_copy", *run(6)], files={seed: colors_csv(4)}),
        Step("relaxed", ["run", "--select", "raw_copy", "--vars", json.dumps({"gen": 6, "srdp_config": str(relaxed)})]),
    ]
    results = run_session(project, env, steps, cfg.parent / "lake" / "catalog.sqlite")

    con = srdp.connect(config=cfg)
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'reader')")
    meta = '"__ducklake_metadata_lake".main'
    read = {
        "versions": {g: read_models(con, results[f"run {g}"].snapshot) for g in RUNS},
        "now": read_models(con, None),
        # Every snapshot of the lake and the tables and views alive at it (by the metadata).
        "alive": {
            s: sorted(name for (name,) in con.execute(
                f"""SELECT s.schema_name || '.' || o.name FROM (
                        SELECT schema_id, table_name AS name, begin_snapshot, end_snapshot FROM {meta}.ducklake_table
                        UNION ALL
                        SELECT schema_id, view_name, begin_snapshot, end_snapshot FROM {meta}.ducklake_view) o
                    JOIN {meta}.ducklake_schema s USING (schema_id)
                    WHERE o.begin_snapshot <= ? AND (o.end_snapshot IS NULL OR o.end_snapshot > ?)""", [s, s]).fetchall())
            for (s,) in con.execute(f"SELECT snapshot_id FROM {meta}.ducklake_snapshot ORDER BY 1").fetchall()
        },
        "schemas": dict(con.execute(
            f"SELECT schema_name, begin_snapshot FROM {meta}.ducklake_schema WHERE end_snapshot IS NULL ORDER BY 1").fetchall()),
        "relations": sorted(con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'lake' "
            "UNION ALL SELECT schema_name, view_name FROM duckdb_views() WHERE database_name = 'lake'").fetchall()),
    }
    con.close()
    return {"steps": results, "read": read, "cfg": cfg, "relaxed": relaxed, "root": root}


def step(lake: dict[str, Any], label: str) -> StepResult:
    return lake["steps"][label]


def test_every_materialization_builds_three_times_and_with_full_refresh(lake: dict[str, Any]) -> None:
    assert step(lake, "deps").success, step(lake, "deps").text
    for gen in RUNS:
        run = step(lake, f"run {gen}")
        assert run.success, run.text
        assert "Done. PASS=9 WARN=0 ERROR=0 SKIP=0" in run.text  # 8 nodes and the hook
        # The ownership check of both schemas dbt writes, printed by the on-run-start hook.
        assert "srdp_check_writer: catalog=lake | schema_name=curated | writer=dbt | owner=dbt | layer=curated | allowed=true | warning=NULL" in run.text
        assert "srdp_check_writer: catalog=lake | schema_name=marts | writer=dbt | owner=dbt | layer=marts | allowed=true | warning=NULL" in run.text
    # srdp's generate_schema_name: config(schema='marts') is lake.marts, as named.
    # (dbt prints no database: the lake is the profile's target database)
    assert "OK created sql table model marts.mart" in step(lake, "run 1").text
    assert sorted(lake["read"]["schemas"]) == ["curated", "main", "marts", "raw"]  # raw: the relaxed step
    # Run 4 rebuilt the incremental models and the seed from scratch.
    assert "OK loaded seed file curated.colors ...................................... [CREATE 5 in" in step(lake, "run 4").text
    # Before it, a seed run truncates the table and inserts the CSV's rows.
    assert "OK loaded seed file curated.colors ...................................... [INSERT 4 in" in step(lake, "run 3").text


def test_time_travel_reads_every_run_as_its_own_snapshot(lake: dict[str, Any]) -> None:
    snapshots = [step(lake, f"run {g}").snapshot for g in RUNS]
    # Run 1 creates the schemas curated and marts; then every node is one DuckLake snapshot.
    assert snapshots[0] == 2 + len(NODES)  # after snapshot 0 (DuckLake's own schema main)
    assert [b - a for a, b in zip(snapshots, snapshots[1:])] == [len(NODES)] * 3
    for gen in RUNS:
        assert lake["read"]["versions"][gen] == expected(gen), gen


def test_no_snapshot_ever_shows_a_half_swapped_or_missing_model(lake: dict[str, Any]) -> None:
    alive = lake["read"]["alive"]
    names = {f"curated.{n}" for n in NODES if n != "mart"} | {"marts.mart"}
    last_run = step(lake, "run 4").snapshot
    for snapshot, relations in alive.items():
        if snapshot > last_run:  # the relaxed step's (raw and raw_copy)
            continue
        assert not [r for r in relations if r.endswith(("__dbt_tmp", "__dbt_backup"))], (snapshot, relations)
        # Once every model exists (end of run 1), every later snapshot has all of them.
        if snapshot >= step(lake, "run 1").snapshot:
            assert set(relations) == names, (snapshot, relations)
    # The failing and refused steps committed nothing; the relaxed step created raw and raw_copy.
    assert max(alive) == step(lake, "relaxed").snapshot == last_run + 2
    assert lake["read"]["relations"] == sorted([tuple(n.split(".")) for n in names] + [("raw", "raw_copy")])


def test_models_that_fail_mid_build_leave_the_previous_version(lake: dict[str, Any]) -> None:
    a, b = step(lake, "failing A"), step(lake, "failing B")
    assert not a.success and not b.success
    assert "Done. PASS=1 WARN=0 ERROR=4 SKIP=0" in a.text, a.text  # the hook passed
    for message in ("tbl failed mid-build", "vw post-hook failed", "inc_merge failed mid-build", "snap failed mid-build"):
        assert message in a.text, message
    assert "Done. PASS=1 WARN=0 ERROR=2 SKIP=0" in b.text, b.text
    assert "inc_append post-hook failed" in b.text
    assert """Error when converting column "id". Could not convert string "x" to 'INTEGER'""" in b.text
    # No snapshot after run 4's: every model (the dbt snapshot too) reads as run 4 left it.
    assert a.snapshot == b.snapshot == step(lake, "run 4").snapshot
    assert lake["read"]["now"] == expected(4)


def test_custom_schema_under_dbt_naming_is_refused_before_anything_is_written(lake: dict[str, Any]) -> None:
    refused = step(lake, "refused 0")
    assert not refused.success
    assert (
        "srdp_check_writer: writer 'dbt' may not write schema 'curated_marts' of catalog 'lake': it has no "
        "owner in the definition; define [catalogs.lake.schemas.curated_marts] with writer and layer. 'dbt' may "
        "write: curated, marts. To relax the rule, add the line `single_writer = false` under [rules] in "
        f"{lake['cfg']}"
    ) in refused.text, refused.text
    # Nothing was written: the profile's plugin attached the lake (DuckLake's snapshot 0, its
    # schema main), and no schema or table was created (run 1 created them later).
    assert refused.snapshot == 0
    assert step(lake, "run 1").snapshot is not None
    assert "curated_marts" not in lake["read"]["schemas"]


def test_foreign_schema_is_refused_before_anything_is_written(lake: dict[str, Any]) -> None:
    refused = step(lake, "refused 1")
    assert not refused.success
    assert (
        "srdp_check_writer: writer 'dbt' may not write schema 'raw' of catalog 'lake': it is owned by 'dlt' "
        "(single_writer). 'dbt' may write: curated, marts."
    ) in refused.text, refused.text
    # tbl (allowed, selected with it) was not rebuilt either: no snapshot, no schema raw (only the
    # relaxed step after it created one).
    assert refused.snapshot == step(lake, "run 4").snapshot
    assert lake["read"]["schemas"]["raw"] > refused.snapshot
    assert lake["read"]["now"]["tbl"] == expected(4)["tbl"]


def test_a_write_allowed_only_by_relaxed_single_writer_is_built_with_srdp_warning(lake: dict[str, Any]) -> None:
    relaxed = step(lake, "relaxed")
    assert relaxed.success, relaxed.text
    line = lake["relaxed"].read_text().splitlines().index("single_writer = false") + 1
    warning = (f"srdp_check_writer: srdp rule single_writer is relaxed by {lake['relaxed']}:{line}: writer 'dbt' "
               "writes schema 'raw' owned by 'dlt'")
    assert warning in relaxed.text, relaxed.text
    assert ("srdp_check_writer: catalog=lake | schema_name=raw | writer=dbt | owner=dlt | layer=raw | allowed=true | "
            "warning=srdp rule single_writer is relaxed by") in relaxed.text
    assert "OK created sql table model raw.raw_copy" in relaxed.text
