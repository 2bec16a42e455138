"""The lake as dbt's target database, exactly as docs/dbt.md sets it up.

The project has the profile ``python -m srdp dbt-profile`` prints, the srdp package and its
``dispatch:`` entry, and nothing else: no ``database:``, no on-run-start hook, no pre-hook. One
dbt session (dbt_session.py: each command a fresh forked process) builds a seed, a snapshot, a
model reading a source without ``database:`` (dlt's ``raw.orders``), a model reading the seed
by a two-part name, a model that records ``target.database`` and ``adapter.is_ducklake(this)``,
a test storing its failures, and two models switched between view, table and incremental on
every run (all six switches). Then a model in dlt's schema is refused with nothing written.

Everything is read back through DuckLake itself (its metadata, ``snapshots()``) and srdp's
``srdp_write_audit``.
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

[catalogs.lake.schemas.curated_dbt_test__audit]
writer = "dbt"
layer = "curated"

[catalogs.lake.schemas.raw]
writer = "dlt"
layer = "raw"
"""

DBT_PROJECT = """
name: lt
version: "1.0.0"
config-version: 2
profile: lt
flags:
  send_anonymous_usage_stats: false
dispatch:
  - macro_namespace: dbt
    search_order: [lt, srdp, dbt]
"""

SOURCES = """
version: 2
sources:
  - name: raw
    schema: raw
    tables:
      - name: orders
models:
  - name: orders_clean
    columns:
      - name: amount
        data_tests:
          - accepted_values:
              arguments: {values: [10, 20]}
              config: {store_failures: true, severity: warn}
"""

# Materialization of the switching models by run: sw_a view -> table -> incremental -> view,
# sw_b view -> incremental -> table -> view: together all six switches.
SWITCHES = {"sw_a": ["view", "table", "incremental", "view"], "sw_b": ["view", "incremental", "table", "view"]}

MODELS = {
    "orders_clean": "select id, amount from {{ source('raw', 'orders') }}",
    "two_part": "-- depends_on: {{ ref('colors') }}\n{{ config(materialized='table') }} select count(*) as n from {{ this.schema }}.colors",
    "facts": """
        {{ config(materialized='table') }}
        select '{{ target.database }}' as target_database, {{ adapter.is_ducklake(this) }} as is_ducklake,
               current_database() as current_db
    """,
    **{name: f"""
        {{{{ config(materialized=var('{name}')) }}}}
        select range::INTEGER as id, {{{{ var('gen') }}}} as gen from range({{{{ var('gen') }}}})
    """ for name in SWITCHES},
}

SNAPSHOT = """
{% snapshot snap %}
{{ config(unique_key='id', strategy='check', check_cols='all', target_schema=target.schema) }}
select id, name from {{ ref('colors') }}
{% endsnapshot %}
"""

# A snapshot into dlt's schema raw (which exists: dlt created it), always refused.
RAW_SNAPSHOT = """
{% snapshot raw_snap %}
{{ config(unique_key='id', strategy='check', check_cols='all', target_schema='raw') }}
select 1 as id
{% endsnapshot %}
"""


def colors_csv(gen: int) -> str:
    return "id,name\n" + "".join(f"{i},color {i} v{gen if i == 1 else 1}\n" for i in range(1, 4))


def make_project(root: Path, cfg: Path) -> Path:
    project = root / "project"
    for relative, text in {
        "dbt_project.yml": DBT_PROJECT,
        "packages.yml": f"packages:\n  - local: {REPO / 'dbt'}\n",
        "snapshots/raw_snap.sql": RAW_SNAPSHOT,
        "snapshots/snap.sql": SNAPSHOT,
        "seeds/colors.csv": colors_csv(1),
        "models/sources.yml": SOURCES,
        **{f"models/{name}.sql": sql for name, sql in MODELS.items()},
    }.items():
        path = project / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    profile = subprocess.run(
        [PY, "-m", "srdp", "dbt-profile", "--config", str(cfg), "--profile", "lt", "--schema", "curated"],
        cwd=root, capture_output=True, text=True, timeout=120,
    )
    assert profile.returncode == 0, profile.stderr
    (root / "profiles").mkdir()
    (root / "profiles" / "profiles.yml").write_text(profile.stdout)
    return project


