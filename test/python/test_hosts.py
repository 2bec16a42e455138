"""The same srdp.duckdb_extension loads in the DuckDB 1.5.5 CLI and in Python DuckDB 1.5.5."""

from __future__ import annotations

import csv
import io
import subprocess

import duckdb
import srdp

from conftest import REPO, write_config


def test_python_loads_and_answers(connect):
    con = connect()
    version, duckdb_version, config_path = con.sql("SELECT * FROM srdp_version()").fetchone()
    assert duckdb.__version__ == "1.5.5"
    assert duckdb_version == "v1.5.5"
    assert version.startswith("v0.1.0")
    assert config_path is None


def test_cli_loads_the_same_file_and_attaches(tmp_path):
    cfg = write_config(
        tmp_path,
        """
        [catalogs.lake]
        metadata = "sqlite:catalog/lake.sqlite"
        data_path = "data"
        """,
    )
    sql = f"""
        SET extension_directory = '{srdp.extension_directory()}';
        SET autoinstall_known_extensions = false;
        LOAD '{srdp.extension_path()}';
        SET srdp_config = '{cfg}';
        SELECT status FROM srdp_attach_catalog('lake', role := 'writer');
        CREATE TABLE lake.main.t AS SELECT range AS i FROM range(3);
        SELECT extension_version, duckdb_version, config_path, (SELECT sum(i) FROM lake.main.t) AS total
        FROM srdp_version();
    """
    out = subprocess.run(
        [str(REPO / ".venv" / "bin" / "duckdb"), "-unsigned", "-csv", "-c", sql],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    rows = list(csv.reader(io.StringIO(out.stdout)))
    assert rows[0:2] == [["status"], ["attached"]]
    assert rows[2] == ["extension_version", "duckdb_version", "config_path", "total"]
    assert rows[3][1:] == ["v1.5.5", str(cfg), "3"]
    assert rows[3][0].startswith("v0.1.0")


def test_cli_without_unsigned_refuses_with_duckdbs_message():
    out = subprocess.run(
        [str(REPO / ".venv" / "bin" / "duckdb"), "-c", f"LOAD '{srdp.extension_path()}'"],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode != 0
    assert "unsigned extensions are disabled" in out.stderr
