"""docs/scale-out.md ("Running at scale") followed as a platform team would, on the test servers
(PostgreSQL catalog, S3 data path; scripts/servers.py), with every credential only in environment
variables:

1. the DBA runs the role script by the page's one command (``duckdb ... > roles.sql && psql
   -v ON_ERROR_STOP=1 -f roles.sql``, taken from docs/scale-out.md itself) and sets both passwords;
2. what the writer role can and cannot reach: its catalog database only, temporary tables
   nowhere there; the two lines the script's comments give the DBA close the other databases;
3. one Dagster code location (a dlt strict load into raw, a pandas asset and its downstream read
   by the IO manager, srdp's maintenance job and pressure monitor) driven by the Dagster CLI, with
   ``add_srdp_definitions(..., secrets=[dg.EnvVar(...)])``; then ``dbt run`` twice with the
   profile ``python -m srdp dbt-profile`` prints;
4. every file the run wrote (DAGSTER_HOME, the project folder with dbt's target/ and logs/, HOME
   and dlt's folder, DLT_DATA_DIR, under it) is searched for the passwords and the S3 secret key: none holds one.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
import textwrap
import time
import urllib.error
from pathlib import Path

import pytest

import srdp
from srdp.install import dbt_package_path
from conftest import REPO, write_config

BIN = Path(sys.executable).parent
BUCKET = "srdp-scale-out"

# Sentinel credentials: random, so that a hit in a file can only come from this run; letters,
# digits and '-' only, so URL and JSON encodings of them are the same text.
WRITER_PASSWORD = f"wpw-{secrets.token_hex(12)}"
READER_PASSWORD = f"rpw-{secrets.token_hex(12)}"
S3_KEY_ID = f"AKIA{secrets.token_hex(8).upper()}"
S3_SECRET = f"s3s-{secrets.token_hex(16)}"
SENTINELS = (WRITER_PASSWORD, READER_PASSWORD, S3_SECRET)

DEFINITIONS = '''
"""One code location on the scale-out lake: credentials only from the environment."""
import os

os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")

import dagster as dg
import dlt
import pandas as pd
from dagster_dlt import DagsterDltResource
from dlt.common.configuration.specs import AwsCredentials

import srdp.ingest.dlt as srdp_dlt
from srdp.dagster import add_srdp_definitions, srdp_dlt_assets, srdp_table

CONFIG = os.environ["SRDP_CONFIG"]


@dlt.source
def shop():
    @dlt.resource(primary_key="id")
    def events():
        yield [{"id": i, "kind": "big" if i % 2 else "small", "amount": i * 3} for i in range(40)]

    return events


raw = srdp_dlt.destination(
    "lake",
    config=CONFIG,
    catalog_user=os.environ["LAKE_WRITER_USER"],
    catalog_password=os.environ["LAKE_WRITER_PASSWORD"],
    storage_credentials=AwsCredentials(
        aws_access_key_id=os.environ["LAKE_S3_KEY_ID"],
        aws_secret_access_key=os.environ["LAKE_S3_SECRET"],
        region_name="us-east-1",
        endpoint_url=os.environ["LAKE_S3_ENDPOINT_URL"],
    ),
)
shop_assets = srdp_dlt_assets(dlt_source=shop(), destination=raw, pipeline_name="scale_out", name="shop")

ORDERS = srdp_table("lake", "analytics", "orders", config=CONFIG)
SIZES = srdp_table("lake", "analytics", "order_sizes", config=CONFIG)


@dg.asset(key=ORDERS.key, metadata=ORDERS.metadata)
def orders() -> pd.DataFrame:
    return pd.DataFrame({"id": range(5), "amount": [10.0, 20.0, 30.0, 40.0, 50.0]})


@dg.asset(key=SIZES.key, metadata=SIZES.metadata, ins={"orders": dg.AssetIn(key=ORDERS.key)})
def order_sizes(orders: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"big": [int((orders["amount"] > 25).sum())], "small": [int((orders["amount"] <= 25).sum())]})


# Dagster's default executor, as docs/scale-out.md's definitions: the steps run in parallel processes, and
# the first ones both create the brand-new lake (dlt's attach and srdp's retry that race).
defs = add_srdp_definitions(
    dg.Definitions(
        assets=[shop_assets, orders, order_sizes],
        resources={"dlt": DagsterDltResource()},
    ),
    CONFIG,
    io_manager=True,
    secrets=[dg.EnvVar("LAKE_WRITER_SECRET_SQL"), dg.EnvVar("LAKE_READER_SECRET_SQL"), dg.EnvVar("LAKE_S3_SECRET_SQL")],
)
'''

DBT_PROJECT = """
name: scale_out
version: "1.0"
profile: srdp
dispatch:
  - macro_namespace: dbt
    search_order: [scale_out, srdp, dbt]
