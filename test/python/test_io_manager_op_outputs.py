"""What a Dagster user meets on a new project with SrdpIOManager: the first partition of a
self-dependent asset on a brand-new lake (no attach has ever created it), refusals that call an
op output an op output (with its step and output name), and one table per op output: two ops'
default outputs resolving to one table are refused when the code location loads and, for a job
built without srdp's load check, at write time, with nothing written.

Jobs run for real (``materialize``, ``execute_in_process``, ``dagster definitions validate``);
the lake is read back on a connection of its own (iomanager_support.view), counts and checksums.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import textwrap
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest

from conftest import REPO, write_config
from iomanager_support import BACKENDS, CONFIG, io_manager, sqlite_lake, view  # noqa: F401
from srdp.dagster import add_srdp_definitions
from srdp.dagster.tables import IOManagerError

OPS_SCHEMA = '\n[catalogs.lake.schemas.ops_out]\nwriter = "io_manager"\nlayer = "curated"\n'


# --- the first partition of a self-dependent asset on a brand-new lake ------------------------
@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_the_first_partition_of_a_self_dependent_asset_on_a_brand_new_lake_reads_an_empty_input(
    tmp_path: Path, backend: str
) -> None:
    cfg = write_config(tmp_path / "lake", CONFIG.format(metadata=BACKENDS[backend]))
    assert sorted(p.name for p in cfg.parent.iterdir()) == ["srdp.toml"]  # no lake, no catalog file
    daily = dg.DailyPartitionsDefinition(start_date="2024-01-01")
    seen: list[tuple[int, list[str]]] = []

    @dg.asset(
        key_prefix=["analytics"],
        partitions_def=daily,
        metadata={"partition_expr": "day"},
        ins={
            "previous": dg.AssetIn(
                key=dg.AssetKey(["analytics", "running"]),
                partition_mapping=dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1),
            )
        },
    )
    def running(context, previous: pa.Table) -> pa.Table:  # noqa: ANN001
        seen.append((previous.num_rows, previous.column_names))
        total = sum(previous.column("n").to_pylist()) if previous.num_rows else 0
        day = dt.datetime.strptime(context.partition_key, "%Y-%m-%d")
        return pa.table({"day": [day], "n": [total + 1]})

    resources = {"io_manager": io_manager(cfg)}
    instance = dg.DagsterInstance.ephemeral()
    for key in ("2024-01-01", "2024-01-02", "2024-01-03"):
        assert dg.materialize([running], partition_key=key, resources=resources, instance=instance).success
    # The first partition found neither lake nor table: an input with no rows and no columns.
    assert seen == [(0, []), (1, ["day", "n"]), (1, ["day", "n"])]
    with view(cfg) as v:
        assert v.rows("SELECT CAST(day AS DATE)::VARCHAR, n FROM lake.analytics.running ORDER BY 1") == [
            ("2024-01-01", 1),
            ("2024-01-02", 2),
            ("2024-01-03", 3),
        ]


# --- op outputs are called op outputs ------------------------------------------------------------
def test_an_op_output_without_a_schema_is_refused_as_an_op_output_with_its_step_and_name(sqlite_lake: Path) -> None:
    @dg.op
    def orders() -> pa.Table:
        return pa.table({"id": [1]})

    @dg.job(resource_defs={"io_manager": io_manager(sqlite_lake)})
    def job() -> None:
        orders()

    with pytest.raises(IOManagerError) as caught:
        job.execute_in_process()
    assert str(caught.value) == (
        "op output 'result' of step 'orders' has no schema: give it a 'schema' or 'dagster/table_name' metadata "
        "entry (dg.Out(metadata={'schema': 'analytics'})), or set schema= on SrdpIOManager"
    )


def test_an_op_output_whose_schema_and_table_name_disagree_is_named_as_an_op_output(sqlite_lake: Path) -> None:
    @dg.op(out={"totals": dg.Out(metadata={"schema": "marts", "dagster/table_name": "analytics.t"})})
    def summarize() -> pa.Table:
        return pa.table({"id": [1]})

    @dg.job(resource_defs={"io_manager": io_manager(sqlite_lake)})
    def job() -> None:
        summarize()

    with pytest.raises(IOManagerError) as caught:
        job.execute_in_process()
    assert str(caught.value) == (
        "op output 'totals' of step 'summarize': metadata 'schema' ('marts') and 'dagster/table_name' "
        "('analytics.t') name different schemas; give one of them"
    )


# --- one table per op output ---------------------------------------------------------------------
@dg.op(out=dg.Out(metadata={"schema": "ops_out"}))
def first() -> pa.Table:
    return pa.table({"id": list(range(10))})


@dg.op(out=dg.Out(metadata={"schema": "ops_out"}))
def second(upstream: pa.Table) -> pa.Table:
    return pa.table({"other": ["x", "y"], "count": [upstream.num_rows] * 2})


@dg.job
def clobbering() -> None:
    second(first())


def test_two_default_op_outputs_in_one_table_are_refused_when_the_code_location_loads(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, CONFIG.format(metadata=BACKENDS["sqlite"]) + OPS_SCHEMA)
    with pytest.raises(ValueError) as caught:
        add_srdp_definitions(dg.Definitions(jobs=[clobbering]), cfg, io_manager=True)
    assert str(caught.value) == (
        "add_srdp_definitions(io_manager=True): op output 'result' of step 'second' and op output 'result' of "
        "step 'first' would both be stored in lake.ops_out.result; srdp keeps one table per data object. Name "
        "this output's table (dg.Out(metadata={'table': 'second_result'})) or give the outputs distinct names"
    )
    # An op output in an asset's table is refused too; named tables load.
    @dg.asset(key_prefix=["ops_out"])
    def result() -> pa.Table:
        return pa.table({"id": [1]})

    @dg.op(out=dg.Out(metadata={"schema": "ops_out", "table": "first_result"}))
    def named() -> pa.Table:
        return pa.table({"id": [1]})

    @dg.job
    def beside_an_asset() -> None:
        first()

    with pytest.raises(ValueError, match=r"op output 'result' of step 'first' and asset 'ops_out/result' would both"):
        add_srdp_definitions(dg.Definitions(assets=[result], jobs=[beside_an_asset]), cfg, io_manager=True)

    @dg.job
    def distinct() -> None:
        second(named())

    defs = add_srdp_definitions(dg.Definitions(jobs=[distinct, dg.define_asset_job("assets")], assets=[]), cfg, io_manager=True)
    assert defs.resolve_job_def("distinct").name == "distinct"
    assert not (tmp_path / "catalog").exists()  # the check reads srdp.toml only, it creates no lake


def test_dagster_definitions_validate_fails_on_two_op_outputs_in_one_table(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, CONFIG.format(metadata=BACKENDS["sqlite"]) + OPS_SCHEMA)
    (tmp_path / "defs.py").write_text(textwrap.dedent(f"""
        import dagster as dg
        from srdp.dagster import add_srdp_definitions

        @dg.op(out=dg.Out(metadata={{"schema": "ops_out"}}))
        def first():
            return 1

        @dg.op(out=dg.Out(metadata={{"schema": "ops_out"}}))
        def second(x):
            return x

        @dg.job
        def ops():
            second(first())

        defs = add_srdp_definitions(dg.Definitions(jobs=[ops]), config={str(cfg)!r}, io_manager=True)
    """))
    done = subprocess.run(
        [str(REPO / ".venv" / "bin" / "dagster"), "definitions", "validate", "-f", "defs.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 1
    assert (
        "ValueError: add_srdp_definitions(io_manager=True): op output 'result' of step 'second' and op output "
        "'result' of step 'first' would both be stored in lake.ops_out.result"
    ) in done.stdout + done.stderr


def test_an_op_output_never_replaces_a_table_another_op_output_wrote_last(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "lake", CONFIG.format(metadata=BACKENDS["sqlite"]) + OPS_SCHEMA)
    resources = {"io_manager": io_manager(cfg)}
    with pytest.raises(IOManagerError) as caught:
        clobbering.execute_in_process(resources=resources)
    with view(cfg) as v:
        (snapshot,) = [s["snapshot_id"] for s in v.snapshots() if s["author"] == "io_manager"]
        assert str(caught.value) == (
            "op output 'result' of step 'second' would replace lake.ops_out.result, last written by op output "
            f"'first.result' (snapshot {snapshot}); srdp keeps one table per data object, so nothing was written. "
            "Name this output's table (dg.Out(metadata={'table': ...})) or give the outputs distinct names"
        )
        # first's rows, and only its columns: the second write left nothing behind.
        assert v.rows("SELECT count(*), sum(hash(id))::VARCHAR FROM lake.ops_out.result") == v.rows(
            "SELECT count(*), sum(hash(range))::VARCHAR FROM range(10)"
        )
        assert [c[0] for c in v.columns("ops_out", "result")] == ["id"]
    # The same op output writes its table again, from this job and from another one using the op.
    @dg.job
    def again() -> None:
        first()

    for job in (again, again):
        assert job.execute_in_process(resources=resources).success
    with view(cfg) as v:
        assert v.rows("SELECT count(*) FROM lake.ops_out.result") == [(10,)]
        extras = [s["extra"] for s in v.snapshots() if s["author"] == "io_manager"]
        assert len(extras) == 3 and all('"op_output": "first.result"' in e and '"table_name": "lake.ops_out.result"' in e for e in extras)
