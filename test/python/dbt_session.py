"""Runs a sequence of dbt commands as separate dbt processes would, at a fraction of the cost.

One Python process imports dbt and dbt-duckdb once, then runs each command through dbtRunner in
a forked child (a fresh process and a fresh DuckDB database per command, as a `dbt` process
would have; 1-3 s instead of a 4-6 s cold start). Before a command, the files of its step are
written (e.g. the next version of a seed); after it, the DuckLake catalog's last snapshot id is
read straight from the SQLite metadata file (no DuckDB, no srdp), so each step's writes can be
told apart by snapshot.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conftest import PY

__all__ = ["Step", "StepResult", "run_session"]

_SCRIPT = """
import json, os, sqlite3, sys
import dbt.adapters.duckdb  # noqa: F401  (imported before forking, like dbt.cli.main)
from dbt.cli.main import dbtRunner


def dbt_command(args):
    lines = []
    def keep(event):
        if event.info.level != "debug":
            lines.append(event.info.msg)
    result = dbtRunner(callbacks=[keep]).invoke(args)
    return {"success": result.success, "lines": lines,
            "exception": None if result.exception is None else str(result.exception)}


def in_child(args):
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            out = dbt_command(args)
        except BaseException as e:  # noqa: BLE001 (reported to the test)
            out = {"success": False, "exception": repr(e), "lines": []}
        with os.fdopen(write_end, "w") as f:
            json.dump(out, f)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as f:
        text = f.read()
    os.waitpid(pid, 0)
    return json.loads(text) if text else {"success": False, "exception": "child died", "lines": []}


def last_snapshot(catalog):
    if not catalog or not os.path.exists(catalog):
        return None
    con = sqlite3.connect(f"file:{catalog}?mode=ro", uri=True)
    try:
        return con.execute("SELECT max(snapshot_id) FROM ducklake_snapshot").fetchone()[0]
    finally:
        con.close()


steps, catalog, out = json.loads(open(sys.argv[1]).read()), sys.argv[2], sys.argv[3]
results = []
for step in steps:
    for path, text in step["files"].items():
        with open(path, "w") as f:
            f.write(text)
    result = in_child(step["args"])
    results.append({**result, "snapshot": last_snapshot(catalog)})
with open(out, "w") as f:
    json.dump(results, f)
"""


@dataclass(frozen=True)
class Step:
    """One dbt command (its arguments), and the files to write before it (path -> text)."""

    label: str
    args: list[str]
    files: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class StepResult:
    """What a command did: dbt's result, its non-debug lines, and the catalog's last snapshot after it."""

    success: bool
    lines: list[str]
    exception: str | None
    snapshot: int | None

    @property
    def text(self) -> str:
        """The lines, joined, without dbt's colour codes."""
        return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(self.lines))


def run_session(project: Path, env: dict[str, str], steps: list[Step], catalog: Path | None) -> dict[str, StepResult]:
    """Runs ``steps`` in order from ``project``; returns each step's result by label."""
    labels = [s.label for s in steps]
    assert len(set(labels)) == len(labels), labels
    spec = project.parent / f"{project.name}.session.json"
    out = project.parent / f"{project.name}.results.json"
    spec.write_text(json.dumps([{"args": s.args, "files": s.files} for s in steps]))
    proc = subprocess.run(
        [PY, "-c", _SCRIPT, str(spec), str(catalog or ""), str(out)],
        cwd=project, env={**os.environ, **env}, capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    raw: list[dict[str, Any]] = json.loads(out.read_text())
    return {label: StepResult(**r) for label, r in zip(labels, raw, strict=True)}
