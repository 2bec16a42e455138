"""The first loads into a brand-new PostgreSQL lake, all at once: every one of them succeeds.

A new lake's metadata is created by its first attach. When dlt loads (several pipelines, or a
pipeline beside the IO manager) start together on a new PostgreSQL catalog, their attaches all
find no lake and create it at once; PostgreSQL refuses the losers (``duplicate key value violates
unique constraint "pg_namespace_nspname_index"``, ``relation "ducklake_metadata" already exists``
under DuckLake's "Failed to initialize DuckLake"). srdp's attach retried that already; dlt's
attach through srdp's destination now retries it the same way (``srdp_retry_wait``), so no load
fails for having started first.

The race is made certain: a PostgreSQL session plays the winner in flight (it has created the
metadata schema and not committed yet) while three dlt loads (real dlt 1.31, srdp's helper, each
into a raw schema of its own) and one srdp writer attach, in four processes, make their first
attach; all four wait on the winner's schema and are refused when it commits, as the losers of a
real race are. Each process is held, at its first attach, until the winner is in flight (the wait
wraps srdp's SQL client's ``open_connection``; DuckDB, DuckLake and dlt run as they are).
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import time
from pathlib import Path

from conftest import PY
from test_dlt_postgres import new_database, pg_config, reader_secret

import srdp

LOADS = 3
#: How long the winner keeps its metadata schema uncommitted: the four attaches wait on it.
IN_FLIGHT_SECONDS = 4

BARRIER = textwrap.dedent("""
    import os, sys, time

    def wait_for_all(folder, me, count):
        open(os.path.join(folder, me), "w").close()
        deadline = time.monotonic() + 120
        while len(os.listdir(folder)) < count:
            if time.monotonic() > deadline:
                raise RuntimeError("the other processes never reached their first attach")
            time.sleep(0.002)
""")

DLT_LOAD = BARRIER + textwrap.dedent("""
    os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"
    import dlt
    import srdp.ingest.dlt as srdp_dlt
    from srdp.ingest.dlt.audited import SrdpDuckLakeSqlClient

    cfg, password, folder, count, index, pipelines = sys.argv[1:7]
    original = SrdpDuckLakeSqlClient.open_connection
    waited = []

    def open_connection(self):
        if not waited:
            waited.append(True)
            wait_for_all(folder, f"dlt-{index}", int(count))
        return original(self)

    SrdpDuckLakeSqlClient.open_connection = open_connection
    dest = srdp_dlt.destination("lake", config=cfg, catalog_password=password, schema_name=f"raw_{index}")
    pipeline = dest.pipeline(f"first_{index}", pipelines_dir=pipelines)
    rows = [{"id": i, "name": f"event-{i}"} for i in range(int(index) * 100, int(index) * 100 + 10)]
    dest.run(pipeline, dlt.resource(rows, name=f"events_{index}"))
    print("loaded")
""")

SRDP_ATTACH = BARRIER + textwrap.dedent("""
    import srdp

    cfg, secret, folder, count = sys.argv[1:5]
    con = srdp.connect(config=cfg)
    con.execute(secret)
    wait_for_all(folder, "srdp", int(count))
    row = con.execute("SELECT role, status FROM srdp_attach_catalog('lake', role := 'writer')").fetchone()
    print(row[0])
""")


def test_first_loads_into_a_new_postgres_lake_all_succeed_when_they_attach_at_once(servers, tmp_path: Path) -> None:
    database = new_database(servers, "race")
    cfg = pg_config(tmp_path, servers, database)
    # Each load has a dataset of its own: several pipelines creating dlt's own tables in ONE dataset
    # at once is dlt's schema-update conflict (SchemaUpdateTransientError), not this race.
    with cfg.open("a") as file:
        file.writelines(f'\n[catalogs.lake.schemas.raw_{i}]\nwriter = "dlt"\nlayer = "raw"\n' for i in range(1, LOADS + 1))
    folder = tmp_path / "barrier"
    folder.mkdir()
    writer_secret = (
        f"CREATE OR REPLACE SECRET pg_writer (TYPE postgres, HOST '127.0.0.1', PORT {servers.pg_port}, "
        f"DATABASE '{database}', USER '{servers.pg_superuser}', PASSWORD '{servers.pg_password}')"
    )
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    count = str(LOADS + 2)  # the loads, the srdp attach, and the test's "go" once the winner is in flight
    processes = [
        subprocess.Popen(
            [PY, "-c", DLT_LOAD, str(cfg), servers.pg_password, str(folder), count, str(i), str(tmp_path / "p")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
        )
        for i in range(1, LOADS + 1)
    ]
    processes.append(subprocess.Popen(
        [PY, "-c", SRDP_ATTACH, str(cfg), writer_secret, str(folder), count],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    ))
    winner = subprocess.Popen(
        [str(Path(servers.pg_bin) / "psql"), "-h", "127.0.0.1", "-p", str(servers.pg_port), "-U", servers.pg_superuser,
         "-d", database, "-v", "ON_ERROR_STOP=1", "-qAt", "-c",
         f"BEGIN; CREATE SCHEMA ducklake; SELECT pg_sleep({IN_FLIGHT_SECONDS}); COMMIT;"],
        env={**os.environ, "PGPASSWORD": servers.pg_password}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 30
    while servers.psql(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%CREATE SCHEMA ducklake%'"
        " AND pid <> pg_backend_pid()"
    ).split() != ["1"]:
        assert time.monotonic() < deadline, "the winner's transaction never started"
        time.sleep(0.05)
    (folder / "go").touch()
    results = [(p.wait(timeout=300), *p.communicate()) for p in processes]
    assert winner.wait(timeout=60) == 0, winner.communicate()
    failures = [err[-3000:] for code, _, err in results if code != 0]
    assert failures == [], failures
    assert [out.strip().splitlines()[-1] for _, out, _ in results] == ["loaded"] * LOADS + ["writer"]

    con = srdp.connect(config=cfg)
    try:
        con.execute(reader_secret(servers, database))
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        counted = [
            con.execute(f"SELECT count(*), sum(id) FROM lake.raw_{i}.events_{i}").fetchone() for i in range(1, LOADS + 1)
        ]
    finally:
        con.close()
    assert counted == [(10, sum(range(i * 100, i * 100 + 10))) for i in range(1, LOADS + 1)]
    assert servers.psql(
        "SELECT count(*) FROM pg_namespace WHERE nspname = 'ducklake'", database
    ).split() == ["1"]
