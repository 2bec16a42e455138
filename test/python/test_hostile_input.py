"""Hostile input: NUL bytes in every text argument of every srdp function, a file that is not
TOML passed as the definition, and passwords hidden in libpq's looser forms.

Each case would pass on a build that cuts text at the first NUL byte, echoes the first line of
a non-TOML file, or only skips spaces around libpq's ``=``; the host process lives on after all.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from conftest import write_config

# Positional parameters, by the names srdp gives them in its messages.
POSITIONAL = {
    "srdp_attach_catalog": ["catalog"],
    "srdp_catalog_pressure": ["catalog"],
    "srdp_check_writer": ["catalog", "schema_name", "writer"],
    "srdp_compact": ["catalog"],
    "srdp_dlt_destination": ["catalog"],
    "srdp_flush": ["catalog"],
    "srdp_inlined_row_count": ["catalog"],
    "srdp_postgres_roles": ["catalog"],
    "srdp_retry_wait": ["catalog", "message"],
    "srdp_rules": ["catalog"],
    "srdp_table_name": ["catalog", "schema_name", "table_name"],
    "srdp_write_audit": ["catalog"],
    "srdp_catalogs": [],
    "srdp_version": [],
}
# A valid value per positional position, so only the poisoned argument is wrong.
VALID = {"catalog": "lake", "schema_name": "raw", "writer": "dlt", "table_name": "orders", "message": "x"}
NUL_TEXT = "'lake' || chr(0) || 'zzz'"

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"

[catalogs.lake.schemas.raw]
writer = "dlt"
layer = "raw"
"""


def text_parameters(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, bool]]:
    """(function, parameter, positional) for every VARCHAR parameter of every srdp function."""
    rows = con.execute(
        "SELECT function_name, parameters, parameter_types FROM duckdb_functions() "
        "WHERE function_name LIKE 'srdp\\_%' ESCAPE '\\' ORDER BY function_name"
    ).fetchall()
    found = []
    for name, params, types in rows:
        positional = iter(POSITIONAL[name])
        for param, kind in zip(params, types):
            if param.startswith("col"):
                found.append((name, next(positional), True))
            elif kind == "VARCHAR":
                found.append((name, param, False))
    return found


def call_with_nul(function: str, parameter: str, positional: bool) -> str:
    args = []
    for p in POSITIONAL[function]:
        args.append(NUL_TEXT if positional and p == parameter else f"'{VALID[p]}'")
    if not positional:
        args.append(f"{parameter} := {NUL_TEXT}")
    if function == "srdp_retry_wait":
        args += ["attempt := 1", "elapsed_ms := 0"]
    return f"SELECT * FROM {function}({', '.join(args)})"


def test_a_nul_byte_in_any_text_argument_is_an_error_naming_it(connect, tmp_path: Path) -> None:
    config = write_config(tmp_path, CONFIG)
    con = connect(config=str(config))
    params = text_parameters(con)
    # Every function with text arguments is covered, config := included everywhere.
    assert {f for f, _, _ in params} == set(POSITIONAL)
    assert sum(1 for _, p, _ in params if p == "config") == len(POSITIONAL)
    assert len(params) == 46
    for function, parameter, positional in params:
        sql = call_with_nul(function, parameter, positional)
        shown = parameter if positional else f"{parameter} :="
        with pytest.raises(duckdb.Error) as failure:
            con.execute(sql).fetchall()
        assert f"{function}: {shown} contains a NUL byte (chr(0)); pass the text without it" in str(
            failure.value
        ), sql
    # Nothing was attached by any of those calls, and the connection still works.
    assert con.execute(
        "SELECT count(*) FROM duckdb_databases() WHERE database_name = 'lake'"
    ).fetchone() == (0,)
    assert con.execute("SELECT attached FROM srdp_catalogs()").fetchall() == [(False,)]


def test_a_nul_byte_in_the_srdp_config_setting_is_an_error(connect, tmp_path: Path) -> None:
    config = write_config(tmp_path, CONFIG)
    con = connect()
    con.execute(f"SET srdp_config = '{config}' || chr(0) || '.bak'")
    with pytest.raises(duckdb.Error, match=r"srdp_catalogs: the setting srdp_config contains a NUL byte"):
        con.execute("SELECT * FROM srdp_catalogs()").fetchall()


def test_a_file_that_is_not_toml_is_not_echoed(connect, tmp_path: Path) -> None:
    pgpass = tmp_path / ".pgpass"
    pgpass.write_text("db.internal:5432:*:lake_writer:Secret1\n")
    env_file = tmp_path / "app.env"
    env_file.write_text("# app\nPGPASSWORD=Secret1\n")
    con = connect()
    for path, expected in [
        (pgpass, f"srdp_catalogs: {pgpass}:1: column 39: key with no value, expected `=`"),
        (env_file, f"srdp_catalogs: {env_file}:2: key 'PGPASSWORD': column 12: "),
    ]:
        with pytest.raises(duckdb.Error) as failure:
            con.execute(f"SELECT * FROM srdp_catalogs(config := '{path}')").fetchall()
        message = str(failure.value)
        assert expected in message
        assert "Secret1" not in message
        assert "lake_writer" not in message


@pytest.mark.parametrize(
    "conninfo",
    [
        "dbname=x host=127.0.0.1 port=1 password\\t=Secret1",
        "dbname=x host=127.0.0.1 port=1 password\\n=Secret1",
        "dbname=x host=127.0.0.1 port=1 password\\r\\n= Secret1",
        "dbname=x password = 'Sec ret1'",
        "dbname=x password='Sec\\\\'ret1'",
        "dbname=x sslpassword=Secret1",
        "postgresql://lake:Secret1@127.0.0.1:1/x",
        "postgres://127.0.0.1:1/x?password=Secret1",
    ],
)
def test_every_libpq_password_form_is_refused_everywhere(connect, tmp_path: Path, conninfo: str) -> None:
    config = write_config(
        tmp_path,
        f"""
        [catalogs.pg]
        metadata = "postgres:{conninfo}"
        data_path = "s3://bucket/lake/"
        """,
    )
    con = connect(config=str(config))
    expected = (
        f"{config}:2: key 'catalogs.pg.metadata': contains a password; secrets never live in "
        "srdp.toml: put the credentials in a DuckDB secret and name it in writer_secret / reader_secret"
    )
    for sql in [
        "SELECT * FROM srdp_catalogs()",
        "SELECT * FROM srdp_dlt_destination('pg')",
        "SELECT * FROM srdp_attach_catalog('pg', role := 'writer')",
        "SELECT * FROM srdp_postgres_roles('pg')",
    ]:
        with pytest.raises(duckdb.Error) as failure:
            con.execute(sql).fetchall()
        message = str(failure.value)
        assert expected in message, sql
        assert "Secret1" not in message and "ret1" not in message
    assert con.execute(
        "SELECT count(*) FROM duckdb_databases() WHERE database_name = 'pg'"
    ).fetchone() == (0,)
