"""srdp_postgres_roles output is run by a superuser: names that try to break out of the
script's quoting are executed against the real test PostgreSQL server and stay names.

On a build whose DO blocks always used the tag ``$srdp$``, the role name below closed the block
early and the superuser's psql dropped table ``x``.
"""

from __future__ import annotations

import duckdb
import pytest

from conftest import write_config
from pg_lake import new_lake

HOSTILE_READER = "r$srdp$; DROP TABLE x; --"
HOSTILE_WRITER = "w$srdp1$'; DROP TABLE x; --\\"
HOSTILE_SCHEMA = "m$srdp$'\"; DROP TABLE x; --"


def test_hostile_names_cannot_break_out_of_the_role_script(servers, tmp_path, connect):
    lake = new_lake(servers, tmp_path, schema=HOSTILE_SCHEMA.replace('"', '\\"'))
    servers.psql("CREATE TABLE x (i int); INSERT INTO x VALUES (42)", lake.database)
    con = connect(config=lake.cfg)
    script = [
        row[0]
        for row in con.execute(
            "SELECT statement FROM srdp_postgres_roles('lake', reader_role := ?, writer_role := ?) ORDER BY seq",
            [HOSTILE_READER, HOSTILE_WRITER],
        ).fetchall()
    ]
    assert len(script) == 12
    # As docs/scale-out.md says: the whole script through psql with ON_ERROR_STOP, twice (idempotent).
    for _ in range(2):
        servers.psql(";\n".join(script), lake.database)
    assert servers.psql("SELECT i FROM x", lake.database).split() == ["42"]
    roles = servers.psql(
        "SELECT rolname || '|' || rolsuper || rolcreaterole FROM pg_roles "
        "WHERE rolname IN ($a$" + HOSTILE_READER + "$a$, $a$" + HOSTILE_WRITER + "$a$) ORDER BY 1"
    ).splitlines()
    assert roles == sorted([f"{HOSTILE_READER}|falsefalse", f"{HOSTILE_WRITER}|falsefalse"])
    owner = servers.psql(
        "SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = $a$" + HOSTILE_SCHEMA + "$a$",
        lake.database,
    ).strip()
    assert owner == HOSTILE_WRITER


def test_reserved_role_names_are_refused(tmp_path, connect):
    config = write_config(
        tmp_path,
        """
        [catalogs.pg]
        metadata = "postgres:dbname=lakecat host=127.0.0.1"
        data_path = "s3://bucket/lake/"
        """,
    )
    con = connect(config=str(config))
    with pytest.raises(duckdb.Error) as failure:
        con.execute("SELECT * FROM srdp_postgres_roles('pg')").fetchall()
    assert (
        "srdp_postgres_roles: reader_role 'pg_reader' starts with \"pg_\", a prefix PostgreSQL "
        "reserves for system roles and schemas; pass another name with reader_role := '...'"
    ) in str(failure.value)
    with pytest.raises(duckdb.Error, match="writer_role 'public' is a role name PostgreSQL reserves"):
        con.execute("SELECT * FROM srdp_postgres_roles('pg', reader_role := 'r', writer_role := 'public')").fetchall()
    rows = con.execute(
        "SELECT count(*) FROM srdp_postgres_roles('pg', reader_role := 'pgr', writer_role := 'pgw')"
    ).fetchone()
    assert rows == (12,)
