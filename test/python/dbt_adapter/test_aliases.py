# Ported from dbt-duckdb 1.11.1 (https://github.com/duckdb/dbt-duckdb), tests/functional/adapter/aliases/test_aliases.py,
# Copyright the dbt-duckdb authors, Apache License 2.0 (see LICENSE-dbt-duckdb in this folder).
# Run by srdp against the documented srdp dbt set-up (conftest.py); the file is unchanged below.
from dbt.tests.adapter.aliases.test_aliases import BaseAliases, BaseAliasErrors, BaseSameAliasDifferentSchemas

class TestAliasesDuckDB(BaseAliases):
    pass

class TestAliasesErrorDuckDB(BaseAliasErrors):
    pass

class BaseSameALiasDifferentSchemasDuckDB(BaseSameAliasDifferentSchemas):
    pass
