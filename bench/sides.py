"""Side-by-side rounds, shared by the scenario benches (bench_partitions, bench_replace,
bench_history, bench_dlt): every side of a scenario runs once per round, in a fresh process,
in an order that rotates from round to round; the figure is the median of the per-round ratios
(srdp / the other side), so a busy moment of the shared machine hits both sides of a round.
The machine's load average (``os.getloadavg()``) is read before every round and printed beside
the figures.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MARK = "BENCH_RESULT "

#: The Dagster instance of the IO-manager benches: no telemetry, and no compute-log capture. With
#: capture on (Dagster's default) every run starts a ``tail -F`` and a Python watcher process,
#: which take a core during the first ~50 ms of the step: on a 2-core machine they landed in the
#: middle of a one-day read (~50 ms) at random, spread its time by +-20 % and slowed whichever
#: side used both cores at that moment. Both sides run on the same instance configuration.
DAGSTER_YAML = """telemetry:
  enabled: false
compute_logs:
  module: dagster._core.storage.noop_compute_log_manager
  class: NoOpComputeLogManager
"""


class BenchError(RuntimeError):
    """A worker failed, or the sides did not end with the same data (``RESULT MISMATCH: ...``)."""


def check(cond: bool, what: str) -> None:
    """Stops the run when the sides disagree about the data."""
    if not cond:
        raise BenchError("RESULT MISMATCH: " + what)


def peak_rss_mb() -> float:
    """Peak resident set of this process so far (``ru_maxrss`` is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def current_rss_mb() -> float:
    """Resident set of this process now (``VmRSS``), 0 where /proc is missing."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def load_average() -> float:
    """The machine's 1-minute load average."""
    return round(os.getloadavg()[0], 2)


def spawn(script: str, spec: dict, env: dict[str, str] | None = None) -> dict:
    """Runs ``script --worker <spec>`` in a fresh Python process; its last MARK line, as JSON."""
    proc = subprocess.run(
        [sys.executable, script, "--worker", json.dumps(spec)],
        capture_output=True, text=True, env={**os.environ, **(env or {})},
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        raise BenchError(f"worker {spec} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}{proc.stdout[-2000:]}")
    return json.loads(lines[-1][len(MARK):])


def emit(out: dict) -> None:
    """A worker's answer: one MARK line of JSON on stdout."""
    sys.stdout.write(MARK + json.dumps(out) + "\n")
    sys.stdout.flush()


class Worker:
    """A worker process run in lockstep with others: ``script --serve <spec>`` answers every
    command line on its stdin with one MARK line of JSON (stderr goes to a file, so that a
    chatty worker never blocks on a full pipe)."""

    def __init__(self, script: str, spec: dict, log: Path) -> None:
        self.log = log
        self._err = log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, script, "--serve", json.dumps(spec)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, text=True,
        )

    def ask(self, command: str) -> dict:
        """Sends ``command``; its answer."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        for line in self.proc.stdout:
            if line.startswith(MARK):
                return json.loads(line[len(MARK):])
        self.close()
        raise BenchError(f"worker failed on {command!r} (exit {self.proc.returncode}):\n{self.log.read_text()[-4000:]}")

    def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        self.proc.wait()
        self._err.close()


def rotate(sides: Sequence[str], turn: int) -> list[str]:
    """Which side runs first changes from round to round."""
    k = turn % len(sides)
    return list(sides[k:]) + list(sides[:k])


@dataclass
class Scenario:
    """One scenario's runs: per side, per round, the seconds and the peak RSS of its process."""

    name: str
    sides: list[str]
    #: The side every other side is compared with (the ratio's denominator is the other side).
    srdp: str = "srdp"
    #: Per other side, the ratio srdp must stay within (shown as met / MISSED), if any.
    goals: dict[str, float] = field(default_factory=dict)
    seconds: dict[str, list[float]] = field(default_factory=dict)
    rss_mb: dict[str, list[float]] = field(default_factory=dict)
    #: Per other side, the per-round ratios when a round computes its own (lockstep sides: the
    #: median of the ratios of the round's back-to-back pairs); otherwise seconds / seconds.
    round_ratios: dict[str, list[float]] = field(default_factory=dict)
    loads: list[float] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, side: str, seconds: float, rss_mb: float | None = None) -> None:
        self.seconds.setdefault(side, []).append(seconds)
        if rss_mb is not None:
            self.rss_mb.setdefault(side, []).append(rss_mb)

    def ratios(self, other: str, of: str = "seconds") -> list[float]:
        """srdp / ``other``, one per round (rounds where both sides ran)."""
        if of == "seconds" and other in self.round_ratios:
            return self.round_ratios[other]
        mine = (self.seconds if of == "seconds" else self.rss_mb).get(self.srdp, [])
        theirs = (self.seconds if of == "seconds" else self.rss_mb).get(other, [])
        return [a / b for a, b in zip(mine, theirs) if b > 0]

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "scenario": self.name,
            "median_s": {s: statistics.median(v) for s, v in self.seconds.items() if v},
            "seconds": self.seconds,
            "rss_mb": self.rss_mb,
            "peak_rss_mb": {s: max(v) for s, v in self.rss_mb.items() if v},
            "load_average": self.loads,
            "ratios": {},
            "rss_ratios": {},
            **self.extra,
        }
        for other in self.sides:
            if other == self.srdp:
                continue
            ratios = self.ratios(other)
            if ratios:
                out["ratios"][other] = {"median": statistics.median(ratios), "each": ratios}
            rss = self.ratios(other, of="rss")
            if rss:
                out["rss_ratios"][other] = {"median": statistics.median(rss), "each": rss}
        return out