def load_raw(cfg: Path) -> None:
    """dlt's part: lake.raw.orders, written with author dlt."""
    con = srdp.connect(config=cfg)
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    con.execute("BEGIN")
    con.execute("CALL lake.set_commit_message('dlt', 'test load')")
    con.execute("CREATE SCHEMA lake.raw")
    con.execute("CREATE TABLE lake.raw.orders AS SELECT * FROM (VALUES (1, 10), (2, 20), (3, 30)) t(id, amount)")
    con.execute("COMMIT")
    con.close()


def gen_vars(gen: int) -> list[str]:
    return ["--vars", json.dumps({"gen": gen, **{name: mats[gen - 1] for name, mats in SWITCHES.items()}})]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("dbt_lake_target")
    cfg = write_config(root, SRDP_TOML)
    load_raw(cfg)
    project = make_project(root, cfg)
    (root / "home").mkdir()
    env = {
        "HOME": str(root / "home"),
        "DBT_PROFILES_DIR": str(root / "profiles"),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "DO_NOT_TRACK": "1",
        "SRDP_CONFIG": "",
    }
    seed = str(project / "seeds" / "colors.csv")
    steps = [Step("deps", ["deps"])]
    steps += [Step(f"run {g}", ["build", "--exclude", "raw_snap", *gen_vars(g)], files={seed: colors_csv(g)})
              for g in (1, 2, 3, 4)]
    steps += [Step("refused", ["build", "--select", "facts", "raw_snap", *gen_vars(4)])]
    catalog = cfg.parent / "lake" / "catalog.sqlite"
    results = run_session(project, env, steps, catalog)

    if not all(r.success for label, r in results.items() if label != "refused"):
        return {"steps": results, "read": None, "cfg": cfg, "root": root}
    con = srdp.connect(config=cfg)
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'reader')").fetchall()
    versions = {}
    for g in (1, 2, 3, 4):
        at = f" AT (VERSION => {results[f'run {g}'].snapshot})"
        versions[g] = {name: sorted(con.execute(f"SELECT id, gen FROM lake.curated.{name}{at}").fetchall())
                       for name in SWITCHES}
    meta = '"__ducklake_metadata_lake".main'
    read = {
        "versions": versions,
        "types": {name: con.execute(
            "SELECT table_type FROM information_schema.tables WHERE table_catalog = 'lake' AND table_name = ?",
            [name]).fetchall() for name in SWITCHES},
        "facts": con.execute("SELECT * FROM lake.curated.facts").fetchall(),
        "orders_clean": sorted(con.execute("SELECT * FROM lake.curated.orders_clean").fetchall()),
        "two_part": con.execute("SELECT n FROM lake.curated.two_part").fetchall(),
        "failures": sorted(con.execute(
            "SELECT * FROM lake.curated_dbt_test__audit.accepted_values_orders_clean_amount__10__20").fetchall()),
        "audit": con.execute(
            "SELECT snapshot_id, author, commit_message, schema_name, table_name, change, allowed, note "
            "FROM srdp_write_audit('lake') WHERE snapshot_id IS NOT NULL ORDER BY snapshot_id").fetchall(),
        "authors": con.execute(f"SELECT snapshot_id, author FROM {meta}.ducklake_snapshot_changes ORDER BY 1").fetchall(),
        "schemas": sorted(r[0] for r in con.execute(
            f"SELECT schema_name FROM {meta}.ducklake_schema WHERE end_snapshot IS NULL").fetchall()),
    }
    con.close()
    return {"steps": results, "read": read, "cfg": cfg, "root": root}


def step(lake: dict[str, Any], label: str) -> StepResult:
    return lake["steps"][label]


@pytest.fixture(scope="module")
def read(lake: dict[str, Any]) -> dict[str, Any]:
    """What the lake holds after the session (the session must have succeeded)."""
    failed = [f"{label}:\n{r.text}" for label, r in lake["steps"].items() if label != "refused" and not r.success]
    assert lake["read"] is not None, "\n".join(failed)
    return lake["read"]


