"""SrdpIOManager under concurrency, with real Dagster processes on real DuckLake lakes (SQLite, and
PostgreSQL + S3): two assets writing different tables from the multiprocess executor, two
partitions of one table written by two ``dagster asset materialize`` processes at once, srdp's
maintenance job and monitor beside an application whose ``io_manager`` is SrdpIOManager, and the
first writes of two processes to a lake that does not exist yet.

The definitions module (``DEFS``) is written to the test's folder and run by the Dagster CLI
with a DAGSTER_HOME of its own. Its assets meet at file barriers, so "in parallel" is a fact,
not a hope: each asset waits, before it returns, until its peer is computing too (else it fails
after 120 s saying the writes did not run in parallel); with ``SRDP_TEST_HOLD=1`` the IO
manager's first transaction also waits, open and uncommitted, after its delete and insert, until
the peer's transaction is open too, so both commit against the same snapshot and one of them
must be refused and retried. Every row check compares count and ``sum(hash(...))`` of the lake
table with the same figures computed by plain SQL from the formula the assets use; snapshots are
read from DuckLake's metadata tables (``ducklake_snapshot_changes``, ``ducklake_table``) and the
Dagster materializations from the run storage, never through the IO manager.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pyarrow as pa

import srdp
from conftest import REPO, write_config
from lakecheck import Lake, stored_files
from pg_lake import new_lake

DAGSTER = str(REPO / ".venv" / "bin" / "dagster")

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"
data_inlining_row_limit = 10
pressure_warning_rows = 4

[catalogs.lake.schemas.analytics]
writer = "io_manager"
layer = "curated"
"""

# Rows each asset writes for data version v: BASE[name] + STEP[name] * v (notes: 5 rows, inlined).
BASE = {"orders": 3000, "customers": 2000, "a": 1000, "b": 1007, "notes": 5}
STEP = {"orders": 100, "customers": 100, "a": 100, "b": 100, "notes": 0}


def row_count(name: str, version: int) -> int:
    return BASE[name] + STEP[name] * version


def frame(name: str, version: int) -> pa.Table:
    """What the definitions module's asset ``name`` returns (``part`` is the name)."""
    ids = list(range(row_count(name, version)))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "part": pa.array([name] * len(ids), pa.string()),
        "v": pa.array([version] * len(ids), pa.int64()),
        "label": pa.array([f"{name}{version}-{i}" for i in ids], pa.string()),
    })


# The PostgreSQL lake's additions to pg_lake's definition (inside [catalogs.lake]).
PG_EXTRA = """data_inlining_row_limit = 10

[catalogs.lake.schemas.analytics]
writer = "io_manager"
layer = "curated"
"""

#: Rounds of the first-writes race (each on a fresh lake).
FIRST_WRITE_ROUNDS = 6

