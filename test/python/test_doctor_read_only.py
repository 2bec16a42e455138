"""``python -m srdp doctor`` is read-only: a catalog whose lake does not exist yet is reported as
such and nothing is created, unless ``--create`` asks for it; it also says which of srdp's extras
are importable. Run through the real command line (a subprocess of this venv's Python), from a
temporary folder.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import srdp
from conftest import PY, write_config

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake/"

[catalogs.lake.schemas.curated]
writer = "dbt"
layer = "curated"

[catalogs.other]
metadata = "meta/other.duckdb"
data_path = "data/other/"
"""


def doctor(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real command line."""
    env = {k: v for k, v in os.environ.items() if k not in ("SRDP_CONFIG",)}
    return subprocess.run([PY, "-m", "srdp", "doctor", "--config", "srdp.toml", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


#: The extras line in the checkout's venv, which has every extra (test_dist.py checks a venv
#: with some extras missing).
EXTRAS = "ok   extras: importable: dagster, dbt, dlt, ingest, pandas, polars"


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("doctor")
    write_config(path, CONFIG)
    return path


def test_doctor_reports_missing_lakes_and_creates_nothing(work: Path) -> None:
    before = listing(work)
    done = doctor(work)
    assert listing(work) == before == ["srdp.toml"]
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert lines[0].startswith("srdp ")
    assert lines[1].startswith("ok   extension directory: ")
    assert lines[2].startswith("ok   extension: ")
    assert lines[3:] == [
        f"ok   config: {work / 'srdp.toml'}: 2 catalogs: lake (sqlite), other (duckdb)",
        "ok   catalog lake: not created yet (the writer's first attach creates it; --create creates it now)",
        "ok   catalog other: not created yet (the writer's first attach creates it; --create creates it now)",
        EXTRAS,
        "all 6 checks passed",
    ]


def test_doctor_create_creates_the_lakes_then_checks_both_roles(work: Path) -> None:
    done = doctor(work, "--create")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[4:] == [
        "ok   catalog lake: attaches as writer (read-write), which created the lake",
        "ok   catalog lake: attaches as reader (read-only)",
        "ok   catalog other: attaches as writer (read-write), which created the lake",
        "ok   catalog other: attaches as reader (read-only)",
        EXTRAS,
        "all 8 checks passed",
    ]
    assert (work / "catalog" / "lake.sqlite").is_file() and (work / "meta" / "other.duckdb").is_file()
    con = srdp.connect(config=work / "srdp.toml")
    try:
        for catalog in ("lake", "other"):
            assert srdp.call(con, "srdp_attach_catalog", catalog)[0]["status"] == "attached"
            con.execute(f"DETACH {catalog}")  # this process would hold other.duckdb's lock otherwise
    finally:
        con.close()
    # An existing lake: both roles are checked, and nothing is written (same files, same sizes).
    sizes = {p: p.stat().st_size for p in work.rglob("*") if p.is_file()}
    again = doctor(work)
    assert again.returncode == 0
    assert again.stdout.splitlines()[4:] == [
        "ok   catalog lake: attaches as writer (read-write)",
        "ok   catalog lake: attaches as reader (read-only)",
        "ok   catalog other: attaches as writer (read-write)",
        "ok   catalog other: attaches as reader (read-only)",
        EXTRAS,
        "all 8 checks passed",
    ]
    assert set(sizes) == {p for p in work.rglob("*") if p.is_file()}