on-run-start:
  - "{{ srdp.srdp_check_writes() }}"
  - "{{ srdp.srdp_attach('lake', role='writer') }}"
models:
  scale_out:
    +database: lake
    +pre-hook: "{{ srdp.srdp_commit_message() }}"
"""

MODEL = "{{ config(materialized='table') }}\nselect id, amount from lake.raw.events where kind = 'big'\n"


def docs_roles_command() -> str:
    """docs/scale-out.md's one command that writes and runs the role script."""
    page = (REPO / "docs" / "scale-out.md").read_text()
    (command,) = [line for line in page.splitlines() if line.startswith("duckdb -unsigned -noheader")]
    return command


def config_text(servers, database: str) -> str:
    return f"""
    [catalogs.lake]
    metadata = "postgres:dbname={database} host=127.0.0.1 port={servers.pg_port}"
    metadata_schema = "lake"
    data_path = "s3://{BUCKET}/{database}/"
    data_inlining_row_limit = 10
    pressure_warning_rows = 3
    writer_secret = "lake_writer"
    reader_secret = "lake_reader"

    [catalogs.lake.schemas.raw]
    writer = "dlt"
    layer = "raw"

    [catalogs.lake.schemas.analytics]
    writer = "io_manager"
    layer = "curated"

    [catalogs.lake.schemas.curated]
    writer = "dbt"
    layer = "curated"
    """


def pg_secret(name: str, user: str, password: str) -> str:
    return f"CREATE OR REPLACE SECRET {name} (TYPE postgres, USER '{user}', PASSWORD '{password}')"


def s3_secret(servers) -> str:
    return (
        f"CREATE OR REPLACE SECRET lake_s3 (TYPE s3, KEY_ID '{S3_KEY_ID}', SECRET '{S3_SECRET}', "
        f"REGION 'us-east-1', ENDPOINT '{servers.s3_endpoint}', URL_STYLE 'path', USE_SSL false)"
    )


def as_role(servers, user: str, password: str, database: str, sql: str) -> subprocess.CompletedProcess:
    """psql as ``user`` (never raises: the test reads the outcome)."""
    return subprocess.run(
        [str(Path(servers.pg_bin) / "psql"), "-h", "127.0.0.1", "-p", str(servers.pg_port), "-U", user,
         "-d", database, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql],
        env={**os.environ, "PGPASSWORD": password}, capture_output=True, text=True, timeout=60,
    )