DEFS = '''
"""Definitions for test_io_manager_concurrency (see its module doc)."""

import os
import time
from pathlib import Path

import dagster as dg
import pyarrow as pa
from dagster import AssetExecutionContext

from srdp.dagster import add_srdp_definitions
from srdp.dagster.handlers import Source
from srdp.dagster.io_manager import SrdpIOManager
from srdp.dagster.lake import LakeSession, WritePlan, WriteResult

CONFIG = os.environ["SRDP_TEST_CONFIG"]
SYNC = Path(os.environ["SRDP_TEST_SYNC"])
ROUND = os.environ.get("SRDP_TEST_ROUND", "0")
VERSION = int(os.environ.get("SRDP_TEST_VERSION", "1"))
PARALLEL = os.environ.get("SRDP_TEST_PARALLEL") == "1"
HOLD = os.environ.get("SRDP_TEST_HOLD") == "1"
SECRETS = [dg.EnvVar(name) for name in os.environ.get("SRDP_TEST_SECRET_VARS", "").split(",") if name]
BASE = {base!r}
STEP = {step!r}
PEERS = {{"orders": "customers", "customers": "orders", "a": "b", "b": "a"}}


def barrier(stage: str, me: str) -> None:
    """Marks ``me`` at ``stage`` and waits until its peer got there too (120 s at most)."""
    (SYNC / f"{{ROUND}}-{{stage}}-{{me}}").touch()
    peer = SYNC / f"{{ROUND}}-{{stage}}-{{PEERS[me]}}"
    deadline = time.monotonic() + 120
    while not peer.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{{me}} waited 120 s at {{stage}} for {{PEERS[me]}}: the writes did not run in parallel")
        time.sleep(0.01)


_transaction = LakeSession._transaction


def held_transaction(self: LakeSession, plan: WritePlan, data: Source, attempt: int) -> WriteResult:
    """The IO manager's transaction; with HOLD its first attempt waits, open and uncommitted,
    until the peer's transaction is open too."""
    result = _transaction(self, plan, data, attempt)
    if HOLD and attempt == 1:
        partitions = plan.extra["partitions"]
        barrier("transaction", partitions[0] if partitions else plan.table.table)
    return result


LakeSession._transaction = held_transaction


def frame(name: str, part: str) -> pa.Table:
    """BASE[name] + STEP[name] * VERSION rows: id, part, v (the version), label '<part><v>-<id>'."""
    ids = list(range(BASE[name] + STEP[name] * VERSION))
    return pa.table({{
        "id": pa.array(ids, pa.int64()),
        "part": pa.array([part] * len(ids), pa.string()),
        "v": pa.array([VERSION] * len(ids), pa.int64()),
        "label": pa.array([f"{{part}}{{VERSION}}-{{i}}" for i in ids], pa.string()),
    }})


@dg.asset(key_prefix=["analytics"])
def orders() -> pa.Table:
    out = frame("orders", "orders")
    if PARALLEL:
        barrier("return", "orders")
    return out


@dg.asset(key_prefix=["analytics"])
def customers() -> pa.Table:
    out = frame("customers", "customers")
    if PARALLEL:
        barrier("return", "customers")
    return out


@dg.asset(key_prefix=["analytics"], metadata={{"write_mode": "append"}})
def notes() -> pa.Table:
    return frame("notes", "notes")


@dg.asset(
    key_prefix=["analytics"],
    partitions_def=dg.StaticPartitionsDefinition(["a", "b"]),
    metadata={{"partition_expr": "part"}},
)
def events(context: AssetExecutionContext) -> pa.Table:
    key = context.partition_key
    out = frame(key, key)
    if PARALLEL:
        barrier("return", key)
    return out


parallel_tables = dg.define_asset_job(
    "parallel_tables",
    selection=[orders, customers],
    executor_def=dg.multiprocess_executor.configured({{"max_concurrent": 2}}),
)
application = dg.define_asset_job(
    "application",
    selection=[orders, customers, notes],
    executor_def=dg.multiprocess_executor.configured({{"max_concurrent": 2}}),
)

defs = add_srdp_definitions(
    dg.Definitions(
        assets=[orders, customers, notes, events],
        jobs=[parallel_tables, application],
        resources={{"io_manager": SrdpIOManager(config_path=CONFIG, secrets=SECRETS)}},
    ),
    CONFIG,
    default_status=dg.DefaultScheduleStatus.STOPPED,
)
'''.format(base=BASE, step=STEP)


# --- the Dagster side ------------------------------------------------------------------------


