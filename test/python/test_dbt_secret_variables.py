"""A dbt user whose secret variable is missing gets one line naming the environment variable the
profile reads: no traceback, and no word of DuckDB's ``CREATE SECRET``, which a dbt user never
writes. Real ``dbt run`` with the profile ``python -m srdp dbt-profile`` renders:

* on PostgreSQL + S3 (the test servers), the password variable empty or unset (dbt renders an
  unset ``DBT_ENV_SECRET_*`` variable as nothing): dbt-duckdb creates the secret without a
  password, PostgreSQL refuses it, and srdp's message would speak of ``CREATE SECRET``;
* on SQLite with a ``writer_secret``, a profile without the secret's entry (rendered before the
  catalog had one): srdp's attach finds no secret, and the line says which variables the
  re-rendered profile reads.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, write_config
from pg_lake import new_lake

BIN = REPO / ".venv" / "bin"

PROJECT = "name: shop\nversion: '1.0.0'\nconfig-version: 2\nprofile: srdp\n"

SCHEMA = '\n[catalogs.lake.schemas.curated]\nwriter = "dbt"\nlayer = "curated"\n'


def dbt_run(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PG_WRITER", "DBT_ENV_SECRET", "LAKE_WRITER"))}
    return subprocess.run(
        [str(BIN / "dbt"), "--no-use-colors", "run", "--profiles-dir", "."],
        cwd=project, env={**base, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", **env},
        capture_output=True, text=True, timeout=600,
    )


def project_with_profile(folder: Path, cfg: Path) -> Path:
    project = folder / "dbt"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(PROJECT)
    (project / "models" / "orders.sql").write_text("select 1 as id\n")
    profile = subprocess.run(
        [sys.executable, "-m", "srdp", "dbt-profile", "--config", str(cfg)], capture_output=True, text=True, check=True
    ).stdout
    (project / "profiles.yml").write_text(profile)
    return project


def error_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    """What dbt printed after ``Encountered an error:`` (timestamps and blank lines left out)."""
    out = done.stdout + done.stderr
    assert "Traceback" not in out and "CREATE SECRET" not in out and "CREATE OR REPLACE SECRET" not in out, out
    tail = out.split("Encountered an error:", 1)[1]
    return [line.strip() for line in tail.splitlines() if line.strip()]


def test_an_empty_password_variable_is_named_in_one_line(servers: object, tmp_path: Path) -> None:
    lake = new_lake(servers, tmp_path, extra=SCHEMA)
    project = project_with_profile(tmp_path, lake.cfg)
    s = servers
    env = {
        "PG_WRITER_USER": lake.writer_user,
        "DBT_ENV_SECRET_PG_WRITER_PASSWORD": "",
        "PG_WRITER_S3_KEY_ID": s.s3_access_key,  # type: ignore[attr-defined]
        "DBT_ENV_SECRET_PG_WRITER_S3_SECRET": s.s3_secret_key,  # type: ignore[attr-defined]
        "PG_WRITER_S3_REGION": s.s3_region,  # type: ignore[attr-defined]
        "PG_WRITER_S3_ENDPOINT": s.s3_endpoint,  # type: ignore[attr-defined]
        "PG_WRITER_S3_URL_STYLE": "path",
        "PG_WRITER_S3_USE_SSL": "false",
    }
    done = dbt_run(project, env)
    assert done.returncode == 2
    assert error_lines(done) == [
        "Database Error",
        "srdp.dbt.plugin: the profile's secrets: block reads environment variable DBT_ENV_SECRET_PG_WRITER_PASSWORD "
        "(empty) for DuckDB secret 'pg_writer', which srdp's attach of catalog 'lake' needs. Set it where dbt runs",
    ]
    # Unset: dbt renders it as nothing, and PostgreSQL is asked without a password.
    del env["DBT_ENV_SECRET_PG_WRITER_PASSWORD"]
    done = dbt_run(project, env)
    assert done.returncode == 2
    assert error_lines(done) == [
        "Database Error",
        "srdp.dbt.plugin: the profile's secrets: block reads environment variable DBT_ENV_SECRET_PG_WRITER_PASSWORD "
        "(not set) for DuckDB secret 'pg_writer', which srdp's attach of catalog 'lake' needs. Set it where dbt runs",
    ]
    # With the password the same profile runs the model.
    env["DBT_ENV_SECRET_PG_WRITER_PASSWORD"] = lake.writer_password
    done = dbt_run(project, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS=1" in done.stdout


@pytest.mark.parametrize("variables", ["unset", "set"])
def test_a_profile_without_the_secrets_entry_says_which_variables_its_rendering_reads(tmp_path: Path, variables: str) -> None:
    cfg = write_config(tmp_path, """
        [catalogs.lake]
        metadata = "sqlite:catalog/lake.sqlite"
        data_path = "data/"
    """ + SCHEMA)
    project = project_with_profile(tmp_path, cfg)
    # The catalog gets a writer secret after the profile was rendered.
    cfg.write_text(cfg.read_text().replace('data_path = "data/"\n', 'data_path = "data/"\nwriter_secret = "lake_writer"\n'))
    env = {"LAKE_WRITER_USER": "u", "DBT_ENV_SECRET_LAKE_WRITER_PASSWORD": "pw-not-in-any-message"} if variables == "set" else {}
    done = dbt_run(project, env)
    assert done.returncode == 2
    assert error_lines(done) == [
        "Database Error",
        "srdp.dbt.plugin: catalog 'lake' needs DuckDB secret 'lake_writer' for the writer role, and the profile has "
        "no secrets: entry named 'lake_writer'; render it again with `python -m srdp dbt-profile` (its entry reads "
        "LAKE_WRITER_USER and DBT_ENV_SECRET_LAKE_WRITER_PASSWORD from the environment)",
    ]
