"""docs/scale-out.md's one dbt schema per developer: a schema pattern ``dbt_*`` for dbt, a profile
rendered once by ``python -m srdp dbt-profile --schema dbt_dev`` whose ``schema:`` line then reads
the developer's name through ``env_var()``. Two real ``dbt run``s with ``DBT_DEVELOPER=alice`` and
``bob`` build ``lake.dbt_alice.orders`` and ``lake.dbt_bob.orders``, read back through srdp."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import srdp
from conftest import REPO, write_config

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/"

[catalogs.lake.schemas."dbt_*"]
writer = "dbt"
layer = "curated"
"""

PROJECT = "name: shop\nversion: '1.0.0'\nconfig-version: 2\nprofile: srdp\n"


def test_each_developer_builds_in_their_own_schema(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, CONFIG)
    profile = subprocess.run(
        [sys.executable, "-m", "srdp", "dbt-profile", "--config", str(cfg), "--schema", "dbt_dev"],
        capture_output=True, text=True, check=True,
    ).stdout
    fixed = '      schema: "dbt_dev"\n'
    assert fixed in profile
    project = tmp_path / "dbt"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(PROJECT)
    (project / "models" / "orders.sql").write_text("{{ config(materialized='table') }}\nselect range as id from range(4)\n")
    (project / "profiles.yml").write_text(profile.replace(fixed, "      schema: \"dbt_{{ env_var('DBT_DEVELOPER') }}\"\n"))
    for developer in ("alice", "bob"):
        done = subprocess.run(
            [str(REPO / ".venv" / "bin" / "dbt"), "--no-use-colors", "run", "--profiles-dir", "."], cwd=project,
            env={**os.environ, "DBT_DEVELOPER": developer, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"},
            capture_output=True, text=True, timeout=600,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    con = srdp.connect(config=cfg)
    try:
        srdp.call(con, "srdp_attach_catalog", "lake")
        assert con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'lake' ORDER BY ALL"
        ).fetchall() == [("dbt_alice", "orders"), ("dbt_bob", "orders")]
        for schema in ("dbt_alice", "dbt_bob"):
            assert con.execute(f"SELECT count(*), sum(id) FROM lake.{schema}.orders").fetchone() == (4, 6)
    finally:
        con.close()
