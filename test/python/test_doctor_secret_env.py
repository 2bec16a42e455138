"""``python -m srdp doctor --secret-env NAME`` checks the recommended scale-out set-up, secrets
only from the environment: the same ``*_SECRET_SQL`` variables Dagster's ``secrets=[dg.EnvVar(...)]``
reads run before each attach, on a PostgreSQL catalog with S3 data (the test servers). Without
them the attaches fail as they did; an unset variable or a statement DuckDB refuses is one FAIL
line that shows no statement. No password appears in any output.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pg_lake import new_lake

VARIABLES = ["PG_WRITER_SECRET_SQL", "PG_READER_SECRET_SQL", "S3_SECRET_SQL"]


def doctor(cfg: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    return subprocess.run(
        [sys.executable, "-m", "srdp", "doctor", "--config", str(cfg), *args],
        cwd=cfg.parent, env={**base, **(env or {})}, capture_output=True, text=True, timeout=300,
    )


def catalog_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The lines after the config line (the extras line left out: it depends on the venv)."""
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("ok   config:")) + 1
    return [line for line in lines[start:] if not line.startswith("ok   extras:")]


def test_doctor_checks_the_attach_with_secrets_from_the_environment(servers: object, tmp_path: Path) -> None:
    lake = new_lake(servers, tmp_path)
    writer_sql, reader_sql = (
        lake.pg_secret_sql("pg_writer", lake.writer_user, lake.writer_password),
        lake.pg_secret_sql("pg_reader", lake.reader_user, lake.reader_password),
    )
    env = dict(zip(VARIABLES, [writer_sql, reader_sql, lake.s3_secret_sql()]))
    flags = [a for name in VARIABLES for a in ("--secret-env", name)]

    # What the issue saw: with the secrets only in the environment, doctor could not attach.
    without = doctor(lake.cfg, "--create", env=env)
    assert without.returncode == 1
    assert [line.split(":", 2)[:2] for line in catalog_lines(without)] == [
        ["FAIL catalog lake", " attach as writer failed"],
        ["FAIL catalog lake", " attach as reader failed"],
    ]
    assert "needs the DuckDB secret 'pg_writer' for the writer role" in without.stdout

    done = doctor(lake.cfg, "--create", *flags, env=env)
    assert (done.returncode, done.stderr) == (0, "")
    assert catalog_lines(done) == [
        "ok   secrets: 3 CREATE SECRET statements from PG_WRITER_SECRET_SQL, PG_READER_SECRET_SQL, S3_SECRET_SQL, "
        "run before each attach",
        "ok   catalog lake: attaches as writer (read-write), which created the lake",
        "ok   catalog lake: attaches as reader (read-only)",
        "all 7 checks passed",
    ]
    # The lake exists now: both roles again, without --create.
    again = doctor(lake.cfg, *flags, env=env)
    assert catalog_lines(again)[1:] == [
        "ok   catalog lake: attaches as writer (read-write)",
        "ok   catalog lake: attaches as reader (read-only)",
        "all 7 checks passed",
    ]
    for output in (without, done, again):
        assert lake.writer_password not in output.stdout + output.stderr


def test_an_unset_or_refused_secret_variable_is_one_line_without_the_statement(tmp_path: Path) -> None:
    cfg = tmp_path / "srdp.toml"
    cfg.write_text('[catalogs.lake]\nmetadata = "sqlite:catalog/lake.sqlite"\ndata_path = "data/"\nwriter_secret = "w"\n')
    unset = doctor(cfg, "--secret-env", "PG_WRITER_SECRET_SQL")
    assert unset.returncode == 1
    assert catalog_lines(unset) == [
        "FAIL secrets: environment variable PG_WRITER_SECRET_SQL is not set; it must hold one CREATE SECRET statement"
    ]
    refused = doctor(cfg, "--secret-env", "PG_WRITER_SECRET_SQL",
                     env={"PG_WRITER_SECRET_SQL": "CREATE SECRET w (TYPE nonsense, PASSWORD 'hunter2-doctor')"})
    assert refused.returncode == 1
    assert catalog_lines(refused) == [
        "FAIL secrets: environment variable PG_WRITER_SECRET_SQL: DuckDB refused it (InvalidInputException); the "
        "statement and DuckDB's message are not shown because they may hold credentials"
    ]
    assert "hunter2" not in refused.stdout + refused.stderr
    # A good statement: the writer's attach finds its secret (the lake is created with --create).
    good = doctor(cfg, "--create", "--secret-env", "PG_WRITER_SECRET_SQL",
                  env={"PG_WRITER_SECRET_SQL": "CREATE SECRET w (TYPE s3, KEY_ID 'k', SECRET 'hunter2-doctor')"})
    assert (good.returncode, good.stderr) == (0, "")
    assert catalog_lines(good)[:2] == [
        "ok   secrets: 1 CREATE SECRET statement from PG_WRITER_SECRET_SQL, run before each attach",
        "ok   catalog lake: attaches as writer (read-write), which created the lake",
    ]
    assert "hunter2" not in good.stdout
