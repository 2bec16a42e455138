"""A schema pattern in srdp.toml (``[catalogs.lake.schemas."dbt_*"]``) gives dbt its derived
schemas, through real dbt on a real DuckLake: a developer's target schema ``dbt_alice`` (chosen by
``python -m srdp dbt-profile --schema``), the custom schema dbt derives from it
(``dbt_alice_marts``) and its stored test failures (``dbt_alice_dbt_test__audit``) are written
with no entry each, and ``srdp_write_audit`` names the pattern that allowed each write. A file
whose pattern could match another writer's schema is refused when it is read.
"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path
from typing import Any

import duckdb
import pytest

import srdp

from conftest import PY, REPO, write_config
from dbt_session import Step, run_session

SRDP_TOML = """
[catalogs.lake]
metadata = "sqlite:lake/catalog.sqlite"
data_path = "lake/data/"

[catalogs.lake.schemas.raw]
writer = "dlt"
layer = "raw"

[catalogs.lake.schemas."dbt_*"]
writer = "dbt"
layer = "curated"
"""

FILES = {
    "dbt_project.yml": """
        name: pt
        version: "1.0.0"
        config-version: 2
        profile: pt
        flags:
          send_anonymous_usage_stats: false
        dispatch:
          - macro_namespace: dbt
            search_order: [pt, srdp, dbt]
    """,
    "models/base.sql": "{{ config(materialized='table') }} select range::INTEGER as id from range(5)",
    "models/mart.sql": "{{ config(materialized='table', schema='marts') }} select count(*) as n from {{ ref('base') }}",
    "models/schema.yml": """
        version: 2
        models:
          - name: base
            columns:
              - name: id
                data_tests:
                  - accepted_values:
                      arguments: {values: [0, 1, 2]}
                      config: {store_failures: true, severity: warn}
    """,
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("schema_patterns")
    cfg = write_config(root, SRDP_TOML)
    project = root / "project"
    files = {**FILES, "packages.yml": f"packages:\n  - local: {REPO / 'dbt'}\n"}
    for relative, text in files.items():
        path = project / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    profile = subprocess.run(
        [PY, "-m", "srdp", "dbt-profile", "--config", str(cfg), "--profile", "pt", "--schema", "dbt_alice"],
        cwd=root, capture_output=True, text=True, timeout=120,
    )
    assert profile.returncode == 0, profile.stderr
    (root / "profiles").mkdir()
    (root / "profiles" / "profiles.yml").write_text(profile.stdout)
    (root / "home").mkdir()
    env = {"HOME": str(root / "home"), "DBT_PROFILES_DIR": str(root / "profiles"),
           "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DO_NOT_TRACK": "1", "SRDP_CONFIG": ""}
    results = run_session(project, env, [Step("deps", ["deps"]), Step("build", ["build"])], None)
    assert results["build"].success, results["build"].text
    con = srdp.connect(config=cfg)
    con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
    read = {
        "base": con.execute("SELECT count(*), sum(id) FROM lake.dbt_alice.base").fetchall(),
        "mart": con.execute("SELECT n FROM lake.dbt_alice_marts.mart").fetchall(),
        "failures": sorted(con.execute(
            "SELECT * FROM lake.dbt_alice_dbt_test__audit.accepted_values_base_id__0__1__2").fetchall()),
        "audit": con.execute(
            "SELECT DISTINCT schema_name, author, owner, ownership, allowed FROM srdp_write_audit('lake') "
            "WHERE snapshot_id > 0 ORDER BY ALL").fetchall(),
    }
    con.close()
    return read


def test_dbt_writes_its_derived_schemas_under_one_pattern(built: dict[str, Any]) -> None:
    assert built["base"] == [(5, 10)]
    assert built["mart"] == [(5,)]
    assert built["failures"] == [(3, 1), (4, 1)]
    assert built["audit"] == [
        ("dbt_alice", "dbt", "dbt", "pattern 'dbt_*'", True),
        ("dbt_alice_dbt_test__audit", "dbt", "dbt", "pattern 'dbt_*'", True),
        ("dbt_alice_marts", "dbt", "dbt", "pattern 'dbt_*'", True),
    ]


def test_a_pattern_matching_another_writers_schema_is_refused_when_the_file_is_read(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, SRDP_TOML + '\n[catalogs.lake.schemas."ra*"]\nwriter = "io_manager"\nlayer = "serving"\n')
    con = srdp.connect(config=cfg)
    try:
        with pytest.raises(duckdb.Error) as refused:
            con.execute("SELECT * FROM srdp_check_writer('lake', 'dbt_alice', 'dbt')").fetchall()
    finally:
        con.close()
    assert str(refused.value).split("\n")[0] == (
        f"Binder Error: srdp_check_writer: {cfg}:13: key 'catalogs.lake.schemas.\"ra*\"': pattern \"ra*\" of writer 'io_manager' matches "
        "schema \"raw\" (line 5) of writer 'dlt'; with the single_writer rule on, a schema has exactly one "
        "writer. Narrow the pattern, rename the schema, or relax the rule with the line "
        "`single_writer = false` under [rules]")