@dataclass
class App:
    """The definitions module, its lake and a Dagster home of its own."""

    folder: Path
    cfg: Path
    meta: str = "main"  # schema of DuckLake's metadata tables
    secrets: Sequence[str] = ()

    @property
    def defs(self) -> Path:
        return self.folder / "defs.py"

    @property
    def home(self) -> Path:
        return self.folder / "dagster_home"

    def env(self, **values: str) -> dict[str, str]:
        """The environment of a Dagster process: the lake, the barriers' folder, the secrets."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SRDP_TEST_")}
        env.update(DAGSTER_HOME=str(self.home), SRDP_TEST_CONFIG=str(self.cfg), SRDP_TEST_SYNC=str(self.folder / "sync"))
        names = [f"SRDP_TEST_SECRET_{i}" for i in range(len(self.secrets))]
        env.update(zip(names, self.secrets))
        env["SRDP_TEST_SECRET_VARS"] = ",".join(names)
        env.update({f"SRDP_TEST_{k.upper()}": v for k, v in values.items()})
        return env

    def run(self, *commands: tuple[list[str], dict[str, str]]) -> list[str]:
        """Starts every ``dagster`` command at once, waits for all; each must exit 0. Their output."""
        procs = [
            subprocess.Popen(
                [DAGSTER, *args, "-f", str(self.defs)], cwd=self.folder, env=env,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            )
            for args, env in commands
        ]
        outputs = [p.communicate(timeout=600)[0] for p in procs]
        for (args, _), proc, out in zip(commands, procs, outputs):
            assert proc.returncode == 0, f"dagster {' '.join(args)} failed ({proc.returncode}):\n{out[-6000:]}"
        return outputs

    @contextmanager
    def instance(self) -> Iterator[dg.DagsterInstance]:
        instance = dg.DagsterInstance.from_config(str(self.home))
        try:
            yield instance
        finally:
            instance.dispose()

    def materializations(self, name: str) -> list[Materialization]:
        """Every materialization of ``analytics/<name>``, oldest first."""
        with self.instance() as instance:
            records = instance.fetch_materializations(dg.AssetKey(["analytics", name]), limit=100).records
            return [
                Materialization(
                    r.run_id,
                    r.partition_key,
                    {k: getattr(v, "value", v) for k, v in r.asset_materialization.metadata.items()},  # type: ignore[union-attr]
                )
                for r in reversed(records)
            ]


@dataclass
class Materialization:
    run_id: str
    partition: str | None
    metadata: dict[str, Any]

    @property
    def snapshot(self) -> int:
        return int(self.metadata["srdp/snapshot_id"])

    @property
    def attempts(self) -> int:
        return int(self.metadata["srdp/attempts"])


def sqlite_app(tmp_path: Path, create_lake: bool = True, dagster_home: bool = True) -> App:
    """The definitions module and a SQLite lake (created empty through srdp's writer role unless
    ``create_lake`` is false; the schema ``analytics`` does not exist yet)."""
    cfg = write_config(tmp_path, CONFIG)
    app = App(tmp_path, cfg)
    prepare(app, dagster_home)
    if create_lake:
        con = srdp.connect(config=cfg)
        try:
            con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
        finally:
            release(con)
    return app


def prepare(app: App, dagster_home: bool = True) -> None:
    """Writes the definitions module and the barriers' folder, and (``dagster_home``) creates
    Dagster's run and event storage now: two CLI processes creating it at once race."""
    app.defs.write_text(DEFS.lstrip())
    (app.folder / "sync").mkdir()
    if dagster_home:
        app.home.mkdir()
        (app.home / "dagster.yaml").write_text("")
        with app.instance():
            pass


def materialize_partitions(app: App, round_: int, version: int, hold: bool) -> list[str]:
    """``dagster asset materialize`` of partitions a and b of analytics/events, two processes at once."""
    commands = [
        (
            ["asset", "materialize", "--select", "analytics/events", "--partition", key],
            app.env(round=str(round_), version=str(version), parallel="1", hold="1" if hold else "0"),
        )
        for key in ("a", "b")
    ]
    return app.run(*commands)


# --- the lake side ---------------------------------------------------------------------------


def release(con: duckdb.DuckDBPyConnection) -> None:
    """DETACHes the lake (srdp's runner keeps the database open otherwise), then closes."""
    try:
        if con.execute("SELECT count(*) FROM duckdb_databases() WHERE database_name = 'lake'").fetchone()[0]:
            con.execute("DETACH lake")
    finally:
        con.close()


@contextmanager
def reader(app: App) -> Iterator[duckdb.DuckDBPyConnection]:
    """A reader connection of its own on the app's lake."""
    con = srdp.connect(config=app.cfg)
    try:
        for statement in app.secrets:
            con.execute(statement)
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        yield con
    finally:
        release(con)


def expected(con: duckdb.DuckDBPyConnection, name: str, part: str, version: int) -> tuple[int, str]:
    """Count and checksum of what ``frame(name, part)`` returns, computed by plain SQL."""
    row = con.execute(
        "SELECT count(*), sum(hash(id, part, v, label))::VARCHAR FROM (SELECT range::BIGINT AS id, "
        "?::VARCHAR AS part, ?::BIGINT AS v, ? || ?::VARCHAR || '-' || range AS label FROM range(?))",
        [part, version, part, version, row_count(name, version)],
    ).fetchone()
    assert row is not None
    return int(row[0]), str(row[1])


def actual(con: duckdb.DuckDBPyConnection, table: str, where: str = "true", at: int | None = None) -> tuple[int, str]:
    version = f" AT (VERSION => {int(at)})" if at is not None else ""
    row = con.execute(
        f"SELECT count(*), sum(hash(id, part, v, label))::VARCHAR FROM lake.analytics.{table}{version} WHERE {where}"
    ).fetchone()
    assert row is not None
    return int(row[0]), str(row[1])


