# Ported from dagster-duckdb 0.29.27 (the sdist on PyPI), dagster_duckdb_tests/test_resource.py.
# Copyright Dagster Labs, Inc.; licensed under the Apache License, Version 2.0.
# srdp changed only the construction: SrdpResource(config_path=...) for
# DuckDBResource(database=...), and its connect(["lake"]) (the lake attached, then USE lake)
# for get_connection(). Every behavioural assertion is kept.
from contextlib import closing, contextmanager

from srdp_construction import lake_config
import pandas as pd
import pytest
from dagster import asset, job, materialize, op

from srdp.dagster import SrdpResource as DuckDBResource


@contextmanager
def get_connection(resource: DuckDBResource):
    with closing(resource.connect(["lake"])) as conn:
        conn.execute("USE lake")
        yield conn


def test_resource(tmp_path):
    sample_df = pd.DataFrame({"a": [1, 2, 3], "b": [5, 6, 7]})

    @asset
    def create_table(duckdb: DuckDBResource):
        my_df = sample_df  # noqa: F841
        with get_connection(duckdb) as conn:
            conn.execute("CREATE TABLE my_table AS SELECT * FROM my_df")

    @asset
    def read_table(duckdb: DuckDBResource):
        with get_connection(duckdb) as conn:
            res = conn.execute("SELECT * FROM my_table").fetchdf()

            assert res.equals(sample_df)

    assert materialize(
        [create_table, read_table],
        resources={"duckdb": DuckDBResource(config_path=lake_config(tmp_path))},
    ).success


@pytest.mark.parametrize(
    "connection_config",
    [{"arrow_large_buffer_size": False}, {"arrow_large_buffer_size": True}],
)
def test_config(tmp_path, connection_config):
    @op(required_resource_keys={"duckdb"})
    def check_config_op(context):
        with get_connection(context.resources.duckdb) as conn:
            for name, value in connection_config.items():
                res = conn.execute(f"SELECT current_setting('{name}')").fetchone()

                assert res[0] == value

    @job(
        resource_defs={
            "duckdb": DuckDBResource(
                config_path=lake_config(tmp_path),
                connection_config=connection_config,
            )
        }
    )
    def check_config_job():
        check_config_op()

    assert check_config_job.execute_in_process().success
