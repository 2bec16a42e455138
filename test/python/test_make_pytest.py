"""``make pytest`` runs the serial tests even when a parallel test failed, and still fails.

Real make and pytest on a folder of two tests (``PYTEST_PATHS``): one that fails in the parallel
step, and a serial one that records that it ran. Before, make stopped at the failing step and the
serial tests never ran, so one failure hid the others.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

from conftest import REPO


def make_pytest(tests: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO), "pytest", f"PYTEST_PATHS={tests}", "PYTEST_WORKERS=0"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_failing_parallel_test_does_not_keep_the_serial_tests_from_running(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    ran = tmp_path / "serial-ran"
    (tests / "test_parallel.py").write_text("def test_fails():\n    assert 1 == 2\n")
    (tests / "test_serial.py").write_text(textwrap.dedent("""
        import os
        from pathlib import Path

        import pytest

        pytestmark = pytest.mark.serial


        def test_records_that_it_ran():
            Path(os.environ["SERIAL_RAN"]).write_text("yes")
    """))
    done = make_pytest(tests, {"SERIAL_RAN": str(ran)})
    assert done.returncode != 0, done.stdout + done.stderr
    assert "1 failed" in done.stdout, done.stdout
    assert ran.read_text() == "yes", done.stdout + done.stderr  # the serial step ran
    assert "1 passed, 1 deselected" in done.stdout, done.stdout
    # A failing serial step fails the target too, and both passing pass it.
    (tests / "test_parallel.py").write_text("def test_passes():\n    assert 1 == 1\n")
    (tests / "test_serial.py").write_text(
        "import pytest\n\npytestmark = pytest.mark.serial\n\n\ndef test_fails():\n    assert 1 == 2\n"
    )
    assert make_pytest(tests, {}).returncode != 0
    (tests / "test_serial.py").write_text(
        "import pytest\n\npytestmark = pytest.mark.serial\n\n\ndef test_passes():\n    assert 1 == 1\n"
    )
    assert make_pytest(tests, {}).returncode == 0