@pytest.fixture(scope="module")
def platform(servers, tmp_path_factory):
    """The catalog database, the bucket, srdp.toml and both roles, created by docs/scale-out.md's command."""
    sys.path.insert(0, str(REPO / "scripts"))
    from servers import create_bucket

    root = tmp_path_factory.mktemp("scale_out")
    database = f"lakecat_{secrets.token_hex(3)}"
    servers.psql(f"CREATE DATABASE {database}")
    try:
        create_bucket(servers, BUCKET)
    except urllib.error.HTTPError as e:
        if e.code != 409:
            raise
    cfg = write_config(root / "project", textwrap.dedent(config_text(servers, database)))
    command = (
        docs_roles_command()
        .replace("duckdb ", f"{BIN / 'duckdb'} ", 1)
        .replace("python -m srdp", f"{sys.executable} -m srdp")
        .replace("/etc/srdp/srdp.toml", str(cfg))
        .replace("psql ", f"{Path(servers.pg_bin) / 'psql'} ")
        .replace("-d lakecat", f"-d {database}")
    )
    env = {**os.environ, "PGHOST": "127.0.0.1", "PGPORT": str(servers.pg_port), "PGUSER": servers.pg_superuser,
           "PGPASSWORD": servers.pg_password}
    for _ in range(2):  # idempotent, as docs/scale-out.md says
        done = subprocess.run(["bash", "-c", command], cwd=root, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    script = (root / "roles.sql").read_text()
    assert script.count("\nREVOKE CONNECT, TEMPORARY ON DATABASE") == 1
    servers.psql(f"ALTER ROLE lake_writer PASSWORD '{WRITER_PASSWORD}'")
    servers.psql(f"ALTER ROLE lake_reader PASSWORD '{READER_PASSWORD}'")
    return {"root": root, "cfg": cfg, "database": database, "script": script}


def test_the_writer_reaches_its_catalog_database_only_after_the_dbas_two_lines(servers, platform) -> None:
    database, script = platform["database"], platform["script"]
    w = ("lake_writer", WRITER_PASSWORD)
    # In the catalog database: connect, yes; a temporary table or a table outside its schema, no.
    assert as_role(servers, *w, database, "SELECT current_user").stdout.strip() == "lake_writer"
    temp = as_role(servers, *w, database, "CREATE TEMP TABLE t (i int)")
    assert f"permission denied to create temporary tables in database \"{database}\"" in temp.stderr
    public = as_role(servers, *w, database, "CREATE TABLE public.t (i int)")
    assert "permission denied for schema public" in public.stderr
    # Another database: PostgreSQL's defaults let it in, as the script's comments say.
    assert as_role(servers, *w, "postgres", "CREATE TEMP TABLE t (i int); SELECT 1").stdout.strip() == "1"
    dba_lines = [line[len("--   "):] for line in script.splitlines() if line.startswith("--   REVOKE")]
    assert dba_lines == [
        'REVOKE CONNECT, TEMPORARY ON DATABASE "postgres" FROM PUBLIC;',
        'REVOKE CONNECT, TEMPORARY ON DATABASE "template1" FROM PUBLIC;',
    ]
    try:
        servers.psql("\n".join(dba_lines))
        for other in ("postgres", "template1"):
            refused = as_role(servers, *w, other, "SELECT 1")
            assert f'permission denied for database "{other}"' in refused.stderr, refused.stderr
        # A database created later grants CONNECT to PUBLIC again (the script says so).
        later = f"later_{secrets.token_hex(3)}"
        servers.psql(f"CREATE DATABASE {later}")
        assert as_role(servers, *w, later, "SELECT 1").stdout.strip() == "1"
        servers.psql(f'REVOKE CONNECT, TEMPORARY ON DATABASE "{later}" FROM PUBLIC')
        assert f'permission denied for database "{later}"' in as_role(servers, *w, later, "SELECT 1").stderr
    finally:  # the session's other tests keep PostgreSQL's defaults
        servers.psql("GRANT CONNECT, TEMPORARY ON DATABASE postgres, template1 TO PUBLIC")


def run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(args)} failed ({done.returncode}):\n{output[-6000:]}"
    return output


def files_holding(roots: list[Path], needles: tuple[str, ...]) -> list[str]:
    """Every file under ``roots`` that holds one of ``needles`` (bytes, any encoding of ASCII)."""
    found = []
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                found += [f"{path}: {n[:4]}..." for n in needles if n.encode() in data]
    return found


