"""Shared helpers for the Python tests: real DuckDB 1.5.5 with the built srdp extension."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import srdp

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable

# The files that take longest (40-100 s each in `make test`), run first: `make test` hands whole
# files to two workers (pytest-xdist --dist loadfile) in collection order, and a long file handed
# out last keeps one worker busy after the other has finished.
LONGEST_FILES_FIRST = (
    "test_maintenance_planner.py",
    "test_dist.py",
    "test_landing_kill.py",
    "test_dbt_materializations.py",
    "test_demo.py",
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "serial: measures throughput under load and needs the machine to itself; make test runs "
        "these after the parallel run, in one process",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Moves the tests of LONGEST_FILES_FIRST to the front, in that order; every file keeps the
    order of its own tests, and the other files keep theirs."""

    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return LONGEST_FILES_FIRST.index(name) if name in LONGEST_FILES_FIRST else len(LONGEST_FILES_FIRST)

    items.sort(key=rank)


def write_config(directory: Path, text: str, name: str = "srdp.toml") -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def run_python(code: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120) -> str:
    """Runs ``code`` in a fresh Python process (a second DuckDB instance) and returns stdout."""
    full_env = {**os.environ, **(env or {})}
    result = subprocess.run(
        [PY, "-c", textwrap.dedent(code)],
        cwd=cwd or REPO,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if result.returncode != 0:
        raise AssertionError(f"child process failed ({result.returncode}):\n{result.stderr}")
    return result.stdout


@pytest.fixture
def connect():
    """Opens srdp connections and closes them at the end of the test."""
    opened = []

    def _connect(*args, **kwargs):
        con = srdp.connect(*args, **kwargs)
        opened.append(con)
        return con

    yield _connect
    for con in opened:
        con.close()


@pytest.fixture(scope="session")
def servers(tmp_path_factory):
    """A PostgreSQL cluster and an S3-compatible store for the whole session, stopped at the end.

    Never skips: if a server cannot start, every test that needs it errors with the reason.
    """
    sys.path.insert(0, str(REPO / "scripts"))
    import servers as servers_module

    # Not under pytest's private tmp tree: the postgres user must be able to reach the cluster.
    import secrets as _secrets
    import tempfile

    workdir = Path(tempfile.gettempdir()) / f"srdp-servers-{os.getpid()}-{_secrets.token_hex(4)}"
    started = servers_module.start(workdir)
    try:
        yield started
    finally:
        started.stop()