def snapshot_changes(con: duckdb.DuckDBPyConnection, meta: str = "main") -> dict[int, dict[str, Any]]:
    """snapshot_id -> changes, author, message and extra info (JSON decoded), from the metadata."""
    rows = con.execute(
        "SELECT snapshot_id, changes_made, author, commit_message, commit_extra_info "
        f"FROM __ducklake_metadata_lake.{meta}.ducklake_snapshot_changes ORDER BY snapshot_id"
    ).fetchall()
    return {
        s: {"changes": c, "author": a, "message": m, "extra": json.loads(e) if e else None}
        for s, c, a, m, e in rows
    }


def table_ids(con: duckdb.DuckDBPyConnection, meta: str = "main") -> dict[str, int]:
    return dict(
        con.execute(
            f"SELECT table_name, table_id FROM __ducklake_metadata_lake.{meta}.ducklake_table WHERE end_snapshot IS NULL"
        ).fetchall()
    )


def check_snapshot(
    con: duckdb.DuckDBPyConnection, app: App, m: Materialization, name: str, slice_: str, partitions: list[str] | None
) -> None:
    """The snapshot the materialization reports is the IO manager's commit of that run and asset,
    its attempt is the one the metadata reports, and it changed that table only."""
    snapshot = snapshot_changes(con, app.meta)[m.snapshot]
    assert snapshot["author"] == "io_manager"
    assert snapshot["message"] == f"dagster run {m.run_id} asset analytics/{name} ({slice_})"
    assert snapshot["extra"]["run_id"] == m.run_id and snapshot["extra"]["partitions"] == partitions
    assert snapshot["extra"]["attempt"] == m.attempts, (snapshot, m.metadata)
    ids = table_ids(con, app.meta)
    changed = {int(c.split(":")[1]) for c in snapshot["changes"].split(",") if c.startswith(("inserted_into_table:", "deleted_from_table:"))}
    assert changed == {ids[name]}, snapshot["changes"]


# --- the tests -------------------------------------------------------------------------------


def test_two_assets_write_different_tables_in_parallel_and_both_commit(tmp_path: Path) -> None:
    app = sqlite_app(tmp_path)
    app.run((["job", "execute", "-j", "parallel_tables"], app.env(parallel="1", hold="1")))
    with app.instance() as instance:
        (run,) = instance.get_runs()
        assert run.status == dg.DagsterRunStatus.SUCCESS
        # Two step processes (the barriers already proved they overlapped).
        pids = {e.step_key: e.dagster_event.pid for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_START)}
        assert set(pids) == {"analytics__orders", "analytics__customers"} and len(set(pids.values())) == 2, pids
    found = {name: app.materializations(name) for name in ("orders", "customers")}
    with reader(app) as con:
        for name, (m,) in found.items():
            assert m.run_id == run.run_id
            rows = expected(con, name, name, 1)
            assert actual(con, name) == rows and actual(con, name, at=m.snapshot) == rows
            assert m.metadata["dagster/row_count"] == m.metadata["srdp/rows_written"] == rows[0]
            check_snapshot(con, app, m, name, "whole table", None)
        # Two commits, one per table; the schema was created once, by one of them.
        snapshots = snapshot_changes(con)
        ours = sorted(m.snapshot for (m,) in found.values())
        assert ours[0] != ours[1] and sorted(snapshots)[-2:] == ours
        assert sum(s["changes"].count('created_schema:"analytics"') for s in snapshots.values()) == 1
    print("attempts:", {name: m.attempts for name, (m,) in found.items()})


def test_two_partitions_of_one_table_written_at_once_both_end_correct(tmp_path: Path) -> None:
    """Round 1 creates the table (both processes create it in transactions open at once);
    round 2 replaces both partitions with another version (both delete and insert in
    transactions open at once). Each time exactly the new rows of each partition remain."""
    app = sqlite_app(tmp_path)
    report = {round_: partitions_at_once(app, round_, version=round_) for round_ in (1, 2)}
    print("attempts per round:", report)


