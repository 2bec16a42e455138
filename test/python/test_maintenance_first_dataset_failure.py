"""The nightly maintenance job when the FIRST dataset of the run fails: the run's failure says
that nothing was committed before it (``Datasets committed before it: none``, metadata
``datasets_done == 0``), and every dataset is left exactly as it was.

The failure is real: DuckLake 1.0 rejects the flush of a table whose ``NOT NULL`` was dropped
after a row was inlined (duckdb/ducklake#1383), so the first dataset in (schema, table) order,
``main.a_first``, fails to flush before ``main.b`` is reached.
"""

from __future__ import annotations

import dagster as dg

import srdp
from conftest import write_config
from lakecheck import Lake
from srdp import dagster as sd

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"
data_inlining_row_limit = 10
"""


def build_lake(tmp_path):
    cfg = write_config(tmp_path, CONFIG)
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
        for statement in (
            "CREATE TABLE lake.main.a_first (id BIGINT NOT NULL, v VARCHAR)",
            "INSERT INTO lake.main.a_first VALUES (1, 'x')",
            "ALTER TABLE lake.main.a_first ALTER COLUMN id DROP NOT NULL",
            "INSERT INTO lake.main.a_first VALUES (NULL, 'y')",
            # main.b: two Parquet files and two inlined batches, which a reached step would change.
            "CREATE TABLE lake.main.b (id BIGINT NOT NULL, v VARCHAR)",
            "INSERT INTO lake.main.b SELECT range, 'big' FROM range(20)",
            "INSERT INTO lake.main.b SELECT range, 'big' FROM range(20, 40)",
            "INSERT INTO lake.main.b SELECT range, 'small' FROM range(40, 45)",
            "INSERT INTO lake.main.b SELECT range, 'small' FROM range(45, 50)",
        ):
            con.execute(statement)
        con.execute("DETACH lake")
    finally:
        con.close()
    return cfg


def state(cfg) -> dict:
    """Per dataset: rows, checksum, live files and inlined rows (from the metadata tables)."""
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        lake = Lake(con)
        files, inlined = lake.file_counts(), lake.inlined_rows()
        out = {}
        for schema, table in lake.datasets():
            rows, checksum = con.execute(
                f"SELECT count(*), sum(hash(id, v))::VARCHAR FROM lake.{schema}.{table}"
            ).fetchone()
            out[(schema, table)] = (rows, checksum, files[(schema, table)], inlined[(schema, table)])
        return out
    finally:
        con.close()


def test_when_the_first_dataset_fails_the_run_says_none_was_committed_before_it(tmp_path):
    cfg = build_lake(tmp_path)
    before = state(cfg)
    assert before[("main", "b")][2:] == (2, 10) and before[("main", "a_first")][2:] == (0, 2), before

    instance = dg.DagsterInstance.ephemeral()
    job = sd.srdp_definitions(cfg).resolve_job_def(sd.MAINTENANCE_JOB)
    result = job.execute_in_process(raise_on_error=False, instance=instance)
    assert not result.success
    failure = result.failure_data_for_node("srdp_maintain_datasets")
    description = failure.user_failure_data.description
    assert description == (
        "srdp maintenance failed at dataset lake.main.a_first: Invalid Input Error: srdp_compact: "
        "dataset 'main.a_first' failed to flush after 1 attempt(s): Constraint Error: NOT NULL "
        "constraint failed: a_first.id. Datasets committed before it: none. "
        "A rerun revisits the committed datasets harmlessly."
    ), description
    assert {k: v.value for k, v in failure.user_failure_data.metadata.items()} == {
        "dataset": "lake.main.a_first",
        "datasets_done": 0,
    }
    # No dataset produced an output, and both are as they were (main.b was never reached).
    assert [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"] == []
    assert state(cfg) == before
