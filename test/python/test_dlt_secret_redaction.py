"""Secrets given to srdp.ingest.dlt never show when dlt fails INSIDE a load job: not in the error,
its traceback, dlt's trace, the log output, or any file dlt writes (the failed jobs'
``*.exception`` files included).

* PostgreSQL catalog: the writer role's password is a sentinel. A trigger rotates it as soon as
  dlt's load step creates the new table (the load's first connection is already open), so every
  load job's own connection is refused and dlt's job failure quotes the catalog URL with the
  sentinel password in it (percent-encoded) in the job messages it logs and writes to
  ``*.exception`` files.
* S3 data path: the storage credentials are sentinels and the data path's bucket does not exist
  (moto accepts any credentials, so the failure is forced by the bucket), so every write of the
  load fails; the sentinels are in the DuckDB secret dlt creates on each connection.
* Storage credentials with a single quote: dlt writes them unescaped into DuckDB's ``CREATE
  SECRET``, whose syntax error quotes the rest of the value (in the error, dlt's trace and
  ``trace.pickle``); the helper refuses them before dlt runs, naming the field only.
"""

from __future__ import annotations

import os

os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"  # offline platform: dlt must not phone home

import io  # noqa: E402
import logging  # noqa: E402
import secrets  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402
from urllib.parse import quote, quote_plus  # noqa: E402

import dlt  # noqa: E402
import duckdb  # noqa: E402
import pytest  # noqa: E402
from dlt.common.configuration.specs import AwsCredentials  # noqa: E402

import srdp.ingest.dlt as srdp_dlt  # noqa: E402
from conftest import write_config  # noqa: E402

RAW = """
[catalogs.lake.schemas.raw]
writer = "dlt"
layer = "raw"
"""


def files_holding(directory: Path, texts: tuple[str, ...]) -> list[str]:
    """Files under ``directory`` whose bytes contain any of ``texts``."""
    return sorted(
        str(path)
        for path in directory.rglob("*")
        if path.is_file() and any(t.encode() in path.read_bytes() for t in texts)
    )


def forms(secret: str) -> tuple[str, ...]:
    """Every form dlt or libpq may print ``secret`` in."""
    return tuple({secret, quote(secret, safe=" +"), quote(secret, safe=""), quote_plus(secret)})


def shown(error: BaseException, pipeline, out: str) -> str:
    """Everything a user sees of a failed load: the error, its traceback, dlt's trace, the logs."""
    return "\n".join((str(error), "".join(traceback.format_exception(error)), str(pipeline.last_trace), out))


