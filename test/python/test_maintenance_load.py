"""Maintenance finishes beside loaders: two loader processes, one maintenance process, 60 s.

The scenario is bench/load.py's (``make``-free: ``.venv/bin/python bench/load.py`` runs the same
with other durations, loader counts and backends and prints the figures). Two loader processes
commit small autocommit batches into two tables of a SQLite catalog for 60 s while a third process
runs ``srdp_compact`` and ``srdp_flush`` in turn. Passing needs every maintenance call to succeed,
every row a loader committed to be there exactly once (through DuckLake and in the live Parquet
files) and nothing else, maintenance calls completed inside the loading window, and at least one
call that needed a retry, so the run really contended.
"""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))

import load  # noqa: E402


def run_and_check(lake: load.Lake, settings: load.Settings, workdir: Path) -> dict:
    outcome = load.run(lake, settings, workdir)
    figures = load.summarize(outcome)
    print(load.report(outcome))
    found = load.problems(outcome) + load.proof_gaps(outcome)
    assert found == [], "\n".join(found)
    # The figures the issue asks for, stated once more in the test's own terms.
    assert figures["failures"] == 0 and figures["loader batches failed"] == 0
    assert figures["rows checked"] == figures["rows committed"] > 0
    assert figures["calls succeeded during load"] >= settings.min_calls
    assert figures["max attempts"] >= 2
    return figures


def test_maintenance_finishes_beside_two_loaders_on_sqlite(tmp_path: Path) -> None:
    """The issue's scenario: 60 s, 2 loaders, SQLite catalog, srdp's default retry policy."""
    lake = load.sqlite_lake(tmp_path / "lake")
    run_and_check(lake, load.Settings(seconds=60.0, loaders=2), tmp_path / "run")
