"""bench/sides.py's rounds: one run per side per round, or (``extra["pairs"]``) several
back-to-back pairs whose ratios' median is the round's ratio, the order alternating."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import sides  # noqa: E402


def _runner(times: dict[str, list[float]], order: list[str]):  # noqa: ANN202
    def run(scenario: sides.Scenario, side: str, turn: int) -> tuple[float, float]:
        order.append(side)
        return times[side].pop(0), 100.0 if side == "srdp" else 50.0

    return run


def test_a_scenario_with_pairs_takes_the_median_of_its_pairs_ratios_per_round() -> None:
    sc = sides.Scenario("small read", ["srdp", "hand"], extra={"pairs": 3})
    order: list[str] = []
    # Round 1: pairs (srdp/hand) 1.0/1.0, 3.0/1.0 (one noisy process), 1.2/1.0; round 2: 2/2, 2/1, 2/4.
    times = {"srdp": [1.0, 3.0, 1.2, 2.0, 2.0, 2.0], "hand": [1.0, 1.0, 1.0, 2.0, 1.0, 4.0]}
    sides.run_rounds([sc], 2, _runner(times, order), log=lambda line: None)
    assert order == ["srdp", "hand", "hand", "srdp", "srdp", "hand", "hand", "srdp", "srdp", "hand", "hand", "srdp"]
    assert sc.ratios("hand") == [1.2, 1.0]
    assert sc.seconds == {"srdp": [1.2, 2.0], "hand": [1.0, 2.0]}
    assert sc.ratios("hand", of="rss") == [2.0, 2.0]


def test_a_scenario_without_pairs_runs_each_side_once_per_round() -> None:
    sc = sides.Scenario("large read", ["srdp", "hand"])
    order: list[str] = []
    sides.run_rounds([sc], 2, _runner({"srdp": [3.0, 1.0], "hand": [1.0, 2.0]}, order), log=lambda line: None)
    assert order == ["srdp", "hand", "hand", "srdp"]
    assert sc.ratios("hand") == [3.0, 0.5] and sc.round_ratios == {}