def run_rounds(
    scenarios: Sequence[Scenario],
    rounds: int,
    run: Callable[[Scenario, str, int], tuple[float, float | None]],
    log: Callable[[str], None] = print,
) -> None:
    """``rounds`` rounds; in each, every scenario runs each of its sides once (``run(scenario,
    side, round)`` returns seconds and peak RSS MB), the order of the sides rotating by round.

    A scenario with ``extra["pairs"] = k`` (two sides, a short run where one process's noise
    would decide the round) runs k back-to-back pairs per round instead, the order alternating
    from pair to pair: the round's ratio is the median of its pairs' ratios, and each side's
    seconds and RSS the median of its k runs."""
    for turn in range(rounds):
        load = load_average()
        log(f"  round {turn + 1}/{rounds} (load average {load})")
        for scenario in scenarios:
            scenario.loads.append(load)
            pairs = int(scenario.extra.get("pairs", 1))
            runs: dict[str, list[tuple[float, float | None]]] = {}
            for pair in range(pairs):
                for side in rotate(scenario.sides, turn + pair):
                    seconds, rss = run(scenario, side, turn)
                    runs.setdefault(side, []).append((seconds, rss))
                    shown = f", peak RSS {rss:.0f} MB" if rss is not None else ""
                    log(f"    {scenario.name:<40} {side:<31} {seconds:8.3f} s{shown}")
            for side, done in runs.items():
                sizes = [r for _, r in done if r is not None]
                scenario.add(side, median([s for s, _ in done]), median(sizes) if sizes else None)
            if pairs > 1:
                mine = [s for s, _ in runs[scenario.srdp]]
                for other in scenario.sides:
                    if other != scenario.srdp:
                        theirs = [s for s, _ in runs[other]]
                        each = [a / b for a, b in zip(mine, theirs) if b > 0]
                        scenario.round_ratios.setdefault(other, []).append(median(each))


def render(scenarios: Sequence[Scenario]) -> str:
    """A fixed-width table: per scenario and other side, the medians, the median per-round ratio
    (and its range), the peak RSS of each side's processes, the load averages of the rounds."""
    head = ["scenario", "srdp s", "other side", "other s", "ratio", "ratios (min-max)", "goal", "RSS MB srdp/other", "load"]
    body = []
    for sc in scenarios:
        s = sc.summary()
        for other in sc.sides:
            if other == sc.srdp or other not in s["ratios"]:
                continue
            each = s["ratios"][other]["each"]
            goal = sc.goals.get(other)
            ratio = s["ratios"][other]["median"]
            rss = s["peak_rss_mb"]
            body.append([
                sc.name, f"{s['median_s'][sc.srdp]:.3f}", other, f"{s['median_s'][other]:.3f}", f"{ratio:.2f}",
                f"{min(each):.2f}-{max(each):.2f}",
                "-" if goal is None else f"<= {goal:.2f} {'met' if ratio <= goal else 'MISSED'}",
                f"{rss[sc.srdp]:.0f}/{rss[other]:.0f}" if sc.srdp in rss and other in rss else "-",
                f"{min(sc.loads):.1f}-{max(sc.loads):.1f}" if sc.loads else "-",
            ])
    widths = [max(len(str(x[i])) for x in [head] + body) for i in range(len(head))]
    aligns = ["<", ">", "<", ">", ">", ">", "<", ">", ">"]

    def fmt(cells: list[str]) -> str:
        return "  ".join(f"{c:{a}{w}}" for c, w, a in zip(cells, widths, aligns)).rstrip()

    return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(b) for b in body])


def machine() -> dict[str, Any]:
    import duckdb

    return {
        "cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
        "duckdb": duckdb.__version__, "load_average": os.getloadavg(),
    }


def write_results(path: Path, scenarios: Sequence[Scenario], table: str, **extra: Any) -> None:
    """The JSON beside the table: every timing, the loads, the machine."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine(),
        **extra,
        "results": [sc.summary() for sc in scenarios],
        "table": table,
    }
    path.write_text(json.dumps(doc, indent=2) + "\n")
