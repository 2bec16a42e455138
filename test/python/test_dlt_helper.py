"""srdp.ingest.dlt with real dlt 1.31 and dagster-dlt: loads into DuckLake exactly as srdp.toml says.

Every load goes through the helper (the ducklake destination, dataset and rules come from
srdp.toml via the srdp SQL functions); readers are separate processes attached with
srdp_attach_catalog, so they see the lake through the same definition, not through dlt.
"""

from __future__ import annotations

import os

os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"  # offline platform: dlt must not phone home

import hashlib  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import dagster as dg  # noqa: E402
import dlt  # noqa: E402
import duckdb  # noqa: E402
import pytest  # noqa: E402
from dagster_dlt import DagsterDltResource, DagsterDltTranslator, build_dlt_asset_specs  # noqa: E402
from dlt.pipeline.exceptions import PipelineStepFailed  # noqa: E402

import srdp  # noqa: E402
import srdp.ingest.dlt as srdp_dlt  # noqa: E402
from srdp.dagster import srdp_dlt_assets  # noqa: E402
from conftest import REPO, run_python, write_config  # noqa: E402
from lakecheck import Lake, parquet_files  # noqa: E402

LAKE = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"

[catalogs.lake.schemas.raw]
writer = "dlt"
layer = "raw"

[catalogs.lake.schemas.curated]
writer = "dbt"
layer = "curated"
"""

READ_BACK = """
import json, srdp
con = srdp.connect(config={cfg!r})
attached = con.sql("SELECT role, read_only FROM srdp_attach_catalog({catalog!r})").fetchone()
count, checksum = con.sql(
    "SELECT count(*), md5(string_agg(id || '|' || name, chr(10) ORDER BY id)) FROM {table}"
).fetchone()
print(json.dumps({{"attached": attached, "count": count, "checksum": checksum}}))
"""


def rows(start: int, n: int) -> list[dict]:
    return [{"id": i, "name": f"event-{i}", "amount": i * 3} for i in range(start, start + n)]


def checksum(items: list[dict]) -> str:
    """What READ_BACK computes in SQL, computed here from the rows handed to dlt."""
    text = "\n".join(f"{r['id']}|{r['name']}" for r in sorted(items, key=lambda r: r["id"]))
    return hashlib.md5(text.encode()).hexdigest()


def read_back(cfg: Path, table: str, catalog: str = "lake") -> dict:
    """count + checksum of ``table`` as a reader in another process sees it."""
    return json.loads(run_python(READ_BACK.format(cfg=str(cfg), catalog=catalog, table=table)))


def query(cfg: Path, sql: str, catalog: str = "lake") -> list[tuple]:
    """A short-lived reader in this process (attach, query, close)."""
    con = srdp.connect(config=cfg)
    try:
        con.execute(f"SELECT * FROM srdp_attach_catalog('{catalog}')")
        return con.sql(sql).fetchall()
    finally:
        con.close()


def lake_state(cfg: Path, catalog: str = "lake") -> dict[tuple[str, str], tuple[int, int]]:
    """Per live dataset: (live data files, inlined rows), counted from the metadata tables.

    Also checks that the Parquet files on disk are exactly the ones the metadata registers.
    """
    con = srdp.connect(config=cfg)
    try:
        con.execute(f"SELECT * FROM srdp_attach_catalog('{catalog}')")
        lake = Lake(con, catalog)
        assert parquet_files(Path(lake.data_path())) == lake.registered_files()
        return lake.state()
    finally:
        con.close()


def snapshot(cfg: Path) -> int:
    return query(cfg, "SELECT max(snapshot_id) FROM lake.snapshots()")[0][0]


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "srdp.ingest.dlt" and r.levelno == logging.WARNING]


@pytest.fixture
def lake(tmp_path):
    """srdp.toml with catalog ``lake`` (raw owned by dlt, curated by dbt) and every rule on."""
    return write_config(tmp_path, LAKE)


def test_a_pipeline_from_the_helper_loads_raw_and_another_process_reads_the_same_rows(lake, tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="srdp.ingest.dlt")
    dest = srdp_dlt.destination("lake", config=lake)
    assert (dest.catalog, dest.attach_name, dest.dataset_name, dest.layer, dest.owner) == ("lake", "lake", "raw", "raw", "dlt")
    assert dest.catalog_url == f"sqlite:///{tmp_path}/catalog/lake.sqlite"
    assert dest.storage_url.rstrip("/") == f"file://{tmp_path}/data/lake"
    assert dest.write_disposition == "append" and dest.schema_contract == {"data_type": "freeze"}
    assert dest.warnings == () and dest.config_path == str(lake)
    assert dest.table_name("events") == "lake.raw.events"

    # Nothing about the lake is configured here but the catalog name: no .dlt/ files, no env.
    pipeline = srdp_dlt.pipeline("events", "lake", config=lake, pipelines_dir=str(tmp_path / "pipelines"))
    assert pipeline.dataset_name == "raw"
    loaded = rows(0, 25)
    info = srdp_dlt.run(pipeline, dlt.resource(loaded, name="events"))
    assert not info.has_failed_jobs

    seen = read_back(lake, "lake.raw.events")
    assert seen == {"attached": ["reader", True], "count": 25, "checksum": checksum(loaded)}
    # dlt's attach used srdp's inlining limit (1000), not DuckLake's default (10): the 25 rows are
    # inlined, no Parquet file was written (counted from the metadata and the disk).
    dlt_tables = {("raw", "_dlt_loads"): (0, 1), ("raw", "_dlt_pipeline_state"): (0, 1), ("raw", "_dlt_version"): (0, 1)}
    assert lake_state(lake) == {**dlt_tables, ("raw", "events"): (0, 25)}
    # A second append lands in the same table; the reader process sees exactly both batches.
    more = rows(25, 10)
    srdp_dlt.run(pipeline, dlt.resource(more, name="events"))
    assert read_back(lake, "lake.raw.events") == {"attached": ["reader", True], "count": 35, "checksum": checksum(loaded + more)}
    assert lake_state(lake) == {**dlt_tables, ("raw", "_dlt_loads"): (0, 2), ("raw", "events"): (0, 35)}
    assert warnings_of(caplog) == []  # every rule is on: nothing to warn about


def test_rules_refuse_replace_and_type_changes_accept_new_columns_and_keep_dlt_out_of_curated(lake, tmp_path):
    dest = srdp_dlt.destination("lake", config=lake)
    pipeline = dest.pipeline("rules", pipelines_dir=str(tmp_path / "pipelines"))
    dest.run(pipeline, dlt.resource(rows(0, 5), name="events"))
    before = snapshot(lake)

    # raw_append_only: a replace load (the resource's own hint or the run argument) and a merge
    # load are refused before dlt starts; the lake has the same snapshot afterwards.
    replace = dlt.resource(rows(100, 3), name="events", write_disposition="replace")
    with pytest.raises(srdp_dlt.SrdpDltError) as refused:
        dest.run(pipeline, replace)
    message = str(refused.value)
    assert "raw_append_only" in message and "resource 'events' has write_disposition 'replace'" in message
    assert "`raw_append_only = false` under [rules]" in message and str(lake) in message
    with pytest.raises(srdp_dlt.SrdpDltError, match="run\\(\\) is given write_disposition='replace', and raw takes 'append' only"):
        dest.run(pipeline, dlt.resource(rows(100, 3), name="events"), write_disposition="replace")
    merge = dlt.resource(rows(100, 3), name="events", write_disposition="merge", primary_key="id")
    with pytest.raises(srdp_dlt.SrdpDltError, match="write_disposition 'merge'"):
        dest.run(pipeline, merge)
    assert snapshot(lake) == before

    # raw_validated: a new type for an existing column fails the load (data_type frozen) ...
    with pytest.raises(srdp_dlt.SrdpDltValidationError) as failed:
        dest.run(pipeline, dlt.resource([{"id": 200, "name": "x", "amount": "ten"}], name="events"))
    dlt_error = failed.value.__cause__  # dlt's own PipelineStepFailed (test_dlt_rule_messages checks the text)
    assert isinstance(dlt_error, PipelineStepFailed) and "data_type" in str(dlt_error) and "amount__v_text" in str(dlt_error)
    assert snapshot(lake) == before
    pipeline.abort_packages()  # dlt would retry the failed package on the next run
    # ... while a new column is accepted.
    dest.run(pipeline, dlt.resource([{"id": 300, "name": "y", "amount": 9, "channel": "web"}], name="events"))
    assert query(lake, "SELECT count(*), count(channel) FROM lake.raw.events") == [(6, 1)]
    columns = query(lake, "SELECT column_name FROM duckdb_columns() WHERE database_name = 'lake' "
                          "AND schema_name = 'raw' AND table_name = 'events' ORDER BY column_index")
    assert [c for (c,) in columns] == ["id", "name", "amount", "_dlt_load_id", "_dlt_id", "channel"]  # no amount__v_text

    # single_writer: dlt may not write curated (owned by dbt); refused before any pipeline exists.
    after = snapshot(lake)
    for request in ({"layer": "curated"}, {"schema_name": "curated"}):
        with pytest.raises(duckdb.Error) as refused_sql:
            srdp_dlt.destination("lake", config=lake, **request)
        text = str(refused_sql.value)
        assert "srdp_dlt_destination: " in text and "'dlt' may not write schema 'curated'" in text
        assert "owned by 'dbt'" in text and "`single_writer = false` under [rules]" in text
    assert snapshot(lake) == after
    assert query(lake, "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'lake' AND schema_name = 'curated'") == [(0,)]


RELAXED = {
    "raw_append_only": "raw_append_only = false",
    "raw_validated": "raw_validated = false",
    "single_writer": "single_writer = false",
}

# What each relaxed rule's warning says after "srdp rule <rule> is relaxed by <file>:<line>: ".
CONSEQUENCE = {
    "raw_append_only": "the audit trail and rebuild from raw are lost for those tables; dropping a table also "
    "resets dlt's incremental state",
    "raw_validated": "a type mismatch silently adds a variant column (such as `amount__v_text`) instead of failing",
    "single_writer": "writer 'dlt' writes schema 'curated' owned by 'dbt'",
}


def relaxed_warning(rule: str, cfg: Path) -> str:
    line = cfg.read_text().splitlines().index(RELAXED[rule]) + 1
    return f"srdp rule {rule} is relaxed by {cfg}:{line}: {CONSEQUENCE[rule]}"


@pytest.mark.parametrize("rule", RELAXED)
def test_a_relaxed_rule_lets_the_same_load_pass_and_warns_on_every_load(tmp_path, caplog, rule):
    cfg = write_config(tmp_path, LAKE + f"\n[rules]\n{RELAXED[rule]}\n")
    caplog.set_level(logging.WARNING, logger="srdp.ingest.dlt")
    layer = "curated" if rule == "single_writer" else "raw"
    dest = srdp_dlt.destination("lake", config=cfg, layer=layer)
    pipeline = dest.pipeline(f"relaxed_{rule}", pipelines_dir=str(tmp_path / "pipelines"))
    loads = {
        "raw_append_only": [dlt.resource(rows(0, 4), name="events", write_disposition="replace"),
                            dlt.resource(rows(10, 3), name="events", write_disposition="replace")],
        "raw_validated": [dlt.resource(rows(0, 4), name="events"),
                          dlt.resource([{"id": 10, "name": "x", "amount": "ten"}], name="events")],
        "single_writer": [dlt.resource(rows(0, 4), name="events"), dlt.resource(rows(10, 3), name="events")],
    }[rule]
    for number, data in enumerate(loads, start=1):
        caplog.clear()
        assert not dest.run(pipeline, data).has_failed_jobs
        assert warnings_of(caplog) == [relaxed_warning(rule, cfg)], f"load {number}"

    seen = {
        "raw_append_only": "SELECT count(*), min(id) FROM lake.raw.events",  # replaced: the 3 last rows
        "raw_validated": "SELECT count(*), count(amount__v_text) FROM lake.raw.events",  # variant column
        "single_writer": "SELECT count(*), min(id) FROM lake.curated.events",
    }[rule]
    assert query(cfg, seen) == [{"raw_append_only": (3, 10), "raw_validated": (5, 1), "single_writer": (7, 0)}[rule]]


def test_two_relaxed_rules_log_two_warnings_on_each_load(tmp_path, caplog):
    cfg = write_config(tmp_path, LAKE + "\n[rules]\nraw_append_only = false\nraw_validated = false\n")
    caplog.set_level(logging.WARNING, logger="srdp.ingest.dlt")
    dest = srdp_dlt.destination("lake", config=cfg)
    assert dest.write_disposition is None and dest.schema_contract is None
    pipeline = dest.pipeline("two_relaxed", pipelines_dir=str(tmp_path / "pipelines"))
    for start in (0, 10):
        caplog.clear()
        assert not dest.run(pipeline, dlt.resource(rows(start, 2), name="events", write_disposition="replace")).has_failed_jobs
        assert warnings_of(caplog) == [relaxed_warning("raw_append_only", cfg), relaxed_warning("raw_validated", cfg)]
    # The replace loads went through: only the second batch is there.
    seen = read_back(cfg, "lake.raw.events")
    assert (seen["count"], seen["checksum"]) == (2, checksum(rows(10, 2)))


@dlt.source
def shop():
    @dlt.resource
    def orders():
        yield [{"id": i, "amount": i * 10} for i in range(7)]

    @dlt.resource(table_name="Customers")
    def customers():
        yield [{"id": i} for i in range(3)]

    @dlt.transformer(data_from=customers)
    def customer_details(items):
        yield [{"customer_id": c["id"], "tier": "gold"} for c in items]

    return orders, customers, customer_details


def test_dagster_assets_name_the_physical_table_drop_the_phantom_dependency_and_warn(tmp_path):
    cfg = write_config(tmp_path, LAKE + "\n[rules]\nraw_append_only = false\n")
    dest = srdp_dlt.destination("lake", config=cfg)
    pipeline = dest.pipeline("shop", pipelines_dir=str(tmp_path / "pipelines"))
    assets = srdp_dlt_assets(dlt_source=shop(), destination=dest, dlt_pipeline=pipeline, name="shop")

    plain = {s.key: s for s in build_dlt_asset_specs(shop(), pipeline, DagsterDltTranslator())}
    specs = {s.key: s for s in assets.specs}
    tables = {"orders": "lake.raw.orders", "customers": "lake.raw.customers", "customer_details": "lake.raw.customer_details"}
    # dagster-dlt alone: the bare resource table name, and a dependency on an asset nobody defines
    # (a transformer gets its parent's synthetic key).
    phantom = {"orders": "shop_orders", "customers": "shop_customers", "customer_details": "shop_customers"}
    bare = {"orders": "orders", "customers": "Customers", "customer_details": "customer_details"}
    # srdp's keys are the physical name's parts (lake/raw/orders), dagster-dlt's dlt_<source>_<resource>.
    assert set(plain) == {dg.AssetKey(f"dlt_shop_{r}") for r in tables}
    assert set(specs) == {dg.AssetKey(t.split(".")) for t in tables.values()}
    for resource, table in tables.items():
        key, plain_key = dg.AssetKey(table.split(".")), dg.AssetKey(f"dlt_shop_{resource}")
        assert plain[plain_key].metadata["dagster/table_name"] == bare[resource]
        assert [d.asset_key for d in plain[plain_key].deps] == [dg.AssetKey(phantom[resource])]
        assert specs[key].metadata["dagster/table_name"] == table == dest.table_name(resource)
        assert list(specs[key].deps) == []
    dg.Definitions(assets=[assets], resources={"dlt": DagsterDltResource()}).resolve_all_job_defs()

    # Two materializations in one process (the in-process executor reuses the DltSource object);
    # each reports the physical tables and logs the relaxed rule once.
    instance = dg.DagsterInstance.ephemeral()
    for _ in range(2):
        result = dg.materialize([assets], resources={"dlt": DagsterDltResource()}, instance=instance)
        assert result.success
        materialized = {e.asset_key: e.materialization.metadata["dagster/table_name"].value for e in result.get_asset_materialization_events()}
        assert materialized == {dg.AssetKey(t.split(".")): t for t in tables.values()}
        logged = [e for e in instance.all_logs(result.run_id) if e.level == logging.WARNING and "srdp rule" in e.user_message]
        assert len(logged) == 1 and "raw_append_only" in logged[0].user_message
    # Every table of the source, twice (append); the transformer's rows next to their parent's.
    counts = query(cfg, "SELECT (SELECT count(*) FROM lake.raw.orders), (SELECT count(*) FROM lake.raw.customers), "
                        "(SELECT count(*) FROM lake.raw.customer_details), "
                        "(SELECT count(*) FROM lake.raw.customer_details WHERE tier = 'gold')")
    assert counts == [(14, 6, 6, 6)]
    assert lake_state(cfg) == {
        ("raw", "_dlt_loads"): (0, 2), ("raw", "_dlt_pipeline_state"): (0, 1), ("raw", "_dlt_version"): (0, 1),
        ("raw", "customer_details"): (0, 6), ("raw", "customers"): (0, 6), ("raw", "orders"): (0, 14),
    }

    # With the rule on, a replace resource makes the asset fail before anything is loaded.
    strict = write_config(tmp_path / "strict", LAKE)
    strict_dest = srdp_dlt.destination("lake", config=strict)

    @dlt.source
    def snapshots():
        return dlt.resource([{"id": 1}], name="prices", write_disposition="replace")

    refused = srdp_dlt_assets(
        dlt_source=snapshots(), destination=strict_dest,
        dlt_pipeline=strict_dest.pipeline("prices", pipelines_dir=str(tmp_path / "pipelines")),
    )
    result = dg.materialize([refused], resources={"dlt": DagsterDltResource()}, raise_on_error=False)
    assert not result.success
    cause = result.get_step_failure_events()[0].event_specific_data.error.cause
    assert cause.cls_name == "SrdpDltError" and "rule raw_append_only refuses" in cause.message
    assert not (tmp_path / "strict" / "catalog").exists()  # refused before the lake was even created


def test_dagster_definitions_validate_passes_for_the_example(tmp_path):
    example = REPO / "examples" / "dagster_dlt_definitions.py"
    env = {
        **os.environ,
        "DAGSTER_HOME": str(tmp_path),
        "DLT_DATA_DIR": str(tmp_path / "dlt"),
        "RUNTIME__DLTHUB_TELEMETRY": "false",
    }
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    done = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate", "-f", str(example)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "All code locations passed validation" in done.stdout + done.stderr


TENANT = """
[catalogs.tenant]
metadata = "sqlite:catalog/tenant.sqlite"
data_path = "data/tenant"
project = "acme"