def test_profile_declares_the_lake_as_target_database(lake: dict[str, Any]) -> None:
    profile = (lake["root"] / "profiles" / "profiles.yml").read_text()
    assert '      database: "lake"\n' in profile
    assert '        - path: "ducklake:srdp:lake"\n          alias: "lake"\n          is_ducklake: true\n' in profile
    assert '            catalog: "lake"\n' in profile
    assert "on-run-start" not in profile and "+database" not in profile


def test_every_run_builds_with_no_hooks_in_the_results(lake: dict[str, Any]) -> None:
    assert step(lake, "deps").success, step(lake, "deps").text
    for gen in (1, 2, 3, 4):
        run = step(lake, f"run {gen}")
        assert run.success, run.text
        # 5 models, the seed, the snapshot and the test: no hook among the results.
        assert "Done. PASS=7 WARN=1 ERROR=0 SKIP=0 NO-OP=0 TOTAL=8" in run.text, run.text
        assert "hook" not in run.text


def test_target_database_is_the_lake_and_dbt_duckdb_knows_it_is_a_ducklake(lake: dict[str, Any], read: dict[str, Any]) -> None:
    assert read["facts"] == [("lake", True, "lake")]
    # A source without database: is the lake's raw.orders (dlt's), not memory.raw.orders.
    assert read["orders_clean"] == [(1, 10), (2, 20), (3, 30)]
    # `{{ this.schema }}.colors` binds to the lake's seed.
    assert read["two_part"] == [(3,)]
    # --store-failures: the failing row is kept in the lake, under the audit schema.
    assert read["failures"] == [(30, 1)]
    assert "memory" not in step(lake, "run 1").text


def test_switching_between_view_table_and_incremental_both_ways(lake: dict[str, Any], read: dict[str, Any]) -> None:
    versions = read["versions"]
    for gen in (1, 2, 3, 4):
        for name, mats in SWITCHES.items():
            rows = [(i, gen) for i in range(gen)]
            if mats[gen - 1] == "incremental" and mats[gen - 2] == "table":
                rows = sorted(versions[gen - 1][name] + rows)  # dbt appends to the existing table
            assert versions[gen][name] == rows, (name, gen, mats)
    assert read["types"] == {"sw_a": [("VIEW",)], "sw_b": [("VIEW",)]}
    for gen, (a, b) in enumerate(zip(*SWITCHES.values()), start=1):
        text = step(lake, f"run {gen}").text
        kind = {"view": "view model", "table": "table model", "incremental": "incremental model"}
        assert f"OK created sql {kind[a]} curated.sw_a" in text, text
        assert f"OK created sql {kind[b]} curated.sw_b" in text, text


def test_every_dbt_write_is_audited_with_author_dbt(lake: dict[str, Any], read: dict[str, Any]) -> None:
    audit = read["audit"]
    dbt_rows = [row for row in audit if row[0] > 0 and row[1] != "dlt"]  # 0: DuckLake creates main
    assert dbt_rows, audit
    assert {row[1] for row in dbt_rows} == {"dbt"}, [r for r in dbt_rows if r[1] != "dbt"]
    assert all(row[6] for row in audit), [r for r in audit if not r[6]]
    messages = {row[2].split(" ", 3)[3] for row in dbt_rows}
    assert {"seed colors", "snapshot snap", "model sw_a", "model orders_clean", "schema curated",
            "test accepted_values_orders_clean_amount__10__20",
            "drop curated_dbt_test__audit.accepted_values_orders_clean_amount__10__20"} <= messages, messages


def test_a_foreign_schema_is_refused_and_nothing_is_written(lake: dict[str, Any]) -> None:
    refused = step(lake, "refused")
    assert not refused.success
    assert (
        "srdp_check_writer: writer 'dbt' may not write schema 'raw' of catalog 'lake': it is owned by 'dlt' "
        "(single_writer). 'dbt' may write: curated, curated_dbt_test__audit."
    ) in refused.text, refused.text
    assert refused.snapshot == step(lake, "run 4").snapshot
