"""Maintenance finishes beside loaders that never pause: SQLite with two, PostgreSQL with four.

The scenario is bench/load.py's (``.venv/bin/python bench/load.py`` runs it with other durations,
loader counts and backends, and prints the loaders' throughput beside maintenance against the
same loaders alone). Loader processes commit small autocommit batches back to back, with no
pause, into two tables while another process runs ``srdp_compact`` and ``srdp_flush`` in turn,
with srdp's default retry policy and the catalog's ``max_retry_seconds = 30``. Passing needs
every maintenance call to succeed and to finish within those 30 s, no loader batch given up,
every row a loader committed to be there exactly once (through DuckLake and in the live Parquet
files) and nothing else, at least ``min_calls`` calls that started and succeeded while the
loaders were still loading (a call that keeps losing until the loaders stop waits the load out
instead, and leaves fewer), and on SQLite at least one call that needed a retry, so the run
really contended (on PostgreSQL DuckLake's own commit retries may absorb it).

Before srdp cleared the way for a flush (src/maintenance/write_lock.rs), two loaders with no pause
starved the flush on SQLite: one call took 28 s and 56 attempts and finished only when the
loaders stopped.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))

import load  # noqa: E402

# Several processes on two cores for tens of seconds: it measures throughput, so it runs alone
# in make test.
pytestmark = pytest.mark.serial

MAX_RETRY_SECONDS = 30


def check(outcome: load.Outcome, settings: load.Settings, contention: bool) -> None:
    print(load.report(outcome))
    found = load.problems(outcome) + load.proof_gaps(outcome, contention=contention)
    assert found == [], "\n".join(found)
    # The figures the issue asks for, stated once more in the test's own terms.
    figures = load.summarize(outcome)
    assert figures["failures"] == 0 and figures["loader batches failed"] == 0
    assert figures["rows checked"] == figures["rows committed"] > 0
    assert figures["calls succeeded during load"] >= settings.min_calls
    assert figures["max call duration s"] <= MAX_RETRY_SECONDS
    if contention:
        assert figures["max attempts"] >= 2


def test_maintenance_finishes_beside_two_loaders_without_pause_on_sqlite(tmp_path: Path) -> None:
    settings = load.Settings(seconds=45.0, loaders=2, min_calls=10, loader_pause_s=0.0,
                             max_call_s=MAX_RETRY_SECONDS)
    lake = load.sqlite_lake(tmp_path / "lake", extra=f"max_retry_seconds = {MAX_RETRY_SECONDS}")
    check(load.run(lake, settings, tmp_path / "run"), settings, contention=True)


def test_maintenance_finishes_beside_four_loaders_without_pause_on_postgres(servers, tmp_path: Path) -> None:
    settings = load.Settings(seconds=30.0, loaders=4, min_calls=5, loader_pause_s=0.0,
                             max_call_s=MAX_RETRY_SECONDS)
    lake = load.postgres_lake(servers, tmp_path / "lake", extra=f"max_retry_seconds = {MAX_RETRY_SECONDS}")
    check(load.run(lake, settings, tmp_path / "run"), settings, contention=False)
