"""Maintenance finishes beside loaders: two loader processes, one maintenance process, 60 s.

The scenario is bench/load.py's (``.venv/bin/python bench/load.py`` runs it with other durations,
loader counts, loader pauses and a PostgreSQL catalog, and prints the figures). Two loader
processes commit small autocommit batches, 20 ms apart, into two tables of a SQLite catalog for
60 s while a third process runs ``srdp_compact`` and ``srdp_flush`` in turn, with srdp's default
retry policy. Passing needs every
maintenance call to succeed, every row a loader committed to be there exactly once (through
DuckLake and in the live Parquet files) and nothing else, at least 3 calls that started and
succeeded while the loaders were still loading (a call that keeps meeting ``database is locked``
until the loaders stop does not finish under load, it waits the load out, and leaves fewer), and
at least one call that needed a retry, so the run really contended.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))

import load  # noqa: E402

# Three processes on two cores for 60 s: it measures throughput, so it runs alone in make test.
pytestmark = pytest.mark.serial


def test_maintenance_finishes_beside_two_loaders_on_sqlite(tmp_path: Path) -> None:
    # Each loader pauses 20 ms after a batch. Back to back (loader_pause_s = 0), two loaders commit
    # every ~17 ms, and on SQLite a maintenance transaction longer than that gap can lose every
    # attempt until the loaders stop (README, Operating notes): seen in 2 of 4 runs on 2026-12-04.
    settings = load.Settings(seconds=60.0, loaders=2, min_calls=3, loader_pause_s=0.02)
    outcome = load.run(load.sqlite_lake(tmp_path / "lake"), settings, tmp_path / "run")
    print(load.report(outcome))
    found = load.problems(outcome) + load.proof_gaps(outcome)
    assert found == [], "\n".join(found)
    # The figures the issue asks for, stated once more in the test's own terms.
    figures = load.summarize(outcome)
    assert figures["failures"] == 0 and figures["loader batches failed"] == 0
    assert figures["rows checked"] == figures["rows committed"] > 0
    assert figures["calls succeeded during load"] >= settings.min_calls
    assert figures["max attempts"] >= 2
