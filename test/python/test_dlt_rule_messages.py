"""What srdp.ingest.dlt says when a rule stops a load, checked word for word with real dlt 1.31.

raw_validated is enforced by dlt during the load (schema contract, data types frozen): the helper
turns dlt's contract error into one naming the rule, the column, both types, the pending load
package and what becomes of it, and the line that relaxes the rule. Each claim the message makes
about the next run is exercised here: the retry, abort_packages, relaxing the rule, and
dagster-dlt's next materialization. raw_append_only refusals say which argument or resource asked
for which disposition.
"""

from __future__ import annotations

import os

os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"  # offline platform: dlt must not phone home

from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import dagster as dg  # noqa: E402
import dlt  # noqa: E402
import pytest  # noqa: E402
from dagster_dlt import DagsterDltResource  # noqa: E402
from dlt.common.schema.exceptions import DataValidationError  # noqa: E402
from dlt.pipeline.exceptions import PipelineStepFailed  # noqa: E402
from dlt.pipeline.pipeline import Pipeline  # noqa: E402

import srdp  # noqa: E402
import srdp.ingest.dlt as srdp_dlt  # noqa: E402
from srdp.dagster import srdp_dlt_assets  # noqa: E402
from conftest import write_config  # noqa: E402

LAKE = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"