def test_a_load_job_whose_failure_quotes_the_password_leaves_it_nowhere(servers, tmp_path, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    database = f"jobpw_{secrets.token_hex(3)}"
    role = f"{database}_w"
    password = f"Sentinel/Job@Pw:{secrets.token_hex(6)}"
    servers.psql(f"CREATE DATABASE {database}")
    servers.psql(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
    servers.psql(f"ALTER DATABASE {database} OWNER TO {role}")
    cfg = write_config(tmp_path, f"""
[catalogs.lake]
metadata = "postgres:dbname={database} host=127.0.0.1 port={servers.pg_port} user={role}"
metadata_schema = "ducklake"
data_path = "{tmp_path / 'data' / 'lake'}"
writer_secret = "pg_writer"
reader_secret = "pg_reader"
{RAW}""")
    dest = srdp_dlt.destination("lake", config=cfg, catalog_password=password)
    pipeline = dest.pipeline("events", pipelines_dir=str(tmp_path / "pipelines"))
    assert not dest.run(pipeline, dlt.resource([{"id": 0}], name="first")).has_failed_jobs
    servers.psql(
        "CREATE FUNCTION public.rotate() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN "
        f"EXECUTE format('ALTER ROLE %I PASSWORD %L', '{role}', 'rotated-{secrets.token_hex(4)}'); "
        "RETURN NULL; END $$",
        database,
    )
    servers.psql(
        "CREATE TRIGGER rotate AFTER INSERT ON ducklake.ducklake_table FOR EACH STATEMENT "
        "EXECUTE FUNCTION public.rotate()",
        database,
    )

    # A handler that cannot write (its stream closed: a test's or an app's left-over handler):
    # Python's logging then prints the failure to stderr with the exception being handled, dlt's
    # job failure, chained in; that text must not carry the password either.
    closed = io.StringIO()
    closed.close()
    broken = logging.StreamHandler(closed)
    logging.getLogger("dlt").addHandler(broken)
    try:
        with pytest.raises(srdp_dlt.SrdpDltLoadError) as failed:
            dest.run(pipeline, dlt.resource([{"id": i, "name": f"n{i}"} for i in range(5)], name="events"))
    finally:
        logging.getLogger("dlt").removeHandler(broken)
    assert logging.raiseExceptions is True  # srdp silenced logging errors for the load only
    error = failed.value
    message = str(error)
    assert message.startswith(
        f"srdp.ingest.dlt: dlt failed to load into lake.raw (catalog postgres://{role}@127.0.0.1:{servers.pg_port}/"
        f"{database}, metadata schema ducklake); secrets in dlt's error are shown as ***. PostgreSQL refused the "
        "credentials: check catalog_user and catalog_password (the writer role's) given to "
        "srdp.ingest.dlt.destination('lake', ...). dlt's error: Pipeline execution failed at `step=load`"
    ), message
    # The failure is a load job's: it quotes the URL of the job's own connection, redacted.
    assert "Job with `job_id=events." in message, message
    assert f'Unable to connect to Postgres at "postgres://{role}:***@127.0.0.1:{servers.pg_port}/{database}"' in message
    assert error.__cause__ is None and error.__context__ is None

    # dlt wrote one *.exception file per failed attempt of the job: kept, redacted.
    exceptions = sorted((tmp_path / "pipelines").rglob("*.exception"))
    assert len(exceptions) >= 5, exceptions
    for path in exceptions:
        text = path.read_text()
        assert "password authentication failed" in text and f"postgres://{role}:***@" in text, (path, text)

    out, err = capfd.readouterr()
    seen = shown(error, pipeline, caplog.text + out + err)
    assert "Transient exception in job events." in seen  # dlt's log of the job failure, redacted
    for form in forms(password):
        assert form not in seen
    assert files_holding(tmp_path, forms(password)) == []


def test_an_s3_load_that_fails_leaves_key_and_secret_nowhere(servers, tmp_path, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    database = f"s3fail_{secrets.token_hex(3)}"
    servers.psql(f"CREATE DATABASE {database}")
    bucket = f"no-such-bucket-{secrets.token_hex(4)}"
    cfg = write_config(tmp_path, f"""
[catalogs.lake]
metadata = "postgres:dbname={database} host=127.0.0.1 port={servers.pg_port} user={servers.pg_superuser}"
metadata_schema = "ducklake"
data_path = "s3://{bucket}/lake/"
data_inlining_row_limit = 0
writer_secret = "pg_writer"
reader_secret = "pg_reader"
{RAW}""")
    key_id = f"SENTINELKEY{secrets.token_hex(6).upper()}"
    secret = f"Sentinel/Secret+{secrets.token_hex(10)}"
    storage = AwsCredentials(
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
        region_name=servers.s3_region,
        endpoint_url=f"http://{servers.s3_endpoint}",
    )
    dest = srdp_dlt.destination("lake", config=cfg, catalog_password=servers.pg_password, storage_credentials=storage)
    pipeline = dest.pipeline("events", pipelines_dir=str(tmp_path / "pipelines"))
    with pytest.raises(Exception) as failed:
        dest.run(pipeline, dlt.resource([{"id": i, "name": f"n{i}"} for i in range(5)], name="events"))
    error = failed.value
    out, err = capfd.readouterr()
    seen = shown(error, pipeline, caplog.text + out + err)
    assert bucket in str(error), str(error)  # the failure is the missing bucket's
    for form in forms(key_id) + forms(secret) + forms(servers.pg_password):
        assert form not in seen, form
    assert files_holding(tmp_path, forms(key_id) + forms(secret) + forms(servers.pg_password)) == []


def test_storage_credentials_with_a_quote_are_refused_before_dlt_runs_naming_the_field_only(servers, tmp_path, capfd):
    database = f"s3quote_{secrets.token_hex(3)}"
    cfg = write_config(tmp_path, f"""
[catalogs.lake]
metadata = "postgres:dbname={database} host=127.0.0.1 port={servers.pg_port} user={servers.pg_superuser}"
metadata_schema = "ducklake"
data_path = "s3://srdp-test/{database}/"
writer_secret = "pg_writer"
reader_secret = "pg_reader"
{RAW}""")
    tail = secrets.token_hex(8)
    for field, key_id, secret in (
        ("aws_secret_access_key", "SENTINELKEY", f"Sentinel'{tail}"),
        ("aws_access_key_id", f"SENTINEL'{tail}", "SentinelSecret"),
    ):
        storage = AwsCredentials(aws_access_key_id=key_id, aws_secret_access_key=secret,
                                 region_name=servers.s3_region, endpoint_url=f"http://{servers.s3_endpoint}")
        dest = srdp_dlt.destination("lake", config=cfg, catalog_password=servers.pg_password, storage_credentials=storage)
        with pytest.raises(srdp_dlt.SrdpDltError) as refused:
            dest.pipeline("events", pipelines_dir=str(tmp_path / "pipelines"))
        assert str(refused.value) == (
            f"srdp.ingest.dlt: storage_credentials for catalog 'lake': {field} contains a single quote, which dlt "
            "cannot pass to DuckDB (it writes the value between quotes, unescaped, into CREATE SECRET); check the "
            "value given (a quote pasted with it?)"
        )
        assert tail not in "".join(traceback.format_exception(refused.value))
    assert not (tmp_path / "pipelines").exists()
    out, err = capfd.readouterr()
    assert tail not in out + err


def test_a_failure_that_quotes_the_s3_key_id_and_secret_shows_neither(tmp_path):
    """The S3 key id and secret are among the texts srdp redacts: DuckDB's parser error about a
    CREATE SECRET quotes its line, keys included (what dlt's failure carries when its secret
    statement breaks); srdp's redaction of the failure and of dlt's log records hides both."""
    from srdp.ingest.dlt.redact import secret_free_logs, secret_texts

    cfg = write_config(tmp_path, f"""
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "s3://srdp-test/lake/"
{RAW}""")
    key_id = f"SENTINELKEY{secrets.token_hex(4).upper()}"
    secret = f"Sentinel/S+{secrets.token_hex(6)}"
    storage = AwsCredentials(aws_access_key_id=key_id, aws_secret_access_key=secret, region_name="us-east-1")
    dest = srdp_dlt.destination("lake", config=cfg, storage_credentials=storage)
    pipeline = dest.pipeline("events", pipelines_dir=str(tmp_path / "pipelines"))
    con = duckdb.connect()
    with pytest.raises(duckdb.ParserException) as broken:
        con.execute(f"CREATE SECRET (KEY_ID '{key_id}', SECRET '{secret}' x)")
    con.close()
    error = broken.value
    assert key_id in str(error) and secret in str(error)  # what a leak would show
    redacted = dest.secret_free_failure(pipeline, error)
    assert redacted is not None
    assert "'***', SECRET '***' x)" in str(redacted), str(redacted)
    assert key_id not in str(redacted) and secret not in str(redacted)
    # dlt's log record of the failure, as a handler of the dlt logger writes it.
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    logging.getLogger("dlt").addHandler(handler)
    try:
        with secret_free_logs(dest):
            logging.getLogger("dlt").error("load job failed: %s", error)
    finally:
        logging.getLogger("dlt").removeHandler(handler)
    assert "load job failed" in written.getvalue() and "'***', SECRET '***' x)" in written.getvalue()
    assert key_id not in written.getvalue() and secret not in written.getvalue()
    assert set(secret_texts(dest)) == {key_id, secret}
