"""srdp.ingest.dlt on PostgreSQL catalogs, with real dlt 1.31 and the real servers (scripts/servers.py).

dlt attaches a PostgreSQL catalog with ``METADATA_SCHEMA '<metadata_schema or ducklake_name>'``,
while DuckDB without that option uses schema "public": a lake is only found under the schema it
was created in. srdp.toml names the schema (``metadata_schema``); the helper hands it to dlt, and
the writer's password, which srdp.toml never holds, is given to the helper and lives only in dlt's
in-memory credentials. Readers are separate processes attached with ``srdp_attach_catalog`` and a
DuckDB postgres secret, as in production. Each test has its own database.
"""

from __future__ import annotations

import os

os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"  # offline platform: dlt must not phone home

import hashlib  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import secrets  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402
from urllib.parse import quote  # noqa: E402

import dagster as dg  # noqa: E402
import dlt  # noqa: E402
import duckdb  # noqa: E402
import pytest  # noqa: E402
from dagster_dlt import DagsterDltResource  # noqa: E402
from dlt.common.configuration.specs import AwsCredentials  # noqa: E402
from dlt.destinations.impl.ducklake.configuration import DuckLakeCredentials  # noqa: E402

import srdp  # noqa: E402
import srdp.ingest.dlt as srdp_dlt  # noqa: E402
from srdp.dagster import srdp_dlt_assets  # noqa: E402
from conftest import run_python, write_config  # noqa: E402
from lakecheck import Lake  # noqa: E402
from pg_lake import new_lake  # noqa: E402

RAW = """
[catalogs.lake.schemas.raw]
writer = "dlt"
layer = "raw"
"""

READ_BACK = """
import json, srdp
con = srdp.connect(config={cfg!r})
for statement in {setup!r}:
    con.execute(statement)
attached = con.sql("SELECT role, read_only, metadata_schema FROM srdp_attach_catalog('lake')").fetchone()
count, checksum = con.sql(
    "SELECT count(*), md5(string_agg(id || '|' || name, chr(10) ORDER BY id)) FROM lake.raw.events"
).fetchone()
print(json.dumps({{"attached": attached, "count": count, "checksum": checksum}}))
"""

# DuckLake's refusal when a read-only attach names a schema that holds no lake.
NOT_FOUND = "does not exist - and creating a new DuckLake is explicitly disabled"


def rows(start: int, n: int) -> list[dict]:
    return [{"id": i, "name": f"event-{i}", "amount": i * 3} for i in range(start, start + n)]


def checksum(items: list[dict]) -> str:
    """What READ_BACK computes in SQL, computed here from the rows handed to dlt."""
    text = "\n".join(f"{r['id']}|{r['name']}" for r in sorted(items, key=lambda r: r["id"]))
    return hashlib.md5(text.encode()).hexdigest()


def new_database(servers, name: str) -> str:
    database = f"dlt_{name}_{secrets.token_hex(3)}"
    servers.psql(f"CREATE DATABASE {database}")
    return database


def pg_config(directory: Path, servers, database: str, *, metadata_schema: str | None = "ducklake",
              user: bool = True, data_path: str | None = None) -> Path:
    """A PostgreSQL-catalog lake with a local data path; credentials only in DuckDB secrets."""
    conninfo = f"dbname={database} host=127.0.0.1 port={servers.pg_port}" + (f" user={servers.pg_superuser}" if user else "")
    schema_line = f'metadata_schema = "{metadata_schema}"\n' if metadata_schema else ""
    return write_config(directory, f"""
[catalogs.lake]
metadata = "postgres:{conninfo}"
{schema_line}data_path = "{data_path or directory / 'data' / 'lake'}"
writer_secret = "pg_writer"
reader_secret = "pg_reader"
{RAW}""")


def reader_secret(servers, database: str) -> str:
    return (
        f"CREATE OR REPLACE SECRET pg_reader (TYPE postgres, HOST '127.0.0.1', PORT {servers.pg_port}, "
        f"DATABASE '{database}', USER '{servers.pg_superuser}', PASSWORD '{servers.pg_password}')"
    )


def read_back(cfg: Path, setup: list[str]) -> dict:
    """count + checksum of lake.raw.events as a reader in another process sees it."""
    return json.loads(run_python(READ_BACK.format(cfg=str(cfg), setup=setup)))


def attach_reader(cfg: Path, servers, database: str) -> duckdb.DuckDBPyConnection:
    """srdp_attach_catalog('lake') as reader in this process (the caller closes the connection)."""
    con = srdp.connect(config=cfg)
    con.execute(reader_secret(servers, database))
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
    except Exception:
        con.close()
        raise
    return con


