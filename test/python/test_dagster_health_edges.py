"""The edges of each table's health checks and observations, with real Dagster on real lakes:

* a dataset exactly at ``pressure_warning_rows`` passes ``inlined_rows_under_threshold`` (the
  threshold is the most rows that pass), in the monitor and in the checks run on their own;
* a small configured ``target_file_size`` still counts the files under DuckLake's 512 MiB as
  small (the merge target is the largest size anyone configured);
* a file of exactly 512 MiB counts as large, one byte less as small (sparse Parquet files,
  registered with ``ducklake_add_data_files``: their size on disk is a few kilobytes);
* a resource that cannot read the lake leaves the checks passing with the "health not read"
  note (advisory, fail-open), never failing them.
"""

# No `from __future__ import annotations`: Dagster reads the asset's annotations as objects.

import os
import struct
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest

import srdp
from conftest import write_config
from iomanager_support import _close_io_sessions_after_test  # noqa: F401
from srdp import dagster as sd

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"
data_inlining_row_limit = 10
pressure_warning_rows = {threshold}

[catalogs.lake.schemas.analytics]
writer = "io_manager"
layer = "curated"
"""

#: DuckLake's default target file size: a file this big or bigger is not small.
MIB_512 = 1 << 29

EVENTS = dg.AssetKey(["lake", "analytics", "events"])
INLINED = (EVENTS, "inlined_rows_under_threshold")
SMALL = (EVENTS, "small_files_under_limit")


class Quiet:
    def publish(self, event):
        pass


def definitions(cfg: Path, rows: int) -> dg.Definitions:
    table = sd.srdp_table("lake", "analytics", "events", config=cfg)

    @dg.asset(key=table.key, metadata=table.metadata)
    def events() -> pa.Table:
        return pa.table({"id": pa.array(range(rows), pa.int64())})

    return sd.add_srdp_definitions(dg.Definitions(assets=[events]), cfg, io_manager=True, publisher=Quiet())


def evaluations(result) -> dict:
    return {
        (e.asset_key, e.check_name): (e.passed, e.description)
        for e in (ev.event_specific_data for ev in result.all_events if ev.event_type_value == "ASSET_CHECK_EVALUATION")
    }


def observations(result) -> dict:
    return {
        e.event_specific_data.asset_observation.asset_key: {
            k: v.value for k, v in e.event_specific_data.asset_observation.metadata.items()
        }
        for e in result.all_events
        if e.event_type_value == "ASSET_OBSERVATION"
    }


def run_checks(defs: dg.Definitions) -> dg.ExecuteInProcessResult:
    """The declared checks on their own (as from the UI)."""
    return dg.materialize(
        [*defs.assets, *defs.asset_checks],
        resources=defs.resources,
        selection=dg.AssetSelection.checks_for_assets(EVENTS),
    )


def test_a_dataset_exactly_at_the_threshold_passes(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, CONFIG.format(threshold=5))
    defs = definitions(cfg, rows=5)
    assert dg.materialize(defs.assets, resources=defs.resources).success  # 5 inlined rows
    monitor = defs.resolve_job_def(sd.MONITOR_JOB).execute_in_process()
    assert monitor.success
    assert observations(monitor)[EVENTS]["srdp/inlined_rows"] == 5
    assert evaluations(monitor)[INLINED] == (True, "5 inlined rows (threshold 5); advisory")
    assert evaluations(run_checks(defs))[INLINED] == (True, "5 inlined rows (threshold 5); advisory")
    # One row more is over it.
    over = defs.resolve_job_def(sd.MONITOR_JOB).execute_in_process(
        run_config={"ops": {"srdp_check_catalog_pressure": {"config": {"threshold": 4}}}}
    )
    assert evaluations(over)[INLINED] == (False, "5 inlined rows (threshold 4); advisory")


def test_a_small_configured_target_file_size_still_counts_small_files(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, CONFIG.format(threshold=100))
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
        con.execute("CALL lake.set_option('target_file_size', '1KB')")
        con.execute("CREATE TABLE lake.main.files (id BIGINT, s VARCHAR)")
        for i in range(3):  # three Parquet files of several KB each: above the configured 1 KB
            con.execute(f"INSERT INTO lake.main.files SELECT range, repeat('x', 100) || range FROM range({i * 1000}, {i * 1000 + 500})")
        sizes = [s for (s,) in con.execute(
            "SELECT file_size_bytes FROM __ducklake_metadata_lake.main.ducklake_data_file WHERE end_snapshot IS NULL"
        ).fetchall()]
        assert con.execute(
            "SELECT value FROM __ducklake_metadata_lake.main.ducklake_metadata WHERE key = 'target_file_size'"
        ).fetchall() == [("1000",)]  # 1KB, in bytes
        con.execute("DETACH lake")
    finally:
        con.close()
    assert len(sizes) == 3 and all(1000 < s < MIB_512 for s in sizes), sizes
    defs = sd.add_srdp_definitions(dg.Definitions(), cfg, publisher=Quiet())
    monitor = defs.resolve_job_def(sd.MONITOR_JOB).execute_in_process()
    seen = observations(monitor)[dg.AssetKey(["lake", "main", "files"])]
    # Small for srdp's merge (the largest target anyone configured, DuckLake's 512 MiB), though
    # bigger than the 1 KB target.
    assert (seen["srdp/live_data_files"], seen["srdp/small_files"]) == (3, 3)


def sparse_parquet(source: Path, path: Path, size: int) -> None:
    """``source`` (a Parquet file) padded to ``size`` bytes with a hole before its footer: the
    column chunks keep their offsets, the footer stays at the end, the disk holds a few KB."""
    data = source.read_bytes()
    (footer,) = struct.unpack("<I", data[-8:-4])
    start = len(data) - 8 - footer
    with open(path, "wb") as f:
        f.write(data[:start])
        f.seek(size - (len(data) - start))
        f.write(data[start:])
    assert os.path.getsize(path) == size


def test_a_file_of_512_mib_is_large_and_one_byte_less_is_small(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, CONFIG.format(threshold=100))
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
        con.execute("CREATE TABLE lake.main.big (id BIGINT)")
        source = tmp_path / "source.parquet"
        con.execute(f"COPY (SELECT range::BIGINT AS id FROM range(100)) TO '{source}' (FORMAT parquet)")
        for name, size in (("exact.parquet", MIB_512), ("under.parquet", MIB_512 - 1)):
            sparse_parquet(source, tmp_path / name, size)
            con.execute(f"CALL ducklake_add_data_files('lake', 'big', '{tmp_path / name}')")
        assert con.execute("SELECT count(*), sum(id) FROM lake.main.big").fetchone() == (200, 9900)
        assert sorted(s for (s,) in con.execute(
            "SELECT file_size_bytes FROM __ducklake_metadata_lake.main.ducklake_data_file WHERE end_snapshot IS NULL"
        ).fetchall()) == [MIB_512 - 1, MIB_512]
        con.execute("DETACH lake")
    finally:
        con.close()
    defs = sd.add_srdp_definitions(dg.Definitions(), cfg, publisher=Quiet())
    monitor = defs.resolve_job_def(sd.MONITOR_JOB).execute_in_process()
    seen = observations(monitor)[dg.AssetKey(["lake", "main", "big"])]
    assert (seen["srdp/live_data_files"], seen["srdp/small_files"], seen["srdp/live_bytes"]) == (2, 1, 2 * MIB_512 - 1)


def test_a_resource_that_cannot_read_the_lake_leaves_the_checks_passing_with_a_note(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, CONFIG.format(threshold=5))
    defs = definitions(cfg, rows=5)  # never materialized: the lake does not exist yet
    result = run_checks(defs)
    assert result.success
    found = evaluations(result)
    assert set(found) == {INLINED, SMALL}
    for passed, description in found.values():
        assert passed is True
        assert description.startswith("health not read (advisory, ignored): InvalidInputException(")
        assert "catalog 'lake' has no lake yet" in description
    assert not (tmp_path / "catalog").exists()  # a reader never creates the lake


@pytest.fixture(autouse=True)
def _no_dagster_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
