"""A PostgreSQL-catalog lake with an S3 data path on the test servers (see scripts/servers.py).

Each lake gets its own PostgreSQL database and bucket prefix. Credentials live only in DuckDB
secrets created by :meth:`PgLake.setup_sql` (never in srdp.toml), as in production.
"""

from __future__ import annotations

import itertools
import secrets
import urllib.error
from dataclasses import dataclass
from pathlib import Path

from conftest import write_config

BUCKET = "srdp-test"
_counter = itertools.count()


@dataclass
class PgLake:
    servers: object
    cfg: Path
    database: str
    schema: str
    prefix: str
    writer_user: str
    writer_password: str
    reader_user: str
    reader_password: str

    @property
    def data_path(self) -> str:
        return f"s3://{BUCKET}/{self.prefix}/"

    def s3_secret_sql(self) -> str:
        s = self.servers
        return (
            f"CREATE OR REPLACE SECRET srdp_test_s3 (TYPE s3, KEY_ID '{s.s3_access_key}', SECRET '{s.s3_secret_key}', "
            f"REGION '{s.s3_region}', ENDPOINT '{s.s3_endpoint}', URL_STYLE 'path', USE_SSL false)"
        )

    def pg_secret_sql(self, name: str, user: str, password: str) -> str:
        return (
            f"CREATE OR REPLACE SECRET {name} (TYPE postgres, HOST '127.0.0.1', PORT {self.servers.pg_port}, "
            f"DATABASE '{self.database}', USER '{user}', PASSWORD '{password}')"
        )

    def setup_sql(self) -> list[str]:
        """What a session runs before attaching: the S3 secret and both role secrets."""
        return [
            self.s3_secret_sql(),
            self.pg_secret_sql("pg_writer", self.writer_user, self.writer_password),
            self.pg_secret_sql("pg_reader", self.reader_user, self.reader_password),
        ]

    def connect(self, connect_fixture):
        con = connect_fixture(config=self.cfg)
        for statement in self.setup_sql():
            con.execute(statement)
        return con

    def objects(self, con) -> list[str]:
        """Every object under the lake's prefix in the bucket."""
        return sorted(r[0] for r in con.execute(f"SELECT file FROM glob('{self.data_path}**')").fetchall())


def config_text(servers, database: str, schema: str, prefix: str, extra: str = "") -> str:
    return f"""
[catalogs.lake]
metadata = "postgres:dbname={database} host=127.0.0.1 port={servers.pg_port}"
metadata_schema = "{schema}"
data_path = "s3://{BUCKET}/{prefix}/"
writer_secret = "pg_writer"
reader_secret = "pg_reader"
{extra}
"""


def new_lake(servers, tmp_path, schema: str = "lake", extra: str = "", roles: bool = False) -> PgLake:
    """A fresh database (and bucket prefix); the superuser is both roles unless ``roles``."""
    from servers import create_bucket

    n = next(_counter)
    database = f"cat_{n}_{secrets.token_hex(3)}"
    servers.psql(f"CREATE DATABASE {database}")
    try:
        create_bucket(servers, BUCKET)
    except urllib.error.HTTPError as e:
        if e.code != 409:  # BucketAlreadyOwnedByYou: an earlier lake created it
            raise
    prefix = database
    cfg = write_config(tmp_path, config_text(servers, database, schema, prefix, extra))
    return PgLake(
        servers, cfg, database, schema, prefix,
        writer_user=servers.pg_superuser, writer_password=servers.pg_password,
        reader_user=servers.pg_superuser, reader_password=servers.pg_password,
    )
