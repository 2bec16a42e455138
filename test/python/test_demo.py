"""`make demo`'s script runs end to end on the embedded default and shows what it claims:
writer and reader processes, inlined counts, pressure, compaction with the data unchanged."""

from __future__ import annotations

import subprocess

from conftest import REPO


def test_demo_script_runs_and_reader_sees_the_writers_rows():
    out = subprocess.run(["bash", "scripts/demo.sh"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "│ lake    │ lake    │ writer  │ false     │ attached │" in text
    assert "│ lake    │ reader  │ true      │ attached │" in text
    assert "│    30 │ 1410.0 │" in text
    assert 'Cannot execute statement of type "INSERT" on database "lake" which is attached in read-only mode!' in text
    assert "│ raw         │ events     │         2030 │            6 │           1 │               7 │             1 │        1 │ compacted │" in text
    assert "│ DatasetCatalogPressure │ raw         │ users      │          800 │       500 │" in text
    # Row count and checksum are the same after compaction for both datasets.
    unchanged = [line for line in text.splitlines() if line.startswith("│ raw.") and line.endswith("│ true      │")]
    assert [line.split("│")[1].strip() for line in unchanged] == ["raw.events", "raw.users"]
    assert (REPO / "demo" / "catalog" / "lake.sqlite").is_file()
    # The demo ends with the nightly job, run once through Dagster: the late batches are flushed
    # and merged into the one compacted file.
    assert "srdp_maintain_datasets - srdp: lake.raw.events: compacted; 100 inlined rows" in out.stderr
    tail = text[text.index("== 6. "):]
    assert "dagster run " in tail and ": success" in tail
    result_rows = [line.split() for line in tail.splitlines() if line.startswith("lake ")]
    assert result_rows == [
        ["lake", "raw", "events", "100", "100", "2", "1", "1", "compacted"],
        ["lake", "raw", "users", "0", "0", "1", "1", "1", "nothing", "to", "do"],
    ]
