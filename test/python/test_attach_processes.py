"""Attach behaviour across processes and working directories, on SQLite and DuckDB-file catalogs."""

from __future__ import annotations

import json
import subprocess

import duckdb
import pytest

from conftest import PY, run_python, write_config

CATALOGS = """
[catalogs.lite]
metadata = "sqlite:catalog/lite.sqlite"
data_path = "data/lite"

[catalogs.duck]
metadata = "catalog/duck.ducklake"
metadata_schema = "meta"
data_path = "data/duck"
"""

READ_BACK = """
import json, srdp
con = srdp.connect(config={cfg!r})
row = con.sql("SELECT * FROM srdp_attach_catalog({catalog!r})").fetchone()
data = con.sql("SELECT count(*), sum(i), sum(hash(i, s)) FROM {catalog}.main.events").fetchone()
meta = con.sql("SELECT metadata, data_path FROM srdp_catalogs() WHERE catalog = {catalog!r}").fetchone()
print(json.dumps({{"role": row[2], "read_only": row[3], "status": row[7], "data": [str(v) for v in data], "meta": meta}}))
"""


@pytest.mark.parametrize("catalog", ["lite", "duck"])
def test_writer_batches_are_read_by_a_reader_in_another_process(connect, tmp_path, catalog):
    cfg = write_config(tmp_path, CATALOGS)
    con = connect(config=cfg)
    assert con.sql(f"SELECT status FROM srdp_attach_catalog('{catalog}', role := 'writer')").fetchone() == ("attached",)
    con.execute(f"CREATE TABLE {catalog}.main.events (i BIGINT, s VARCHAR)")
    for batch in range(5):
        con.execute(f"INSERT INTO {catalog}.main.events SELECT {batch} * 10 + range, 'b{batch}' FROM range(10)")
    # The same rows computed by plain DuckDB, without the lake.
    with duckdb.connect() as plain:
        expected = [str(v) for v in plain.execute(
            "SELECT count(*), sum(i), sum(hash(i, s)) FROM (SELECT b * 10 + r AS i, 'b' || b AS s FROM range(5) t(b), range(10) u(r))"
        ).fetchone()]
    assert expected[:2] == ["50", "1225"]
    assert [str(v) for v in con.sql(f"SELECT count(*), sum(i), sum(hash(i, s)) FROM {catalog}.main.events").fetchone()] == expected
    if catalog == "duck":
        # A DuckDB-file catalog is single-process: the writer lets go before the reader comes.
        con.execute(f"DETACH {catalog}")
    seen = json.loads(run_python(READ_BACK.format(cfg=str(cfg), catalog=catalog)))
    assert (seen["role"], seen["read_only"], seen["status"]) == ("reader", True, "attached")
    assert seen["data"] == expected


def test_relative_paths_resolve_against_the_file_not_the_working_directory(connect, tmp_path):
    project = tmp_path / "project"
    cfg = write_config(project, CATALOGS)
    con = connect(config=cfg)
    con.execute("SELECT * FROM srdp_attach_catalog('lite', role := 'writer')")
    con.execute("CREATE TABLE lite.main.events AS SELECT range AS i, 'x' AS s FROM range(4)")
    elsewhere = tmp_path / "somewhere" / "else"
    elsewhere.mkdir(parents=True)
    # Same file, named relative to two different working directories.
    from_project = json.loads(run_python(READ_BACK.format(cfg="srdp.toml", catalog="lite"), cwd=project))
    from_elsewhere = json.loads(run_python(READ_BACK.format(cfg="../../project/srdp.toml", catalog="lite"), cwd=elsewhere))
    assert from_project["meta"] == from_elsewhere["meta"] == [
        f"sqlite:{project}/catalog/lite.sqlite",
        f"{project}/data/lite/",
    ]
    assert from_project["data"] == from_elsewhere["data"]
    assert from_project["data"][:2] == ["4", "6"]
    # Nothing was created relative to either working directory.
    assert list(elsewhere.iterdir()) == []