def metadata_schemas(servers, database: str) -> list[str]:
    """The PostgreSQL schemas that hold DuckLake metadata tables."""
    out = servers.psql(
        "SELECT DISTINCT schemaname FROM pg_tables WHERE tablename LIKE 'ducklake\\_%' ORDER BY 1", database
    )
    return out.split()


def files_holding(directory: Path, *texts: str) -> list[str]:
    """Files under ``directory`` whose bytes contain any of ``texts``."""
    found = []
    for path in directory.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if any(t.encode() in data for t in texts):
                found.append(str(path))
    return found


def test_the_helper_loads_a_postgres_catalog_in_schema_ducklake_and_srdp_reads_the_same_rows(servers, tmp_path, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    database = new_database(servers, "helper")
    cfg = pg_config(tmp_path, servers, database)
    dest = srdp_dlt.destination("lake", config=cfg, catalog_password=servers.pg_password)
    # What srdp hands dlt: the URL without password, and the schema from srdp.toml.
    assert dest.catalog_url == f"postgres://{servers.pg_superuser}@127.0.0.1:{servers.pg_port}/{database}"
    assert (dest.attach_name, dest.metadata_schema, dest.dataset_name) == ("lake", "ducklake", "raw")
    assert servers.pg_password not in repr(dest) and repr(dest.catalog_password) == "'***'"

    pipelines = tmp_path / "pipelines"
    pipeline = dest.pipeline("events", pipelines_dir=str(pipelines))
    loaded = rows(0, 25)
    assert not dest.run(pipeline, dlt.resource(loaded, name="events")).has_failed_jobs
    # dlt's ATTACH IF NOT EXISTS created the lake in schema "ducklake" only, as srdp.toml says.
    assert metadata_schemas(servers, database) == ["ducklake"]

    setup = [reader_secret(servers, database)]
    assert read_back(cfg, setup) == {"attached": ["reader", True, "ducklake"], "count": 25, "checksum": checksum(loaded)}
    # A second load through the helper finds the same lake (no second lake anywhere).
    more = rows(25, 10)
    assert not srdp_dlt.run(pipeline, dlt.resource(more, name="events")).has_failed_jobs
    assert read_back(cfg, setup) == {"attached": ["reader", True, "ducklake"], "count": 35, "checksum": checksum(loaded + more)}
    assert metadata_schemas(servers, database) == ["ducklake"]

    # The password went to dlt's memory only: not into files, logs or output.
    assert files_holding(pipelines, servers.pg_password) == []
    assert files_holding(tmp_path, servers.pg_password) == []
    out, err = capfd.readouterr()
    assert servers.pg_password not in caplog.text + out + err


def test_without_metadata_schema_srdp_attaches_public_and_does_not_see_the_lake(servers, tmp_path):
    database = new_database(servers, "contrast")
    cfg = pg_config(tmp_path, servers, database)
    dest = srdp_dlt.destination("lake", config=cfg, catalog_password=servers.pg_password)
    loaded = rows(0, 12)
    assert not dest.run(dest.pipeline("events", pipelines_dir=str(tmp_path / "pipelines")), dlt.resource(loaded, name="events")).has_failed_jobs
    con = attach_reader(cfg, servers, database)
    try:
        assert con.execute("SELECT count(*) FROM lake.raw.events").fetchone() == (12,)
    finally:
        con.close()

    # The same database, defined without metadata_schema: PostgreSQL's default schema "public".
    missing = pg_config(tmp_path / "missing", servers, database, metadata_schema=None, data_path=str(tmp_path / "data" / "lake"))
    assert "metadata_schema =" not in missing.read_text()
    with pytest.raises(duckdb.Error) as refused:
        attach_reader(missing, servers, database)
    message = str(refused.value)
    assert message.startswith("Invalid Input Error: srdp_attach_catalog: "), message
    assert f'Existing DuckLake at metadata catalog "postgres:dbname={database} ' in message, message
    assert NOT_FOUND in message, message
    assert servers.pg_password not in message
    # The reader created nothing: the lake is still only in "ducklake", "public" holds none.
    assert metadata_schemas(servers, database) == ["ducklake"]
    # And dlt, handed that definition, would look in "public" as well.
    assert srdp_dlt.destination("lake", config=missing).metadata_schema == "public"


def test_plain_dlt_uses_its_ducklake_name_as_schema_and_srdp_finds_the_lake_by_that_schema(servers, tmp_path):
    database = new_database(servers, "plain")
    data = tmp_path / "data" / "lake"
    # dlt alone, with its defaults (no metadata_schema): only the extension directory is srdp's,
    # because this platform is offline.
    creds = DuckLakeCredentials(
        ducklake_name="lake",
        catalog=f"postgres://{servers.pg_superuser}:{quote(servers.pg_password, safe='')}@127.0.0.1:{servers.pg_port}/{database}",
        storage=f"file://{data}",
    )
    creds.global_config = {"extension_directory": srdp.duckdb_config()["extension_directory"], "autoinstall_known_extensions": False}
    plain = dlt.pipeline("plain", destination=dlt.destinations.ducklake(credentials=creds), dataset_name="raw",
                         pipelines_dir=str(tmp_path / "pipelines"))
    loaded = rows(0, 9)
    assert not plain.run(dlt.resource(loaded, name="events")).has_failed_jobs
    # METADATA_SCHEMA = metadata_schema or ducklake_name: the schema is "lake", not "ducklake".
    assert metadata_schemas(servers, database) == ["lake"]

    setup = [reader_secret(servers, database)]
    named = pg_config(tmp_path / "named", servers, database, metadata_schema="lake", data_path=str(data))
    assert read_back(named, setup) == {"attached": ["reader", True, "lake"], "count": 9, "checksum": checksum(loaded)}
    for schema in ("ducklake", None):  # dlt's usual default and PostgreSQL's default: not there
        other = pg_config(tmp_path / f"other_{schema}", servers, database, metadata_schema=schema, data_path=str(data))
        with pytest.raises(duckdb.Error, match=NOT_FOUND):
            attach_reader(other, servers, database)

    # The helper, given the definition that names "lake", appends to the lake plain dlt created.
    dest = srdp_dlt.destination("lake", config=named, catalog_password=servers.pg_password)
    assert dest.metadata_schema == "lake"
    more = rows(9, 4)
    assert not dest.run(dest.pipeline("helper", pipelines_dir=str(tmp_path / "pipelines")), dlt.resource(more, name="events")).has_failed_jobs
    assert read_back(named, setup) == {"attached": ["reader", True, "lake"], "count": 13, "checksum": checksum(loaded + more)}
    assert metadata_schemas(servers, database) == ["lake"]


def test_missing_and_wrong_passwords_are_refused_clearly_and_never_shown(servers, tmp_path, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    database = new_database(servers, "secret")
    cfg = pg_config(tmp_path, servers, database)
    pipelines = tmp_path / "pipelines"

    # No password: the helper refuses before dlt runs (no pipeline folder, nothing in PostgreSQL).
    dest = srdp_dlt.destination("lake", config=cfg)
    for build in (lambda: dest.pipeline("events", pipelines_dir=str(pipelines)),
                  lambda: srdp_dlt.pipeline("events", "lake", config=cfg, pipelines_dir=str(pipelines))):
        with pytest.raises(srdp_dlt.SrdpDltError) as refused:
            build()
        assert str(refused.value) == (
            f"srdp.ingest.dlt: catalog 'lake' keeps its metadata in PostgreSQL "
            f"(postgres://{servers.pg_superuser}@127.0.0.1:{servers.pg_port}/{database}, schema 'ducklake') and dlt "
            f"connects to it itself, with a password: pass catalog_password=... (the writer role's password) to "
            f"srdp.ingest.dlt.destination('lake', ...); srdp.toml never holds it (srdp reads it from the DuckDB "
            f"secret named by writer_secret)"
        )
    # No user in the libpq string and none given: catalog_user=... is asked for.
    nameless = pg_config(tmp_path / "nameless", servers, database, user=False)
    with pytest.raises(srdp_dlt.SrdpDltError, match=r"as a user the libpq string in .* does not name: pass catalog_user=\.\.\. \(the writer role\)"):
        srdp_dlt.destination("lake", config=nameless, catalog_password=servers.pg_password).pipeline("events", pipelines_dir=str(pipelines))
    with pytest.raises(srdp_dlt.SrdpDltError, match="cannot pass a user or password containing a space"):
        srdp_dlt.destination("lake", config=cfg, catalog_password="with space").credentials()
    assert not pipelines.exists()
    assert metadata_schemas(servers, database) == []

    # A wrong password: the load fails, and dlt's error (which quotes the connection URL with the
    # password, percent-encoded) reaches the caller redacted and without dlt's exception attached.
    wrong = "Wr0ng/dlt@Pa55:word"
    forms = (wrong, quote(wrong, safe=" +"), quote(wrong, safe=""))
    dest = srdp_dlt.destination("lake", config=cfg, catalog_password=wrong)
    pipeline = dest.pipeline("events", pipelines_dir=str(pipelines))
    with pytest.raises(srdp_dlt.SrdpDltLoadError) as failed:
        dest.run(pipeline, dlt.resource(rows(0, 5), name="events"))
    error = failed.value
    message = str(error)
    assert message.startswith(
        f"srdp.ingest.dlt: dlt failed to load into lake.raw (catalog postgres://{servers.pg_superuser}@127.0.0.1:"
        f"{servers.pg_port}/{database}, metadata schema ducklake); secrets in dlt's error are shown as ***. "
        "PostgreSQL refused the credentials: check catalog_user and catalog_password (the writer role's) given to "
        "srdp.ingest.dlt.destination('lake', ...). dlt's error: Pipeline execution failed at `step=sync`"
    ), message
    assert f'Unable to connect to Postgres at "postgres://{servers.pg_superuser}:***@127.0.0.1:{servers.pg_port}/{database}"' in message
    assert f'FATAL:  password authentication failed for user "{servers.pg_superuser}"' in message
    assert error.__cause__ is None and error.__context__ is None
    shown = "".join(traceback.format_exception(error))
    # dlt keeps a trace of the failed run (in memory and in trace.pickle): redacted, still useful.
    trace = str(pipeline.last_trace)
    assert "password authentication failed" in trace
    out, err = capfd.readouterr()
    for form in forms:
        assert form not in message and form not in shown and form not in trace
        assert form not in caplog.text + out + err
    assert files_holding(pipelines, *forms) == []

    # The same through Dagster: the step fails with the redacted error, and nothing the instance
    # recorded (event log, error chain) holds the password.
    source = dlt.source(lambda: dlt.resource(rows(0, 5), name="events"), name="shop")()
    assets = srdp_dlt_assets(dlt_source=source, destination=dest, name="shop",
                             dlt_pipeline=dest.pipeline("shop", pipelines_dir=str(pipelines)))
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([assets], resources={"dlt": DagsterDltResource()}, instance=instance, raise_on_error=False)
    assert not result.success
    failure = result.get_step_failure_events()[0].event_specific_data.error
    assert failure.cause.cls_name == "SrdpDltLoadError" and failure.cause.cause is None and failure.cause.context is None
    assert "password authentication failed" in failure.cause.message
    recorded = "".join(str(e) for e in instance.all_logs(result.run_id))
    out, err = capfd.readouterr()
    for form in forms:
        assert form not in recorded and form not in caplog.text + out + err
    assert files_holding(pipelines, *forms) == []
    assert metadata_schemas(servers, database) == []


def test_an_s3_data_path_loads_with_storage_credentials_given_to_the_helper(servers, tmp_path, connect):
    lake = new_lake(servers, tmp_path, schema="ducklake", extra="data_inlining_row_limit = 0\n" + RAW)
    storage = AwsCredentials(
        aws_access_key_id=servers.s3_access_key,
        aws_secret_access_key=servers.s3_secret_key,
        region_name=servers.s3_region,
        endpoint_url=f"http://{servers.s3_endpoint}",
    )
    # The libpq string names no user (credentials live in DuckDB secrets): catalog_user= says it.
    dest = srdp_dlt.destination("lake", config=lake.cfg, catalog_user=servers.pg_superuser,
                                catalog_password=servers.pg_password, storage_credentials=storage)
    assert (dest.storage_url, dest.metadata_schema) == (lake.data_path, "ducklake")
    loaded = rows(0, 40)
    pipeline = dest.pipeline("events", pipelines_dir=str(tmp_path / "pipelines"))
    assert not dest.run(pipeline, dlt.resource(loaded, name="events")).has_failed_jobs
    assert metadata_schemas(servers, lake.database) == ["ducklake"]

    seen = read_back(lake.cfg, lake.setup_sql())
    assert seen == {"attached": ["reader", True, "ducklake"], "count": 40, "checksum": checksum(loaded)}
    con = lake.connect(connect)
    con.execute("SELECT * FROM srdp_attach_catalog('lake')")
    # Every object in the bucket is a live data file of the metadata (no inlining: one Parquet file
    # per table dlt wrote), and raw.events has exactly one, under its table folder.
    live = Lake(con, meta="ducklake").live_files()
    assert lake.objects(con) == sorted(f for files in live.values() for f in files)
    tables = ("_dlt_loads", "_dlt_pipeline_state", "_dlt_version", "events")
    assert {key: len(files) for key, files in live.items()} == {("raw", t): 1 for t in tables}
    (events,) = live[("raw", "events")]
    assert events.startswith(f"{lake.data_path}raw/events/") and events.endswith(".parquet"), events
    assert files_holding(tmp_path / "pipelines", servers.pg_password, servers.s3_secret_key) == []

    # Storage credentials for a local data path are a mistake, said so.
    local = pg_config(tmp_path / "local", servers, lake.database)
    with pytest.raises(srdp_dlt.SrdpDltError, match="storage_credentials given, but catalog 'lake' keeps its data in a local folder"):
        srdp_dlt.destination("lake", config=local, catalog_password="x", storage_credentials=storage).credentials()
