"""The hourly pressure monitor says what it checked on every run, all well or not: one INFO line
with the catalogs and datasets checked, the threshold and the largest inlined-row count."""

from __future__ import annotations

import logging

from srdp.dagster.health import DatasetHealth
from srdp.dagster.pressure import monitor_summary
from test_dagster import Collector, build_lake, messages, run_monitor

SUMMARY = "srdp pressure monitor:"


def _health(table: str, inlined: int, catalog: str = "lake") -> DatasetHealth:
    return DatasetHealth(catalog, "main", table, inlined, 0, 1, 0, 100)


def test_the_summary_line_names_what_was_checked() -> None:
    assert monitor_summary(["lake"], [_health("a", 3), _health("b", 7)], {"lake": 12}, 0) == (
        "srdp pressure monitor: 1 catalog (lake), 2 datasets checked; threshold 12 inlined rows; "
        "largest lake.main.b with 7 inlined rows; none over the threshold"
    )
    assert monitor_summary(
        ["lake", "other"], [_health("a", 30), _health("b", 0, "other")], {"lake": 12, "other": 100}, 1
    ) == (
        "srdp pressure monitor: 2 catalogs (lake, other), 2 datasets checked; threshold 12 inlined rows "
        "(lake), 100 (other); largest lake.main.a with 30 inlined rows; 1 over the threshold"
    )
    assert monitor_summary(["lake"], [], {"lake": 12}, 0) == (
        "srdp pressure monitor: 1 catalog (lake), 0 datasets checked; threshold 12 inlined rows; "
        "largest none (no dataset); none over the threshold"
    )


def test_a_quiet_run_logs_one_info_line(tmp_path) -> None:
    cfg = build_lake(tmp_path)  # inlined: a 15, b 10, c 20; pressure_warning_rows 12
    result = run_monitor(build_lake(tmp_path / "quiet", datasets={("main", "a"): (2, 1)}), Collector())
    assert result.success and result.output_for_node("srdp_check_catalog_pressure") == 0
    assert [m for m in messages(result, logging.INFO) if m.startswith(SUMMARY)] == [
        "srdp pressure monitor: 1 catalog (lake), 1 dataset checked; threshold 12 inlined rows; "
        "largest lake.main.a with 10 inlined rows; none over the threshold"
    ]
    # A run with datasets over the threshold logs the same line once, beside its warnings.
    result = run_monitor(cfg, Collector())
    assert [m for m in messages(result, logging.INFO) if m.startswith(SUMMARY)] == [
        "srdp pressure monitor: 1 catalog (lake), 3 datasets checked; threshold 12 inlined rows; "
        "largest lake.other.c with 20 inlined rows; 2 over the threshold"
    ]