def test_metadata_schema_round_trip_from_another_process(connect, tmp_path):
    cfg = write_config(tmp_path, CATALOGS)
    con = connect(config=cfg)
    con.execute("SELECT * FROM srdp_attach_catalog('duck', role := 'writer')")
    con.execute("CREATE TABLE duck.main.events AS SELECT range AS i, 'y' AS s FROM range(6)")
    # The runner connection keeps this database open until the process exits, so closing the
    # Python connection does not release the DuckDB-file lock; DETACH (database-wide) does.
    con.execute("DETACH duck")
    seen = json.loads(run_python(READ_BACK.format(cfg=str(cfg), catalog="duck")))
    assert (seen["role"], seen["read_only"], seen["status"]) == ("reader", True, "attached")
    assert seen["data"][:2] == ["6", "15"]
    assert seen["meta"] == [f"{tmp_path}/catalog/duck.ducklake", f"{tmp_path}/data/duck/"]
    # Contrast: a plain ATTACH without METADATA_SCHEMA in another process does not see the lake.
    out = run_python(
        f"""
        import srdp, duckdb
        con = duckdb.connect(config=srdp.duckdb_config())
        try:
            con.execute("ATTACH 'ducklake:{tmp_path}/catalog/duck.ducklake' AS plain (DATA_PATH '{tmp_path}/data/duck/', READ_ONLY)")
            print("attached")
        except duckdb.Error as e:
            print("refused:", e)
        """
    )
    assert out.startswith("refused:") and "creating a new DuckLake is explicitly disabled" in out


def test_srdp_config_setting_is_per_connection(connect, tmp_path):
    a = write_config(tmp_path, '[catalogs.a]\nmetadata = "a.ducklake"\ndata_path = "a"\n', "a.toml")
    b = write_config(tmp_path, '[catalogs.b]\nmetadata = "b.ducklake"\ndata_path = "b"\n', "b.toml")
    con = connect()
    first, second = con.cursor(), con.cursor()
    first.execute(f"SET srdp_config = '{a}'")
    second.execute(f"SET srdp_config = '{b}'")
    assert first.sql("SELECT catalog FROM srdp_catalogs()").fetchall() == [("a",)]
    assert second.sql("SELECT catalog FROM srdp_catalogs()").fetchall() == [("b",)]
    assert first.sql("SELECT config_path FROM srdp_version()").fetchone() == (str(a),)


def test_environment_variable_and_working_directory_discovery(tmp_path):
    write_config(tmp_path, '[catalogs.cwd]\nmetadata = "c.ducklake"\ndata_path = "c"\n')
    env_file = write_config(tmp_path, '[catalogs.env]\nmetadata = "e.ducklake"\ndata_path = "e"\n', "env.toml")
    code = """
        import srdp
        print(srdp.connect().sql("SELECT catalog FROM srdp_catalogs()").fetchone()[0])
    """
    assert run_python(code, cwd=tmp_path, env={"SRDP_CONFIG": ""}).strip() == "cwd"
    assert run_python(code, cwd=tmp_path, env={"SRDP_CONFIG": str(env_file)}).strip() == "env"


FIRST_ATTACH = """
import os, sys, time, srdp
for n in range(int(sys.argv[1])):
    con = srdp.connect(config=f"lake{n}/srdp.toml")
    con.execute("SET enable_progress_bar = false")  # a retried attach passes 2 s; its bar prints to stdout
    print("ready", n, flush=True)
    while not os.path.exists(f"lake{n}/go"):
        time.sleep(0.001)
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')")
    snapshots = con.execute("SELECT count(*) FROM lake.snapshots()").fetchone()[0]
    con.close()
    print("attached", n, snapshots, flush=True)
"""


def test_two_first_attaches_of_one_new_sqlite_lake_both_succeed(tmp_path):
    """Two processes attach the same new SQLite lake as writers at the same moment, 10 lakes in a
    row: one creates DuckLake's metadata while the other probes it. Without srdp's retry the
    prober failed with "Failed to probe DuckLake metadata: Current transaction is aborted" in 8 of
    60 attaches (clean-clone make test, test_landing_kill's two promotions). Both must attach,
    and see the one lake with its one creation snapshot."""
    rounds = 10
    for n in range(rounds):
        write_config(tmp_path / f"lake{n}", '[catalogs.lake]\nmetadata = "sqlite:lake.sqlite"\ndata_path = "data/"\n')
    processes = [
        subprocess.Popen([PY, "-c", FIRST_ATTACH, str(rounds), str(p)], cwd=tmp_path, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for p in range(2)
    ]

    def expect(process: subprocess.Popen, wanted: str) -> None:
        assert process.stdout is not None and process.stderr is not None
        line = process.stdout.readline()
        if line.strip() != wanted:
            process.kill()
            process.wait(timeout=60)
            raise AssertionError(f"wanted {wanted!r}, got {line!r}; exit {process.returncode}: {process.stderr.read()}")

    try:
        for n in range(rounds):
            for process in processes:
                expect(process, f"ready {n}")
            (tmp_path / f"lake{n}" / "go").touch()
            for process in processes:
                expect(process, f"attached {n} 1")
        for process in processes:
            _, err = process.communicate(timeout=60)
            assert process.returncode == 0, err
    finally:
        for process in processes:
            process.kill()