[catalogs.lake.schemas.raw]
writer = "dlt"
layer = "raw"
"""


def query(cfg: Path, sql: str) -> list[tuple[Any, ...]]:
    """A short-lived reader of the lake (attach, query, close)."""
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')")
        return con.sql(sql).fetchall()
    finally:
        con.close()


def events(cfg: Path) -> list[tuple[Any, ...]]:
    return query(cfg, "SELECT id, amount FROM lake.raw.events ORDER BY id")


def snapshot(cfg: Path) -> int:
    return int(query(cfg, "SELECT max(snapshot_id) FROM lake.snapshots()")[0][0])


def pending(pipeline: Pipeline) -> list[str]:
    """The load packages dlt extracted and has not normalized, read from its folder on disk."""
    folder = Path(pipeline.working_dir) / "normalize" / "extracted"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def stopped(cfg: Path, load_id: str, working_dir: str) -> str:
    """The message for ``amount`` (bigint) receiving text through ``pipeline.run``."""
    return (
        f"srdp.ingest.dlt: rule raw_validated stopped load package {load_id} into lake.raw: column amount "
        "of lake.raw.events is bigint, and this load brings text (dlt would add the variant column "
        "amount__v_text); nothing was loaded. "
        f"The package stays pending in {working_dir}: every run of pipeline 'events' tries it again "
        "first and fails the same way, without extracting the data it is given, even once the rule is "
        "relaxed. Drop it with pipeline.abort_packages(), then either load amount as bigint, or relax "
        f"the rule with the line `raw_validated = false` under [rules] in {cfg} (every load then logs "
        "a warning)"
    )


def text_amount(id_: int) -> Any:
    return dlt.resource([{"id": id_, "amount": f"amount-{id_}"}], name="events")


def int_amount(id_: int) -> Any:
    return dlt.resource([{"id": id_, "amount": id_ * 10}], name="events")


def fail_with_text(cfg: Path, tmp_path: Path) -> tuple[srdp_dlt.DltDestination, Pipeline, int, str]:
    """Loads id 1 (amount bigint), then id 2 with a text amount, which raw_validated stops."""
    dest = srdp_dlt.destination("lake", config=cfg)
    pipeline = dest.pipeline("events", pipelines_dir=str(tmp_path / "pipelines"))
    dest.run(pipeline, int_amount(1))
    before = snapshot(cfg)
    with pytest.raises(srdp_dlt.SrdpDltValidationError) as failed:
        dest.run(pipeline, text_amount(2))
    (load_id,) = pending(pipeline)
    assert str(failed.value) == stopped(cfg, load_id, pipeline.working_dir)
    # dlt's own error is attached: the step failure, and the contract violation it wraps.
    cause = failed.value.__cause__
    assert isinstance(cause, PipelineStepFailed) and (cause.step, cause.load_id) == ("normalize", load_id)
    assert isinstance(cause.exception.__cause__ or cause.exception.__context__, DataValidationError)
    assert snapshot(cfg) == before and events(cfg) == [(1, 10)]
    return dest, pipeline, before, load_id


def test_a_type_change_names_column_types_package_and_the_next_run_retries_it_until_aborted(tmp_path):
    cfg = write_config(tmp_path, LAKE)
    dest, pipeline, before, load_id = fail_with_text(cfg, tmp_path)

    # The next run tries the pending package first and fails the same way; the good row it was
    # given is not extracted (nothing new pending, nothing loaded).
    with pytest.raises(srdp_dlt.SrdpDltValidationError) as again:
        dest.run(pipeline, int_amount(3))
    assert str(again.value) == stopped(cfg, load_id, pipeline.working_dir)
    assert pending(pipeline) == [load_id]
    assert snapshot(cfg) == before and events(cfg) == [(1, 10)]

    # abort_packages drops it; the next run loads what it is given, and only that.
    pipeline.abort_packages()
    assert pending(pipeline) == []
    assert not dest.run(pipeline, int_amount(4)).has_failed_jobs
    assert events(cfg) == [(1, 10), (4, 40)]
    assert snapshot(cfg) > before


def test_relaxing_raw_validated_does_not_rescue_the_pending_package_but_loads_after_abort(tmp_path):
    cfg = write_config(tmp_path, LAKE)
    _, pipeline, before, load_id = fail_with_text(cfg, tmp_path)

    # The line the message names, added: the package, extracted under the rule, still fails
    # (dlt's own error now, since the rule is off) and stays pending.
    write_config(tmp_path, LAKE + "\n[rules]\nraw_validated = false\n")
    relaxed = srdp_dlt.destination("lake", config=cfg)
    assert relaxed.schema_contract is None
    with pytest.raises(PipelineStepFailed) as still:
        relaxed.run(pipeline, text_amount(3))
    assert still.value.load_id == load_id and "amount__v_text" in str(still.value)
    assert "`data_types` are frozen" in str(still.value)
    assert pending(pipeline) == [load_id] and snapshot(cfg) == before

    # After abort_packages, the relaxed rule lets a text amount through as dlt's variant column,
    # although the table was created (and its contract stored by dlt) while the rule was on.
    pipeline.abort_packages()
    assert not relaxed.run(pipeline, text_amount(5)).has_failed_jobs
    assert query(cfg, "SELECT id, amount, amount__v_text FROM lake.raw.events ORDER BY id") == [
        (1, 10, None), (5, None, "amount-5"),
    ]
    assert pending(pipeline) == []


def test_a_type_hint_change_is_refused_while_extracting_and_leaves_nothing_pending(tmp_path):
    cfg = write_config(tmp_path, LAKE)
    dest = srdp_dlt.destination("lake", config=cfg)
    pipeline = dest.pipeline("events", pipelines_dir=str(tmp_path / "pipelines"))
    dest.run(pipeline, int_amount(1))
    hinted = dlt.resource([{"id": 2, "amount": "two"}], name="events", columns={"amount": {"data_type": "text"}})
    with pytest.raises(srdp_dlt.SrdpDltValidationError) as failed:
        dest.run(pipeline, hinted)
    cause = failed.value.__cause__
    assert isinstance(cause, PipelineStepFailed) and cause.step == "extract"
    assert str(failed.value) == (
        f"srdp.ingest.dlt: rule raw_validated stopped load package {cause.load_id} into lake.raw: column "
        "amount of lake.raw.events is bigint, and this load brings text; nothing was loaded. dlt refused "
        "it while extracting, so no package is left pending and the next run extracts anew: either load "
        f"amount as bigint, or relax the rule with the line `raw_validated = false` under [rules] in {cfg} "
        "(every load then logs a warning)"
    )
    assert pending(pipeline) == []
    assert not dest.run(pipeline, int_amount(3)).has_failed_jobs
    assert events(cfg) == [(1, 10), (3, 30)]


def test_in_dagster_the_failed_package_is_dropped_and_the_next_materialization_loads_new_data(tmp_path):
    cfg = write_config(tmp_path, LAKE)
    dest = srdp_dlt.destination("lake", config=cfg)
    pipeline = dest.pipeline("events", pipelines_dir=str(tmp_path / "pipelines"))
    batches = [[{"id": 1, "amount": 10}], [{"id": 2, "amount": "twenty"}], [{"id": 3, "amount": 30}]]

    @dlt.source
    def shop() -> Any:
        @dlt.resource(name="events")
        def events_resource() -> Any:
            yield batches[0]

        return events_resource

    assets = srdp_dlt_assets(dlt_source=shop(), destination=dest, dlt_pipeline=pipeline, name="shop")
    instance = dg.DagsterInstance.ephemeral()
    resources = {"dlt": DagsterDltResource()}
    assert dg.materialize([assets], resources=resources, instance=instance).success

    batches.pop(0)  # the text amount
    result = dg.materialize([assets], resources=resources, instance=instance, raise_on_error=False)
    assert not result.success
    (load_id,) = pending(pipeline)
    error = result.get_step_failure_events()[0].event_specific_data.error.cause
    assert error.cls_name == "SrdpDltValidationError"
    assert error.message == (
        f"srdp.ingest.dlt.errors.SrdpDltValidationError: srdp.ingest.dlt: rule raw_validated stopped load "
        f"package {load_id} into lake.raw: column amount of lake.raw.events is bigint, and this load brings "
        "text (dlt would add the variant column amount__v_text); nothing was loaded. dagster-dlt drops the "
        f"package pending in {pipeline.working_dir} before the next materialization, which extracts anew: "
        "either load amount as bigint, or relax the rule with the line `raw_validated = false` under "
        f"[rules] in {cfg} (every load then logs a warning)\n"
    )
    assert events(cfg) == [(1, 10)]

    batches.pop(0)  # fixed at the source
    assert dg.materialize([assets], resources=resources, instance=instance).success
    assert pending(pipeline) == []
    assert events(cfg) == [(1, 10), (3, 30)]


def test_raw_append_only_says_which_argument_or_resource_asked_for_what(tmp_path):
    cfg = write_config(tmp_path, LAKE)
    dest = srdp_dlt.destination("lake", config=cfg)
    tail = (
        "and raw takes 'append' only. Either load with write_disposition='append', or relax the rule "
        f"with the line `raw_append_only = false` under [rules] in {cfg} (every load then logs a warning)"
    )
    head = "srdp.ingest.dlt: rule raw_append_only refuses this load into lake.raw: "
    with pytest.raises(srdp_dlt.SrdpDltError) as argument:
        dest.load_arguments(write_disposition="replace")
    assert str(argument.value) == head + "run() is given write_disposition='replace', " + tail
    merge = {"disposition": "merge", "strategy": "upsert"}
    with pytest.raises(srdp_dlt.SrdpDltError) as argument_dict:
        dest.load_arguments(write_disposition=merge)
    assert str(argument_dict.value) == head + f"run() is given write_disposition={merge!r}, " + tail
    orders = dlt.resource([{"id": 1}], name="orders", write_disposition="merge", primary_key="id")
    with pytest.raises(srdp_dlt.SrdpDltError) as resource:
        dest.load_arguments([dlt.resource([{"id": 1}], name="events"), orders])
    assert str(resource.value) == head + "resource 'orders' has write_disposition 'merge', " + tail
    # The run argument decides over the resources' own hints.
    assert dest.load_arguments([orders], write_disposition="append") == {
        "write_disposition": "append", "schema_contract": {"data_type": "freeze"},
    }


def test_a_relaxed_raw_validated_lets_dlt_evolve_types_explicitly(tmp_path):
    # dlt keeps the contract of earlier loads in the table's schema, so a relaxed rule must say
    # evolve; a contract the caller gives still wins.
    cfg = write_config(tmp_path, LAKE + "\n[rules]\nraw_validated = false\n")
    dest = srdp_dlt.destination("lake", config=cfg)
    assert dest.load_arguments() == {"write_disposition": "append", "schema_contract": {"data_type": "evolve"}}
    assert dest.load_arguments(schema_contract={"data_type": "discard_row"}) == {
        "write_disposition": "append", "schema_contract": {"data_type": "discard_row"},
    }
    # The landing zone (a folder outside DuckLake) gets no contract, imposed or relaxed: only its
    # file format.
    landing = write_config(
        tmp_path / "landing",
        LAKE.replace("[catalogs.lake]\n", '[catalogs.lake]\nlanding_path = "landing"\npromote_into = "raw_landed"\n', 1)
        + '\n[catalogs.lake.schemas.raw_landed]\nwriter = "io_manager"\nlayer = "raw"\n\n[rules]\nraw_validated = false\n',
    )
    assert srdp_dlt.destination("lake", config=landing, layer="landing").load_arguments() == {"loader_file_format": "parquet"}
