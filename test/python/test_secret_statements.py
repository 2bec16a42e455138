"""srdp runs temporary secrets only: every way of spelling a persistent CREATE SECRET is refused
before it runs, so DuckDB never writes a password in plain text under
``$HOME/.duckdb/stored_secrets`` (where every later DuckDB process of that OS user would load it).

The check (``srdp.lake.secrets``) serves every path that takes secret statements: the Dagster
resources (test_dagster_secrets, test_io_manager_secrets) and the IO manager's session, which the
landing promotion shares (here). Real DuckDB: its parser and tokenizer read the statement, and the
accepted spellings are run to show that DuckDB keeps each of them in memory.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import srdp
from conftest import write_config
from iomanager_support import _close_io_sessions_after_test  # noqa: F401
from srdp.lake import LakeError, LakeSession
from srdp.lake.secrets import PERSISTENT, create_secret, secret_problem

CONFIG = '[catalogs.lake]\nmetadata = "sqlite:catalog/lake.sqlite"\ndata_path = "data/lake"\n'
PASSWORD = "pw-never-stored"
OPTIONS = f"(TYPE s3, KEY_ID 'k', SECRET '{PASSWORD}')"

TEMPORARY = [
    f"CREATE SECRET s1 {OPTIONS}",
    f"CREATE OR REPLACE SECRET s2 {OPTIONS}",
    f"CREATE TEMPORARY SECRET s3 {OPTIONS}",
    f"create or replace temporary secret s4 {OPTIONS}",
    f"CREATE SECRET IF NOT EXISTS s5 {OPTIONS}",
    f'CREATE SECRET "in" {OPTIONS}',
    f"CREATE SECRET s6 IN memory {OPTIONS}",
    f"  CREATE SECRET -- a comment\n s7 {OPTIONS};",
]

PERSISTENT_SPELLINGS = [
    f"CREATE PERSISTENT SECRET p1 {OPTIONS}",
    f"create or replace persistent secret p2 {OPTIONS}",
    f"CREATE PERSISTENT SECRET IF NOT EXISTS p3 {OPTIONS}",
    f"CREATE PERSISTENT SECRET {OPTIONS}",
    f"CREATE SECRET p4 IN LOCAL_FILE {OPTIONS}",
    f"CREATE SECRET p5 in local_file {OPTIONS}",
    f'CREATE SECRET p6 IN "local_file" {OPTIONS}',
    f"CREATE SECRET IF NOT EXISTS p7 IN local_file {OPTIONS}",
    f"CREATE/* a comment */PERSISTENT SECRET p8 {OPTIONS}",
    f"CREATE\nPERSISTENT\tSECRET p9 {OPTIONS}",
    f"CREATE SECRET p10 IN some_other_storage {OPTIONS}",
]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of the test's own, so DuckDB's default secret folder is watched here."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    return folder


@pytest.mark.parametrize("statement", PERSISTENT_SPELLINGS)
def test_every_spelling_of_a_persistent_secret_is_refused_before_it_runs(tmp_path: Path, home: Path, statement: str) -> None:
    con = srdp.connect(config=write_config(tmp_path, CONFIG))
    try:
        assert secret_problem(con, statement) == PERSISTENT
        assert create_secret(con, statement) == PERSISTENT
        assert con.execute("SELECT count(*) FROM duckdb_secrets() WHERE name LIKE 'p%'").fetchone() == (0,)
    finally:
        con.close()
    assert PASSWORD not in PERSISTENT
    assert not (home / ".duckdb" / "stored_secrets").exists()


def test_every_spelling_of_a_temporary_secret_runs_and_stays_in_memory(tmp_path: Path, home: Path) -> None:
    con = srdp.connect(config=write_config(tmp_path, CONFIG))
    try:
        for statement in TEMPORARY:
            assert create_secret(con, statement) is None, statement
        found = con.execute(
            "SELECT name, persistent, storage FROM duckdb_secrets() WHERE name <> '__default_s3' ORDER BY name"
        ).fetchall()
    finally:
        con.close()
    assert found == [(n, False, "memory") for n in sorted(["s1", "s2", "s3", "s4", "s5", "in", "s6", "s7"])]
    assert not (home / ".duckdb" / "stored_secrets").exists()


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        ("SELECT 1", "it must be exactly one CREATE SECRET statement (found 1 statement(s))"),
        (f"CREATE SECRET s1 {OPTIONS}; CREATE SECRET s2 {OPTIONS}", "it must be exactly one CREATE SECRET statement (found 2 statement(s))"),
        ("CREATE TABLE secret (x INT)", "it must be exactly one CREATE SECRET statement (found 1 statement(s))"),
        (f"CREATE SECRET s IN {OPTIONS}", "it does not parse (ParserException)"),
    ],
)
def test_what_is_not_one_create_secret_is_refused(statement: str, problem: str) -> None:
    con = duckdb.connect()
    try:
        assert secret_problem(con, statement) == problem
    finally:
        con.close()


def test_the_io_managers_session_refuses_a_persistent_secret(tmp_path: Path, home: Path) -> None:
    """The session the IO manager and the landing promotion share checks its statements too."""
    cfg = write_config(tmp_path, CONFIG)
    with pytest.raises(LakeError) as refused:
        LakeSession.get(str(cfg), "lake", [f"CREATE SECRET ok {OPTIONS}", f"CREATE PERSISTENT SECRET p {OPTIONS}"])
    assert str(refused.value) == (
        f"SrdpIOManager secrets[1]: {PERSISTENT}; the statement and DuckDB's message are not shown because "
        "they may hold credentials"
    )
    assert refused.value.__cause__ is None and refused.value.__context__ is None
    assert not (home / ".duckdb" / "stored_secrets").exists()
