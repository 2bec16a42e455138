"""srdp.ingest.dlt reads srdp.toml and checks the writer once per pipeline and process, not per load.

The first load of a pipeline in a process asks srdp (srdp_dlt_destination: the file, the writer,
the rules) and creates the lake if missing; later loads of that pipeline in that process apply
the rules of that answer and log its warnings without asking again. A changed srdp.toml is seen
by the next process on the same pipeline folder, and in the same process by a destination asked
anew. Real dlt 1.31 and real DuckLake (SQLite catalog); the lake is read with plain SQL.
Statements that only read run without a commit label (they make no snapshot; test_dlt_audit.py
checks that every write still carries one).
"""

from __future__ import annotations

import os

os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"  # offline platform: dlt must not phone home

import json  # noqa: E402
import logging  # noqa: E402
from pathlib import Path  # noqa: E402

import dlt  # noqa: E402
import pytest  # noqa: E402

import srdp  # noqa: E402
import srdp.ingest.dlt as srdp_dlt  # noqa: E402
from conftest import run_python, write_config  # noqa: E402
from srdp.ingest.dlt.errors import SrdpDltError  # noqa: E402

LAKE = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"

[catalogs.lake.schemas.raw]
writer = "dlt"
layer = "raw"
"""
RELAXED = LAKE + "\n[rules]\nraw_append_only = false\n"

# One load in a process of its own, on the pipeline folder the test's process used: a replace
# of events by rows {start}..{start}+2. Prints the warnings logged and whether srdp refused it.
ONE_LOAD = """
import json, logging, os
os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"
import dlt
import srdp.ingest.dlt as srdp_dlt
from srdp.ingest.dlt.errors import SrdpDltError

seen = []
class Keep(logging.Handler):
    def emit(self, record):
        seen.append(record.getMessage())
logging.getLogger("srdp.ingest.dlt").addHandler(Keep())
dest = srdp_dlt.destination("lake", config={cfg!r})
pipeline = dest.pipeline("events", pipelines_dir={pipelines!r})
data = dlt.resource([{{"id": i}} for i in range({start}, {start} + 2)], name="events", write_disposition="replace")
try:
    dest.run(pipeline, data)
    refused = None
except SrdpDltError as error:
    refused = str(error)
print(json.dumps({{"warnings": seen, "refused": refused}}))
"""


def ids(cfg: Path) -> list[int]:
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        return [r[0] for r in con.sql("SELECT id FROM lake.raw.events ORDER BY id").fetchall()]
    finally:
        con.execute("DETACH lake")
        con.close()


def events(start: int, disposition: str = "append") -> object:
    return dlt.resource([{"id": i} for i in range(start, start + 2)], name="events", write_disposition=disposition)


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "srdp.ingest.dlt" and r.levelno == logging.WARNING]


def test_later_loads_of_a_pipeline_keep_the_answer_of_its_first_load_in_the_process(tmp_path: Path, caplog) -> None:
    cfg = write_config(tmp_path, LAKE)
    caplog.set_level(logging.WARNING, logger="srdp.ingest.dlt")
    dest = srdp_dlt.destination("lake", config=cfg)
    pipeline = dest.pipeline("events", pipelines_dir=str(tmp_path / "pipelines"))
    assert not dest.run(pipeline, events(0)).has_failed_jobs

    # srdp.toml relaxes raw_append_only now; this process's pipeline keeps its first answer:
    # the rule still refuses a replace, and no relaxed-rule warning is logged.
    write_config(tmp_path, RELAXED)
    caplog.clear()
    with pytest.raises(SrdpDltError, match="rule raw_append_only refuses this load into lake.raw"):
        dest.run(pipeline, events(10, "replace"))
    assert not dest.run(pipeline, events(20)).has_failed_jobs
    assert warnings_of(caplog) == []
    assert ids(cfg) == [0, 1, 20, 21]

    # A destination asked anew reads the file: the same pipeline may now replace, with the warning.
    caplog.clear()
    relaxed = dest.refresh()
    assert relaxed.write_disposition is None
    assert not relaxed.run(pipeline, events(30, "replace")).has_failed_jobs
    assert len(warnings_of(caplog)) == 1 and "raw_append_only is relaxed" in warnings_of(caplog)[0]
    assert ids(cfg) == [30, 31]
    # ... and keeps that answer for its later loads, warning on each.
    caplog.clear()
    assert not relaxed.run(pipeline, events(40, "replace")).has_failed_jobs
    assert len(warnings_of(caplog)) == 1 and ids(cfg) == [40, 41]


def test_a_changed_srdp_toml_is_seen_by_the_next_process_on_the_same_pipeline(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, LAKE)
    pipelines = str(tmp_path / "pipelines")
    dest = srdp_dlt.destination("lake", config=cfg)
    pipeline = dest.pipeline("events", pipelines_dir=pipelines)
    assert not dest.run(pipeline, events(0)).has_failed_jobs  # this process keeps the strict answer

    def load_elsewhere(start: int) -> dict:
        return json.loads(run_python(ONE_LOAD.format(cfg=str(cfg), pipelines=pipelines, start=start), timeout=300))

    strict = load_elsewhere(10)
    assert strict["warnings"] == [] and "rule raw_append_only refuses" in strict["refused"]
    write_config(tmp_path, RELAXED)
    relaxed = load_elsewhere(20)
    assert relaxed["refused"] is None
    assert len(relaxed["warnings"]) == 1 and "srdp rule raw_append_only is relaxed by" in relaxed["warnings"][0]
    assert ids(cfg) == [20, 21]


@pytest.mark.parametrize(("query", "unlabelled"), [
    ('SELECT "version" FROM "raw"."_dlt_version" ORDER BY inserted_at DESC LIMIT 1', True),
    ("  select 1 from information_schema.schemata;", True),
    ("DESCRIBE raw.events", True),
    ("SHOW TABLES", True),
    ('INSERT INTO "raw"."_dlt_loads" VALUES (1)', False),
    ("SELECT 1; INSERT INTO raw.t VALUES (1)", False),  # more than one statement: labelled
    ("WITH x AS (SELECT 1) INSERT INTO raw.t SELECT * FROM x", False),
    ("CREATE TABLE raw.t (id BIGINT)", False),
    ("SELECTED", False),
])
def test_only_one_statement_that_reads_runs_without_a_label(query: str, unlabelled: bool) -> None:
    from srdp.ingest.dlt.audited import reads_only

    assert reads_only(query) is unlabelled
