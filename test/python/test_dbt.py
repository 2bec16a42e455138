"""The srdp dbt package (dbt/) with real dbt-core 1.11 + dbt-duckdb 1.11.1, offline.

One module fixture builds the example project of examples/dbt_project (copied into tmp, with the
profile made from dbt/profiles.example.yml and an srdp.toml written in tmp) and runs, in order:

* a dbt "session": each dbt command in its own forked process (dbt imported once before the
  forks, so a command costs 1-3 s instead of a 4-6 s cold start; every command still gets a
  fresh process and a fresh DuckDB database, as a separate `dbt` process would), driven through
  dbtRunner, whose event callbacks capture the lines dbt prints: deps and three `dbt run`, then
  the read-only run-operations, next to the one that needs a re-parse (other target, --vars);
* `dbt run-operation srdp_compact` through the real `dbt` executable, parsing its stdout;
* a reader in another Python process, before and after that compaction, that reads the model back
  and counts each dataset's live files and inlined rows from the metadata tables (lakecheck).

The tests then assert on what each step printed, against those independent counts.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import duckdb
import pytest
import yaml

import srdp

from conftest import PY, REPO, run_python, write_config

DBT = REPO / ".venv" / "bin" / "dbt"
EXAMPLE = REPO / "examples" / "dbt_project"
EXTENSIONS = REPO / ".duckdb" / "extensions"

SRDP_TOML = """
[catalogs.lake]
metadata = "sqlite:lake/catalog.sqlite"
data_path = "lake/data/"
data_inlining_row_limit = 10

[catalogs.lake.schemas.curated]
writer = "dbt"
layer = "curated"
"""

# Batches of the model's source CSV: one dbt run appends one batch. 300 rows become a Parquet
# file each; 7 rows (<= the inlining limit of 10) are inlined.
BATCHES = (300, 300, 7)

# Runs dbt commands, each in its own forked child with dbt already imported. argv[1] is a JSON
# list of phases, run one after the other; a phase is a list of lanes that run at the same time;
# a lane is a list of commands (dbt argument lists) run in order. argv[2] receives the results
# (one per command, in order: phase, lane, command).
SESSION = """
import json, os, sys, time
import dbt.adapters.duckdb  # noqa: F401  (imported before forking, like dbt.cli.main)
from dbt.cli.main import dbtRunner


def in_child(work):
    # Runs work() in a forked child; returns its JSON-able result.
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            out = work()
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


def dbt_command(args):
    lines = []
    def keep(event):
        if event.info.level != "debug":
            lines.append(event.info.msg)
    result = dbtRunner(callbacks=[keep]).invoke(args)
    return {"success": result.success, "lines": lines,
            "exception": None if result.exception is None else str(result.exception)}


def lane(commands):
    results = []
    for args in commands:
        started = time.monotonic()
        out = in_child(lambda: dbt_command(args))
        results.append({**out, "args": args, "seconds": round(time.monotonic() - started, 2)})
    return results


results = []
for phase in json.loads(sys.argv[1]):
    if len(phase) == 1:
        results += lane(phase[0])
        continue
    pipes = []
    for commands in phase:
        read_end, write_end = os.pipe()
        if os.fork() == 0:
            os.close(read_end)
            with os.fdopen(write_end, "w") as f:
                json.dump(lane(commands), f)
            os._exit(0)
        os.close(write_end)
        pipes.append(read_end)
    for read_end in pipes:
        with os.fdopen(read_end) as f:
            results += json.load(f)
    for _ in pipes:
        os.wait()
with open(sys.argv[2], "w") as f:
    json.dump(results, f)
"""

# A reader in another process: the model's rows, and per dataset (live files, inlined rows) and
# the Parquet files, from the metadata tables and the disk, not from srdp's functions.
READ_BACK = """
import json, sys
from pathlib import Path
import srdp
sys.path.insert(0, {here!r})
from lakecheck import Lake, parquet_files
con = srdp.connect(config={cfg!r})
attach = con.sql("SELECT role, read_only, status FROM srdp_attach_catalog('lake')").fetchone()
data = con.sql("SELECT count(*), sum(id), sum(hash(id, batch, name, amount)), count(DISTINCT batch) FROM lake.curated.events").fetchone()
lake = Lake(con)
print(json.dumps({{
    "attach": attach,
    "data": [str(v) for v in data],
    "view": [str(v) for v in con.sql("SELECT count(*), sum(events), sum(amount) FROM lake.curated.events_by_batch").fetchone()],
    "state": {{".".join(k): v for k, v in lake.state().items()}},
    "registered": sorted(lake.registered_files()),
    "on_disk": sorted(parquet_files(Path(lake.data_path()))),
}}))
"""
HERE = Path(__file__).resolve().parent

SOURCE_CHECKSUM = """
SELECT count(*), sum(id), sum(hash(id, batch, name, amount)), count(DISTINCT batch)
FROM (SELECT id::BIGINT AS id, batch::INTEGER AS batch, name::VARCHAR AS name, amount::DECIMAL(12, 2) AS amount
      FROM read_csv(?, header = true, all_varchar = true))