[catalogs.tenant.projects.beta]

[catalogs.tenant.projects.gamma]
raw_dataset = "gamma_ingest"

[catalogs.tenant.schemas.raw]
writer = "dlt"
layer = "raw"
"""


def test_two_projects_on_one_tenant_catalog_load_datasets_that_do_not_collide(tmp_path):
    cfg = write_config(tmp_path, TENANT)
    acme = srdp_dlt.destination("tenant", config=cfg)
    beta = srdp_dlt.destination("tenant", config=cfg, project="beta")
    assert (acme.dataset_name, beta.dataset_name) == ("acme_raw", "beta_raw")
    assert srdp_dlt.destination("tenant", config=cfg, project="gamma").dataset_name == "gamma_ingest"
    assert beta.table_name("events") == "tenant.beta_raw.events"

    batches = {"acme": rows(0, 6), "beta": rows(1000, 4)}
    for project, dest in (("acme", acme), ("beta", beta)):
        # The same pipeline and table name in both projects: only the dataset differs.
        dest.run(dest.pipeline(f"events_{project}", pipelines_dir=str(tmp_path / project)), dlt.resource(batches[project], name="events"))
    for project in batches:
        seen = read_back(cfg, f"tenant.{project}_raw.events", catalog="tenant")
        assert (seen["count"], seen["checksum"]) == (len(batches[project]), checksum(batches[project]))
    schemas = query(cfg, "SELECT DISTINCT schema_name FROM duckdb_tables() WHERE database_name = 'tenant' ORDER BY 1", catalog="tenant")
    assert schemas == [("acme_raw",), ("beta_raw",)]


def test_errors_name_what_is_wrong_and_what_to_do(lake, tmp_path, monkeypatch):
    for kwargs, expected in [
        ({"writer": "airbyte"}, "unknown writer 'airbyte' in catalog 'lake'"),
        ({"layer": "bronze"}, "unknown layer 'bronze' in catalog 'lake'"),
        ({"project": "nope"}, "unknown project 'nope' in catalog 'lake'"),
    ]:
        with pytest.raises(duckdb.Error) as refused:
            srdp_dlt.destination("lake", config=lake, **kwargs)
        assert "srdp_dlt_destination: " in str(refused.value) and expected in str(refused.value)
        assert str(lake) in str(refused.value)
    with pytest.raises(duckdb.Error, match="srdp_dlt_destination: .*unknown catalog 'lakee'"):
        srdp_dlt.destination("lakee", config=lake)

    # dlt's filesystem destination pointed into the data path, given directly or through dlt's
    # config, or one level up with the dataset folder landing in it: refused, naming the catalog,
    # its data path and the ducklake destination to use instead.
    data_path = tmp_path / "data" / "lake"
    for target in (
        dlt.destinations.filesystem(bucket_url=str(data_path)),
        dlt.destinations.filesystem(bucket_url=f"file://{data_path}/raw"),
    ):
        with pytest.raises(srdp_dlt.SrdpDltError) as refused_fs:
            srdp_dlt.check_not_filesystem(target, config=lake)
        text = str(refused_fs.value)
        assert "catalog 'lake'" in text and f"data path {data_path}/" in text
        assert "ducklake destination from the helper" in text and "srdp.ingest.dlt.destination('lake'" in text
    monkeypatch.setenv("DESTINATION__FILESYSTEM__BUCKET_URL", f"file://{data_path}")
    with pytest.raises(srdp_dlt.SrdpDltError, match="overlaps the DuckLake data path"):
        srdp_dlt.check_not_filesystem(dlt.destinations.filesystem(), config=lake)
    monkeypatch.delenv("DESTINATION__FILESYSTEM__BUCKET_URL")
    up_one = dlt.pipeline("fs", destination=dlt.destinations.filesystem(bucket_url=str(tmp_path / "data")),
                          dataset_name="lake", pipelines_dir=str(tmp_path / "pipelines"))
    dest = srdp_dlt.destination("lake", config=lake)
    with pytest.raises(srdp_dlt.SrdpDltError, match="would write .*/data/lake \\(bucket_url"):
        dest.run(up_one, dlt.resource(rows(0, 2), name="events"))
    assert not data_path.exists()  # nothing was written, not even the lake's folder
    # Elsewhere it is an ordinary filesystem destination ...
    srdp_dlt.check_not_filesystem(dlt.destinations.filesystem(bucket_url=str(tmp_path / "exports")), config=lake)
    # ... but still not a way to load this catalog.
    elsewhere = dlt.pipeline("fs2", destination=dlt.destinations.filesystem(bucket_url=str(tmp_path / "exports")),
                             dataset_name="raw", pipelines_dir=str(tmp_path / "pipelines"))
    with pytest.raises(srdp_dlt.SrdpDltError, match="does not load into lake.raw"):
        dest.run(elsewhere, dlt.resource(rows(0, 2), name="events"))

    # The helper decides destination and dataset; a pipeline it did not build needs destination=.
    with pytest.raises(srdp_dlt.SrdpDltError, match="takes no dataset_name="):
        dest.pipeline("p", dataset_name="other")
    with pytest.raises(srdp_dlt.SrdpDltError, match="was not built by srdp.ingest.dlt"):
        srdp_dlt.run(elsewhere, [])
    with pytest.raises(srdp_dlt.SrdpDltError, match="raw_validated.*sets data_type to 'evolve'"):
        dest.load_arguments(schema_contract="evolve")
    assert dest.load_arguments(schema_contract={"columns": "freeze"}) == {
        "write_disposition": "append", "schema_contract": {"columns": "freeze", "data_type": "freeze"},
    }

    # srdp's own checks surface with srdp's message through SQL as well.
    con = srdp.connect(config=lake)
    try:
        with pytest.raises(duckdb.Error) as refused_sql:
            con.execute("SELECT * FROM srdp_check_writer('lake', 'curated', 'dlt')")
        assert "srdp_check_writer: " in str(refused_sql.value) and "owned by 'dbt'" in str(refused_sql.value)
        row = con.execute("SELECT owner, layer, allowed, warning FROM srdp_check_writer('lake', 'raw', 'dlt')").fetchone()
        assert row == ("dlt", "raw", True, None)
    finally:
        con.close()