def partitions_at_once(app: App, round_: int, version: int) -> dict[str, int]:
    """Materializes partitions a and b of analytics/events (data ``version``) in two processes
    whose transactions are open at once; checks the rows and the snapshots; their attempts."""
    materialize_partitions(app, round_, version, hold=True)
    found = app.materializations("events")
    assert len(found) == 2 * round_, found
    by_partition = {m.partition: m for m in found[-2:]}
    assert sorted(by_partition) == ["a", "b"], found
    with reader(app) as con:
        parts = {key: expected(con, key, key, version) for key in ("a", "b")}
        for key, m in by_partition.items():
            assert actual(con, "events", f"part = '{key}'") == parts[key]
            assert m.metadata["dagster/partition_row_count"] == m.metadata["srdp/rows_written"] == parts[key][0]
            assert m.metadata["srdp/slice"] == f"partitions {key}"
            check_snapshot(con, app, m, "events", f"partitions {key}", [key])
        # Nothing else: no row lost, none duplicated, no older version left.
        total = con.execute(
            "SELECT count(*), list(DISTINCT v), list(DISTINCT part ORDER BY part) FROM lake.analytics.events"
        ).fetchone()
        assert total == (parts["a"][0] + parts["b"][0], [version], ["a", "b"])
        # The later commit came after the earlier one: its snapshot holds both partitions' new rows.
        last = max(m.snapshot for m in by_partition.values())
        assert actual(con, "events", at=last) == actual(con, "events")
    attempts = {key: m.attempts for key, m in sorted(by_partition.items())}
    # Both transactions were open at once against one snapshot: one committed at its first
    # attempt, the other was refused and committed on a retry (no rows twice, see above).
    assert min(attempts.values()) == 1 and max(attempts.values()) >= 2, attempts
    return attempts


def test_maintenance_and_monitor_beside_an_srdp_io_manager_both_succeed(tmp_path: Path) -> None:
    app = sqlite_app(tmp_path)
    app.run((["job", "execute", "-j", "application"], app.env()))
    with reader(app) as con:
        before = {name: actual(con, name) for name in ("orders", "customers", "notes")}
        assert before == {name: expected(con, name, name, 1) for name in before}
        assert Lake(con).state() == {
            ("analytics", "orders"): (1, 0), ("analytics", "customers"): (1, 0), ("analytics", "notes"): (0, 5),
        }
        written = max(snapshot_changes(con))
    monitor, maintenance = (
        app.run((["job", "execute", "-j", job], app.env()))[0]
        for job in ("srdp_catalog_pressure_monitor", "srdp_dataset_maintenance")
    )
    with app.instance() as instance:
        runs = {r.job_name: r for r in instance.get_runs()}
        assert {name: r.status for name, r in runs.items()} == {
            "application": dg.DagsterRunStatus.SUCCESS,
            "srdp_catalog_pressure_monitor": dg.DagsterRunStatus.SUCCESS,
            "srdp_dataset_maintenance": dg.DagsterRunStatus.SUCCESS,
        }
        warnings = [
            e.user_message for e in instance.all_logs(runs["srdp_catalog_pressure_monitor"].run_id)
            if e.level == logging.WARNING
        ]
    # Only notes is over the threshold (pressure_warning_rows = 4): its 5 rows are inlined.
    assert warnings == [
        "DatasetCatalogPressure: lake.analytics.notes has 5 inlined rows (threshold 4); run srdp_flush or "
        "the srdp_dataset_maintenance job"
    ], monitor[-3000:]
    with reader(app) as con:
        assert {name: actual(con, name) for name in before} == before
        assert Lake(con).state() == {
            ("analytics", "orders"): (1, 0), ("analytics", "customers"): (1, 0), ("analytics", "notes"): (1, 0),
        }
        # No table for srdp's op outputs, and no write of the IO manager after the application's.
        assert set(table_ids(con)) == {"orders", "customers", "notes"}
        later = {s: c for s, c in snapshot_changes(con).items() if s > written}
        assert later and all(c["author"] != "io_manager" for c in later.values()), later
    assert "srdp: lake.analytics.notes: flushed" in maintenance, maintenance[-3000:]


