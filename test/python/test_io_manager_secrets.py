"""SrdpIOManager's ``secrets`` setting: CREATE SECRET statements run on the IO manager's connection
before it attaches (the PostgreSQL role secrets and the S3 credentials of a shared lake; the
round trip on real PostgreSQL + S3 is in test_io_manager_concurrency). A statement that is not
exactly one CREATE SECRET, or that DuckDB refuses, fails the write before anything is attached
or written, and neither the statement nor DuckDB's message about it (which quotes it) appears in
the error, its causes or the run's log.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest

import srdp
from conftest import write_config

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"

[catalogs.lake.schemas.analytics]
writer = "io_manager"
layer = "curated"
"""

PASSWORD = "Pa55-w0rd-never-shown"
HIDDEN = "the statement and DuckDB's message are not shown because they may hold credentials"

PERSISTENT = (
    "it would store the secret on disk (PERSISTENT, or IN a storage other than memory), in plain text under "
    "~/.duckdb/stored_secrets where every later DuckDB process of this OS user loads it; srdp runs temporary "
    "secrets only: write CREATE SECRET or CREATE TEMPORARY SECRET, without PERSISTENT and IN"
)

#: statement, where the run stops ("set-up": the IO manager's set-up, before any step writes;
#: "write": at the write, before it attaches), the error's class and its message after the index.
CASES = {
    "unterminated": (
        f"CREATE SECRET s (TYPE postgres, PASSWORD '{PASSWORD}",
        "set-up", "SecretStatementError", "it does not parse (ParserException)",
    ),
    "two statements": (
        f"CREATE SECRET s (TYPE s3, SECRET '{PASSWORD}'); SELECT 1",
        "set-up", "SecretStatementError", "it must be exactly one CREATE SECRET statement (found 2 statement(s))",
    ),
    "not a secret": (
        f"SELECT '{PASSWORD}'",
        "set-up", "SecretStatementError", "it must be exactly one CREATE SECRET statement (found 1 statement(s))",
    ),
    "persistent": (f"CREATE PERSISTENT SECRET s (TYPE postgres, PASSWORD '{PASSWORD}')", "set-up", "SecretStatementError", PERSISTENT),
    "in local_file": (f"CREATE SECRET s IN local_file (TYPE postgres, PASSWORD '{PASSWORD}')", "set-up", "SecretStatementError", PERSISTENT),
    "refused by DuckDB": (f"CREATE SECRET s (TYPE s3, BOGUS '{PASSWORD}')", "write", "LakeError", "DuckDB refused it (BinderException)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_secret_statement_fails_the_write_without_showing_it(
    tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from srdp.dagster.io_manager import SrdpIOManager

    statement, where, cls, problem = CASES[case]
    cfg = write_config(tmp_path, CONFIG)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("BAD_SECRET_SQL", statement)

    @dg.asset(key_prefix=["analytics"])
    def orders() -> pa.Table:
        return pa.table({"id": [1, 2, 3]})

    instance = dg.DagsterInstance.ephemeral()
    io_manager = SrdpIOManager(config_path=str(cfg), secrets=["CREATE SECRET ok (TYPE s3)", dg.EnvVar("BAD_SECRET_SQL")])
    result = dg.materialize([orders], resources={"io_manager": io_manager}, instance=instance, raise_on_error=False)
    assert not result.success
    init = [e for e in result.all_events if e.event_type_value == "RESOURCE_INIT_FAILURE"]
    if where == "set-up":
        (failure,) = init
        error = failure.event_specific_data.error
        index = "secrets[1] (dg.EnvVar('BAD_SECRET_SQL'))"
        module = "srdp.dagster.resource"
    else:
        assert init == []
        (failure,) = [e for e in result.all_events if e.is_step_failure]
        error = failure.step_failure_data.error.cause
        index, module = "secrets[1]", "srdp.lake.errors"
    assert error is not None and error.cls_name == cls
    assert error.message.strip() == f"{module}.{cls}: SrdpIOManager {index}: {problem}; {HIDDEN}"
    assert error.cause is None and error.context is None  # DuckDB's message is not chained
    everything = " ".join(str(e.user_message) for e in instance.all_logs(result.run_id)) + " ".join(
        e.event_specific_data.error.to_string()
        for e in result.all_events
        if getattr(e.event_specific_data, "error", None) is not None
    )
    assert PASSWORD not in everything
    # Nothing was attached or written: the lake does not even exist; nothing was persisted.
    assert not (tmp_path / "catalog").exists()
    assert not (home / ".duckdb" / "stored_secrets").exists()


def test_secrets_reach_the_attach(tmp_path: Path) -> None:
    """The statements run on the IO manager's own connection before srdp_attach_catalog needs
    them: a definition whose writer needs secret 'lake_writer' attaches only with it, also when
    the process's connection was opened without it by an earlier run."""
    from srdp.dagster.io_manager import SrdpIOManager
    from srdp.dagster.lake import LakeSession

    cfg = write_config(tmp_path, CONFIG.replace('data_path = "data/lake"', 'data_path = "data/lake"\nwriter_secret = "lake_writer"'))

    @dg.asset(key_prefix=["analytics"])
    def orders() -> pa.Table:
        return pa.table({"id": [1, 2, 3]})

    without = dg.materialize([orders], resources={"io_manager": SrdpIOManager(config_path=str(cfg))}, raise_on_error=False)
    (failure,) = [e for e in without.all_events if e.is_step_failure]
    assert "needs the DuckDB secret 'lake_writer' for the writer role" in failure.step_failure_data.error.to_string()

    secret = "CREATE OR REPLACE SECRET lake_writer (TYPE s3, KEY_ID 'k', SECRET 'not-a-real-one')"
    io_manager = SrdpIOManager(config_path=str(cfg), secrets=[secret])
    for _ in range(2):  # the second materialization reuses the connection and its secret
        assert dg.materialize([orders], resources={"io_manager": io_manager}).success
    session = LakeSession.get(str(cfg), "lake")
    assert session.con.execute("SELECT name, type FROM duckdb_secrets() WHERE name = 'lake_writer'").fetchall() == [
        ("lake_writer", "s3")
    ]
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        assert con.execute("SELECT count(*), sum(id) FROM lake.analytics.orders").fetchone() == (3, 6)
    finally:
        con.execute("DETACH lake")
        con.close()