def test_the_platform_runs_with_secrets_only_in_the_environment(servers, platform) -> None:
    started = time.monotonic()
    root, cfg = platform["root"], platform["cfg"]
    project = cfg.parent
    home, dagster_home = root / "home", root / "dagster_home"
    home.mkdir()
    dagster_home.mkdir()
    (project / "definitions.py").write_text(DEFINITIONS)
    env = {
        **os.environ,
        "HOME": str(home),
        "DAGSTER_HOME": str(dagster_home),
        "SRDP_CONFIG": str(cfg),
        "DO_NOT_TRACK": "1",
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "RUNTIME__DLTHUB_TELEMETRY": "false",
        "DLT_DATA_DIR": str(home / "dlt"),  # dlt's folder (as root it would be /var/dlt, shared)
        # Dagster: srdp's jobs and the IO manager
        "LAKE_WRITER_SECRET_SQL": pg_secret("lake_writer", "lake_writer", WRITER_PASSWORD),
        "LAKE_READER_SECRET_SQL": pg_secret("lake_reader", "lake_reader", READER_PASSWORD),
        "LAKE_S3_SECRET_SQL": s3_secret(servers),
        # dlt
        "LAKE_WRITER_USER": "lake_writer",
        "LAKE_WRITER_PASSWORD": WRITER_PASSWORD,
        "LAKE_S3_KEY_ID": S3_KEY_ID,
        "LAKE_S3_SECRET": S3_SECRET,
        "LAKE_S3_ENDPOINT_URL": f"http://{servers.s3_endpoint}",
        # dbt: the generated profile's variables
        "DBT_ENV_SECRET_LAKE_WRITER_PASSWORD": WRITER_PASSWORD,
        "LAKE_WRITER_S3_KEY_ID": S3_KEY_ID,
        "DBT_ENV_SECRET_LAKE_WRITER_S3_SECRET": S3_SECRET,
        "LAKE_WRITER_S3_ENDPOINT": servers.s3_endpoint,
        "LAKE_WRITER_S3_URL_STYLE": "path",
        "LAKE_WRITER_S3_USE_SSL": "false",
    }
    dagster = str(BIN / "dagster")
    out = run([dagster, "asset", "materialize", "-f", "definitions.py", "--select", "*"], project, env)
    assert "RUN_SUCCESS" in out, out[-3000:]
    out = run([dagster, "job", "execute", "-f", "definitions.py", "-j", "srdp_catalog_pressure_monitor"], project, env)
    assert re.search(r"DatasetCatalogPressure: lake\.analytics\.orders has 5 inlined rows \(threshold 3\)", out), out[-3000:]
    out = run([dagster, "job", "execute", "-f", "definitions.py", "-j", "srdp_dataset_maintenance"], project, env)
    assert "srdp: lake.analytics.orders: flushed; 5 inlined rows flushed" in out, out[-3000:]

    # dbt with the generated profile, twice.
    dbt_dir = project / "dbt"
    (dbt_dir / "models").mkdir(parents=True)
    (dbt_dir / "dbt_project.yml").write_text(DBT_PROJECT)
    (dbt_dir / "packages.yml").write_text(f"packages:\n  - local: {dbt_package_path()}\n")
    (dbt_dir / "models" / "big_events.sql").write_text(MODEL)
    profile = run([sys.executable, "-m", "srdp", "dbt-profile", "--config", str(cfg)], project, env)
    assert "password: \"{{ env_var('DBT_ENV_SECRET_LAKE_WRITER_PASSWORD') }}\"" in profile
    (dbt_dir / "profiles.yml").write_text(profile)
    dbt = [str(BIN / "dbt"), "--no-use-colors"]
    run([*dbt, "deps", "--profiles-dir", "."], dbt_dir, env)
    for _ in range(2):
        out = run([*dbt, "run", "--profiles-dir", "."], dbt_dir, env)
        assert "Completed successfully" in out, out[-3000:]

    # What the lake holds, read back by a reader session.
    con = srdp.connect(config=cfg)
    try:
        for statement in (env["LAKE_READER_SECRET_SQL"], env["LAKE_S3_SECRET_SQL"]):
            con.execute(statement)
        assert con.execute("SELECT role FROM srdp_attach_catalog('lake')").fetchone() == ("reader",)
        counts = {
            table: con.execute(f"SELECT count(*) FROM lake.{table}").fetchone()[0]
            for table in ("raw.events", "analytics.orders", "analytics.order_sizes", "curated.big_events")
        }
        assert counts == {"raw.events": 40, "analytics.orders": 5, "analytics.order_sizes": 1, "curated.big_events": 20}
        assert con.execute("SELECT big, small FROM lake.analytics.order_sizes").fetchone() == (3, 2)
        authors = {r[0] for r in con.execute("SELECT DISTINCT author FROM lake.snapshots() WHERE author IS NOT NULL").fetchall()}
        assert {"dlt", "io_manager", "dbt"} <= authors, authors
        assert con.execute("SELECT inlined_rows FROM srdp_inlined_row_count('lake', schema_name := 'analytics', table_name := 'orders')").fetchone() == (0,)
    finally:
        con.close()

    # No file the run wrote holds a password or the S3 secret key.
    assert files_holding([root], SENTINELS) == []
    assert len(files_holding([root], ("lake_writer",))) >= 2  # the search does find text: srdp.toml, roles.sql
    written = {p.relative_to(root).parts[0] for p in root.rglob("*") if p.is_file()}
    assert {"dagster_home", "home", "project"} <= written, written
    assert any((dbt_dir / "target").iterdir()) and any((dbt_dir / "logs").iterdir())
    assert any((home / "dlt" / "pipelines" / "scale_out").rglob("*.json"))  # dlt's folder was written and searched
    print(f"scale-out platform run: {time.monotonic() - started:.0f} s")