"""


# What the view events_by_batch adds up: batches, events, amounts.
SOURCE_BY_BATCH = """
SELECT count(DISTINCT batch), count(*), sum(amount::DECIMAL(12, 2))
FROM read_csv(?, header = true, all_varchar = true)
"""


def srdp_rows(lines, function):
    """The result rows a macro printed for ``function``: ``<function>: col=value | col=value``."""
    rows = []
    for line in "\n".join(lines).splitlines():
        match = re.search(rf"\b{function}: (\w+=.*)$", line)
        if match:
            rows.append(dict(cell.split("=", 1) for cell in match.group(1).split(" | ")))
    return rows


def write_events(path: Path) -> None:
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["id", "batch", "name", "amount"])
        n = 0
        for batch, size in enumerate(BATCHES):
            for i in range(size):
                n += 1
                out.writerow([n, batch, f"customer {i % 13} o'brien, \"quoted\" é", f"{(n * 37) % 100000 / 100:.2f}"])


def make_profile(directory: Path, cfg: Path) -> None:
    """profiles.yml from the documented dbt/profiles.example.yml, placeholders filled in.

    The profile LOADs srdp through the srdp.dbt.plugin plugin and reads the repo's extension
    directory without writing to it (test_dbt_profile.py checks that nothing is written)."""
    text = (REPO / "dbt" / "profiles.example.yml").read_text()
    text = (text.replace("/path/to/srdp.toml", str(cfg))
                .replace("/path/to/srdp/.duckdb/extensions", str(EXTENSIONS))
                .replace("/path/to/srdp/build/release/srdp.duckdb_extension", str(srdp.extension_path()))
                .replace("/path/to/srdp/", f"{REPO}/"))
    profiles = yaml.safe_load(text)
    outputs = profiles["srdp_example"]["outputs"]
    assert "/path/to" not in json.dumps(outputs)
    # A maintenance-only target: no srdp_config setting and no lake as target database (the
    # plugin only LOADs srdp), so the macros attach what they need and the config comes from the var.
    no_setting = {k: v for k, v in outputs["dev"].items() if k not in ("settings", "database", "attach")}
    no_setting["plugins"] = [{**p, "config": {k: v for k, v in p["config"].items() if k != "catalog"}}
                             for p in no_setting["plugins"]]
    outputs["no_setting"] = no_setting
    directory.mkdir()
    (directory / "profiles.yml").write_text(yaml.safe_dump(profiles))


@pytest.fixture(scope="module")
def dbt_lake(tmp_path_factory):
    root = tmp_path_factory.mktemp("dbt")
    cfg = write_config(root, SRDP_TOML)
    project = root / "project"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(
        "target", "dbt_packages", "logs", "lake", "package-lock.yml", "profiles.yml", "srdp.toml"))
    (project / "packages.yml").write_text((project / "packages.yml").read_text().replace("../../dbt", str(REPO / "dbt")))
    write_events(project / "data" / "events.csv")
    make_profile(root / "profiles", cfg)
    (root / "home").mkdir()
    env = {
        "HOME": str(root / "home"),
        "DBT_PROFILES_DIR": str(root / "profiles"),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "DO_NOT_TRACK": "1",
        "SRDP_CONFIG": "",  # empty = unset: the config must come from the profile or the var
    }

    # A dataset whose schema and table names carry quotes, with 3 inlined rows, written first.
    con = srdp.connect(config=cfg)
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')")
    con.execute("""CREATE SCHEMA lake."it's" """)
    con.execute("""CREATE TABLE lake."it's"."o'k" AS SELECT range AS i FROM range(3)""")
    con.execute("DETACH lake")  # database-wide: no attachment of this process stays behind
    con.close()

    # Each lane runs its (label, dbt arguments) in order; the lanes of a phase run at the same time.
    build = [("deps", ["deps"]), ("run 0", ["run"]), ("run 1", ["run"]), ("run 2", ["run"])]  # a run per batch
    operations = [
        ("count quoted", ["run-operation", "srdp_inlined_row_count", "--args", """{schema_name: "it's", table_name: "o'k"}"""]),
        ("pressure", ["run-operation", "srdp_catalog_pressure", "--args", "{catalog: lake, threshold: 5}"]),
        ("flush dry run", ["run-operation", "srdp_flush", "--args",
                           "{catalog: lake, schema_name: curated, table_name: events, dry_run: true}"]),
        ("unknown catalog", ["run-operation", "srdp_attach", "--args", "{catalog: lakee}"]),
        ("unknown schema", ["run-operation", "srdp_compact", "--args", """{schema_name: "no'pe"}"""]),
    ]
    # Another target and --vars make dbt parse the project again (~3 s): a lane of its own.
    with_var = [("config var", ["run-operation", "srdp_inlined_row_count", "--target", "no_setting",
                                "--vars", f"{{srdp_config: '{cfg}'}}", "--args", "{table_name: events}"])]
    phases = [[build], [operations, with_var]]
    labels = [label for phase in phases for lane in phase for label, _ in lane]
    commands = [[[args for _, args in lane] for lane in phase] for phase in phases]
    results_file = root / "session.json"
    started = time.monotonic()
    proc = subprocess.run([PY, "-c", SESSION, json.dumps(commands), str(results_file)],
                          cwd=project, env={**os.environ, **env}, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steps = dict(zip(labels, json.loads(results_file.read_text()), strict=True))
    session_seconds = time.monotonic() - started

    before = json.loads(run_python(READ_BACK.format(cfg=str(cfg), here=str(HERE))))
    started = time.monotonic()
    cli = subprocess.run([str(DBT), "run-operation", "srdp_compact"], cwd=project, env={**os.environ, **env},
                         capture_output=True, text=True, timeout=300)
    cli_seconds = time.monotonic() - started

    seen = json.loads(run_python(READ_BACK.format(cfg=str(cfg), here=str(HERE))))
    with duckdb.connect() as plain:
        expected = [str(v) for v in plain.execute(SOURCE_CHECKSUM, [str(project / "data" / "events.csv")]).fetchone()]
        expected_view = [str(v) for v in plain.execute(SOURCE_BY_BATCH, [str(project / "data" / "events.csv")]).fetchone()]
    each = ", ".join(f"{label} {result['seconds']}" for label, result in steps.items())
    print(f"dbt session: {session_seconds:.1f} s ({each}); dbt CLI run-operation: {cli_seconds:.1f} s")
    return {"steps": steps, "cli": cli, "cli_seconds": cli_seconds, "before": before, "seen": seen, "expected": expected, "expected_view": expected_view, "cfg": cfg, "project": project}


def step(dbt_lake, label):
    return dbt_lake["steps"][label]


def test_dbt_run_attaches_through_srdp_and_builds_the_model_into_the_lake(dbt_lake):
    assert step(dbt_lake, "deps")["success"], step(dbt_lake, "deps")
    for label in ("run 0", "run 1", "run 2"):
        run = step(dbt_lake, label)
        assert run["success"], run
        # The lake is the profile's target database: the srdp.dbt.plugin plugin attaches it
        # through srdp as writer when dbt-duckdb opens its database, once per dbt process.
        attaches = srdp_rows(run["lines"], "srdp_attach_catalog")
        assert [(a["role"], a["read_only"], a["status"]) for a in attaches] == [("writer", "false", "attached")]
        assert attaches[0]["data_path"] == f"{dbt_lake['cfg'].parent}/lake/data/"
        assert attaches[0]["data_inlining_row_limit"] == "10"
        assert any("created sql incremental model curated.events" in line for line in run["lines"])
        # The view over it is replaced on every run (one DuckLake transaction, no DROP ... CASCADE).
        assert any("OK created sql view model curated.events_by_batch" in line for line in run["lines"])


def test_run_operation_srdp_compact_compacts_and_prints_its_rows(dbt_lake):
    cli = dbt_lake["cli"]
    assert cli.returncode == 0, cli.stdout + cli.stderr
    rows = {(r["schema_name"], r["table_name"]): r for r in srdp_rows(cli.stdout.splitlines(), "srdp_compact")}
    assert set(rows) == {("curated", "events"), ("it's", "o'k")}
    # Counted from the metadata before the compaction: the model's two Parquet files (runs 0 and
    # 1) and its 7 inlined rows (run 2); the quoted dataset's 3 inlined rows and no file.
    before = dbt_lake["before"]["state"]
    assert before == {"curated.events": [2, 7], "it's.o'k": [0, 3]}
    for (schema, table), row in rows.items():
        files, inlined = before[f"{schema}.{table}"]
        # The flush writes one file; the merge joins it with the others when there are others.
        merged = files + 1 if files else 0
        printed = {k: v for k, v in row.items() if k != "duration_ms"}
        assert printed == {
            "catalog": "lake", "schema_name": schema, "table_name": table, "rows_flushed": str(inlined),
            "files_before": str(files), "files_after": "1", "files_processed": str(merged),
            "files_created": "1" if merged else "0", "files_rewritten": "0", "deletes_applied": "0",
            "attempts": "1", "status": "compacted",
        }, row
        # srdp's timing of the dataset fits inside the whole dbt command's.
        assert 0 <= int(row["duration_ms"]) <= dbt_lake["cli_seconds"] * 1000, row
    # The profile attached the lake as writer in this fresh process (srdp_compact found it attached).
    (attach,) = srdp_rows(cli.stdout.splitlines(), "srdp_attach_catalog")
    assert (attach["role"], attach["status"]) == ("writer", "attached")


def test_model_rows_are_read_back_by_a_reader_in_another_process(dbt_lake):
    before, seen = dbt_lake["before"], dbt_lake["seen"]
    for read in (before, seen):
        assert read["attach"] == ["reader", True, "attached"]
        assert read["data"] == dbt_lake["expected"]
        # The view: one row per batch, the events and amounts of them all.
        assert read["view"] == dbt_lake["expected_view"]
        # The Parquet files on disk are exactly the ones the metadata registers (live or retired).
        assert read["on_disk"] == read["registered"]
    assert seen["data"][0] == str(sum(BATCHES)) and seen["data"][3] == str(len(BATCHES))
    # After srdp_compact: one live file per dataset, nothing inlined (counted from the metadata).
    assert seen["state"] == {"curated.events": [1, 0], "it's.o'k": [1, 0]}
    # No file was deleted; the two flushes and the merge added one each.
    assert set(before["on_disk"]) <= set(seen["on_disk"]) and len(seen["on_disk"]) == len(before["on_disk"]) + 3


def test_count_pressure_and_flush_print_their_rows(dbt_lake):
    count, pressure, flush = (step(dbt_lake, k) for k in ("count quoted", "pressure", "flush dry run"))
    for result in (count, pressure, flush):
        assert result["success"], result
        # A fresh database: the profile attached the lake (dbt's target database) as writer, and
        # the read-only macros use that attachment (the no_setting target below attaches a reader).
        (attach,) = srdp_rows(result["lines"], "srdp_attach_catalog")
        assert (attach["role"], attach["read_only"], attach["status"]) == ("writer", "false", "attached")
    # The inlined rows as counted from the metadata (the same before the compaction).
    inlined = {key: str(n) for key, (_, n) in dbt_lake["before"]["state"].items()}
    # Named arguments with quotes in them reach srdp intact (rendered as 'it''s', 'o''k').
    assert srdp_rows(count["lines"], "srdp_inlined_row_count") == [{
        "catalog": "lake", "schema_name": "it's", "table_name": "o'k", "inlined_rows": inlined["it's.o'k"],
        "inlined_tables": "1"}]
    (event,) = srdp_rows(pressure["lines"], "srdp_catalog_pressure")
    assert event["event"] == "DatasetCatalogPressure"
    assert (event["schema_name"], event["table_name"], event["inlined_rows"], event["threshold"]) == (
        "curated", "events", inlined["curated.events"], "5")
    (planned,) = srdp_rows(flush["lines"], "srdp_flush")
    assert (planned["schema_name"], planned["table_name"], planned["rows_flushed"], planned["attempts"], planned["status"]) == (
        "curated", "events", inlined["curated.events"], "0", "planned")


def test_srdp_errors_fail_the_run_operation_with_srdp_message(dbt_lake):
    unknown, bad_schema = step(dbt_lake, "unknown catalog"), step(dbt_lake, "unknown schema")
    assert not unknown["success"]
    text = "\n".join(unknown["lines"])
    assert f"srdp_attach_catalog: unknown catalog 'lakee' in {dbt_lake['cfg']} (defined: lake)" in text
    assert not bad_schema["success"]
    text = "\n".join(bad_schema["lines"])
    assert "srdp_compact: no schema 'no'pe' in catalog 'lake' (schemas: curated, it's, main)" in text


def test_config_var_is_passed_as_config_argument(dbt_lake):
    with_var = step(dbt_lake, "config var")
    assert with_var["success"], with_var
    # Neither the srdp_config setting nor $SRDP_CONFIG nor ./srdp.toml: only the var names the file.
    assert not (dbt_lake["project"] / "srdp.toml").exists()
    # Read-only work in a fresh database attaches the lake as reader first.
    (attach,) = srdp_rows(with_var["lines"], "srdp_attach_catalog")
    assert (attach["role"], attach["read_only"], attach["status"]) == ("reader", "true", "attached")
    # A table name alone selects that table in every schema.
    assert srdp_rows(with_var["lines"], "srdp_inlined_row_count") == [{
        "catalog": "lake", "schema_name": "curated", "table_name": "events",
        "inlined_rows": str(dbt_lake["before"]["state"]["curated.events"][1]), "inlined_tables": "1"}]
