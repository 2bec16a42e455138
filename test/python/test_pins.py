"""srdp.dagster.pins' pure parts: PinLookup finds the snapshot and writes the input's log line in a
thread of its own, hands back the lookup's exception on the step's thread, writes no line when
none was handed over or the lookup failed, and keeps the line's own error; pin_given passes a
given snapshot without a lookup."""

import threading
from collections.abc import Callable

import dagster as dg
import pytest

from srdp.dagster.pins import PinLookup, PinRequest, pin_given


def _recorder() -> tuple[list[tuple[str, str]], Callable[[str], None]]:
    lines: list[tuple[str, str]] = []
    return lines, lambda line: lines.append((line, threading.current_thread().name))


def test_the_lookup_runs_in_its_own_thread_and_the_line_names_the_snapshot() -> None:
    release = threading.Event()
    lines, log = _recorder()

    def find() -> int:
        release.wait(10)
        return 12

    lookup = PinLookup(find, log)
    lookup.log_as("lake.a.t: reading whole table")
    assert lines == []  # nothing is written before the snapshot is known
    release.set()
    assert lookup.snapshot() == 12
    lookup.close()
    assert lines == [("lake.a.t: reading whole table at snapshot 12", "srdp-input")]
    assert lookup.log_error is None


def test_no_snapshot_writes_the_line_without_one() -> None:
    lines, log = _recorder()
    lookup = PinLookup(lambda: None, log)
    lookup.log_as("lake.a.t: reading whole table")
    assert lookup.snapshot() is None
    lookup.close()
    assert [line for line, _ in lines] == ["lake.a.t: reading whole table"]


def test_a_failed_lookup_raises_on_the_step_thread_and_writes_no_line() -> None:
    lines, log = _recorder()

    def find() -> int:
        raise ValueError("the event log is unreachable")

    lookup = PinLookup(find, log)
    lookup.log_as("lake.a.t: reading whole table")
    with pytest.raises(ValueError, match="^the event log is unreachable$"):
        lookup.snapshot()
    lookup.close()
    assert lines == []


def test_a_lookup_closed_before_its_line_was_handed_over_writes_none() -> None:
    lines, log = _recorder()
    lookup = PinLookup(lambda: 3, log)
    lookup.close()  # the step failed before the slice was known
    assert lines == [] and not lookup._thread.is_alive()


def test_the_line_s_own_error_is_kept_for_the_caller() -> None:
    def log(line: str) -> None:
        raise RuntimeError(f"storage refused {line!r}")

    lookup = PinLookup(lambda: 3, log)
    lookup.log_as("x")
    lookup.snapshot()
    lookup.close()
    assert str(lookup.log_error) == "storage refused 'x at snapshot 3'"


def test_pin_given_is_the_snapshot_of_a_pin_that_needs_no_lookup() -> None:
    request = PinRequest(instance=None, asset_key=dg.AssetKey(["a"]), partitions=None)
    assert (pin_given(7), pin_given(None), pin_given(request)) == (7, None, None)