def test_postgres_s3_round_trip_and_two_partitions_at_once(servers: Any, tmp_path: Path, monkeypatch: Any) -> None:
    """PostgreSQL catalog, S3 data: the IO manager gets the role and S3 secrets through its
    ``secrets`` setting (each a ``dg.EnvVar``), writes and reads back; then two processes write
    two partitions of one new table with their transactions open at once."""
    lake = new_lake(servers, tmp_path / "lake", extra=PG_EXTRA)
    app = App(tmp_path, lake.cfg, meta=lake.schema, secrets=lake.setup_sql())
    prepare(app)
    names = app.env()["SRDP_TEST_SECRET_VARS"].split(",")
    for name, statement in zip(names, app.secrets):
        monkeypatch.setenv(name, statement)

    @dg.asset(key_prefix=["analytics"])
    def orders() -> pa.Table:
        return frame("orders", 1)

    @dg.asset(key_prefix=["analytics"])
    def orders_copy(orders: pa.Table) -> pa.Table:
        return orders

    from srdp.dagster.io_manager import SrdpIOManager

    instance = dg.DagsterInstance.ephemeral()
    io_manager = SrdpIOManager(config_path=str(lake.cfg), secrets=[dg.EnvVar(n) for n in names])
    result = dg.materialize([orders, orders_copy], resources={"io_manager": io_manager}, instance=instance)
    assert result.success
    snapshots = {
        name: result.asset_materializations_for_node(f"analytics__{name}")[0].metadata["srdp/snapshot_id"].value
        for name in ("orders", "orders_copy")
    }
    # No credential in the run's log or its stored configuration.
    logged = " ".join(str(e.user_message) for e in instance.all_logs(result.run_id)) + repr(
        instance.get_run_by_id(result.run_id)
    )
    for secret in (servers.pg_password, servers.s3_secret_key):
        assert secret not in logged
    with reader(app) as con:
        rows = expected(con, "orders", "orders", 1)
        assert actual(con, "orders") == actual(con, "orders_copy") == rows
        assert actual(con, "orders", at=snapshots["orders"]) == rows and snapshots["orders_copy"] > snapshots["orders"]
        # The data is in the bucket: exactly the files the metadata registers.
        meta = Lake(con, meta=lake.schema)
        assert stored_files(con, lake.data_path) == meta.registered_files()
        assert meta.file_counts() == {("analytics", "orders"): 1, ("analytics", "orders_copy"): 1}

    report = partitions_at_once(app, 1, version=1)
    print("PostgreSQL + S3 attempts:", report)


def test_first_writes_of_two_processes_create_the_lake_and_both_commit(tmp_path: Path) -> None:
    """A fresh deployment: two processes write their first asset at the same moment and the lake
    does not exist yet, so both attach it as writer, and one of them creates it. Repeated on
    fresh lakes, since which process loses the race differs from round to round.

    DuckLake's initialization of the SQLite catalog in one process can make the other's ATTACH
    fail with ``Failed to initialize DuckLake: ... CREATE TABLE ducklake_metadata ...: database
    is locked`` (a plain DuckLake ATTACH races the same way); attaching again succeeds on the
    lake the other process created, so srdp_attach_catalog retries it. Before it did, 4 runs of
    this test lost the race in 4 of 4, 3 of 6, 0 of 4 and 2 of 6 rounds."""
    failures = []
    for round_ in range(FIRST_WRITE_ROUNDS):
        app = sqlite_app(tmp_path / f"round{round_}", create_lake=False, dagster_home=False)
        script = (
            "import sys, dagster as dg, defs\n"
            "name = sys.argv[1]\n"
            "result = dg.materialize([getattr(defs, name)], resources=defs.defs.resources, raise_on_error=False)\n"
            "errors = [e.event_specific_data.error for e in result.all_events if e.is_step_failure]\n"
            "causes = [(e.cause or e).message.strip() for e in errors]\n"
            "print('FAILED' if not result.success else 'OK', *causes)\n"
        )
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", script, name], cwd=app.folder, env={**app.env(parallel="1"), "PYTHONPATH": str(app.folder)},
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
            for name in ("orders", "customers")
        ]
        outcomes = [p.communicate(timeout=300) for p in procs]
        for proc, (out, err) in zip(procs, outcomes):
            last = (out.strip().splitlines() or [""])[-1]  # after DuckDB's progress bar, if any
            assert proc.returncode == 0 and last.startswith(("OK", "FAILED")), err[-3000:]
            if not last.startswith("OK"):
                failures.append(f"round {round_}: {last[:400]}")
        with reader(app) as con:
            done = {name: actual(con, name) for name in table_ids(con)}
            assert all(done[n] == expected(con, n, n, 1) for n in done), done
    assert failures == [], "\n".join(failures)
