# Ported from dbt-duckdb 1.11.1 (https://github.com/duckdb/dbt-duckdb), tests/functional/adapter/test_concurrency.py,
# Copyright the dbt-duckdb authors, Apache License 2.0 (see LICENSE-dbt-duckdb in this folder).
# Run by srdp against the documented srdp dbt set-up (conftest.py); the file is unchanged below.
from dbt.tests.adapter.concurrency.test_concurrency import TestConcurenncy


class TestConcurrencyDuckDB(TestConcurenncy):
    pass
