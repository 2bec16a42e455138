"""What the nightly job reports, as pure functions (srdp.dagster.maintenance): the per-catalog log
lines of the datasets with nothing to do, cut at IDLE_NAMES_PER_LINE names, and the run's totals.
The job itself is run for real in test_dagster.py, test_dagster_health.py and
test_dagster_app_io_manager.py."""

from __future__ import annotations

from srdp.dagster import maintenance as m


def result(status: str, rows: int = 0, processed: int | None = None, rewritten: int = 0) -> dict:
    return {"status": status, "rows_flushed": rows, "files_processed": processed, "files_rewritten": rewritten}


def test_no_idle_datasets_no_line() -> None:
    assert m.idle_lines("lake", []) == []


def test_one_idle_dataset_is_one_line_in_the_singular() -> None:
    assert m.idle_lines("lake", ["main.a"]) == ["srdp: lake: 1 dataset had nothing to do (1/1): main.a"]
    assert m.idle_lines("lake", ["main.a"], dry_run=True) == ["srdp: lake: 1 dataset has nothing to do (1/1): main.a"]


def test_idle_names_are_cut_at_the_bound_and_none_is_lost() -> None:
    names = [f"s.t{i}" for i in range(2 * m.IDLE_NAMES_PER_LINE + 1)]
    lines = m.idle_lines("lake", names)
    n = len(names)
    assert [line.split(": ")[2] for line in lines] == [f"{n} datasets had nothing to do ({k}/3)" for k in (1, 2, 3)]
    assert lines[0] == f"srdp: lake: {n} datasets had nothing to do (1/3): " + ", ".join(names[: m.IDLE_NAMES_PER_LINE])
    assert lines[2] == f"srdp: lake: {n} datasets had nothing to do (3/3): s.t{n - 1}"
    listed = [name for line in lines for name in line.split("): ", 1)[1].split(", ")]
    assert listed == names


def test_had_step_is_anything_but_nothing_to_do() -> None:
    assert [m.had_step(result(s)) for s in ("nothing to do", "compacted", "flushed", "planned", "skipped: auto_compact is false")] == [
        False, True, True, True, True
    ]


def test_totals_count_rows_files_and_each_status_by_its_first_clause() -> None:
    results = [
        result("compacted", 15, 4),
        result("flushed; 3 inline deletion markers written to a delete file", 8, None),
        result("compacted (bounded: 3 calls)", 0, 6),
        result("compacted; 2 files with deletes rewritten (9 deleted rows left out)", 0, 0, 2),
        result("nothing to do"),
        result("skipped: auto_compact is false"),
    ]
    assert m.run_totals(results) == {
        "datasets": 6,
        "rows_flushed": 23,
        "files_rewritten": 2,
        "files_merged": 10,
        "by_status": {"compacted": 3, "flushed": 1, "nothing to do": 1, "skipped: auto_compact is false": 1},
    }
    assert m.run_totals(results, dry_run=True)["rows_flushed"] == 0
    assert m.run_totals(results, dry_run=True)["files_rewritten"] == 0
