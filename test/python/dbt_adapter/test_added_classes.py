"""dbt-tests-adapter classes dbt-duckdb 1.11.1's own folder does not run, added to the suite:
the table materialization, merge with excluded columns, and dbt's simple_seed classes of
test_seed.py (seed_bom.csv next to this file is dbt-tests-adapter 1.20.0's, Apache-2.0, which
BaseSimpleSeedWithBOM copies from the test's folder). test_seed_type_override's class is left
out: it asserts PostgreSQL type names (``timestamp without time zone``, ``text``)."""

from dbt.tests.adapter.basic.test_table_materialization import BaseTableMaterialization
from dbt.tests.adapter.incremental.test_incremental_merge_exclude_columns import BaseMergeExcludeColumns
from dbt.tests.adapter.simple_seed.test_seed import (
    BaseBasicSeedTests,
    BaseSeedConfigFullRefreshOff,
    BaseSeedConfigFullRefreshOn,
    BaseSeedCustomSchema,
    BaseSeedParsing,
    BaseSeedSpecificFormats,
    BaseSeedWithEmptyDelimiter,
    BaseSeedWithWrongDelimiter,
    BaseSimpleSeedEnabledViaConfig,
    BaseSimpleSeedWithBOM,
    BaseTestEmptySeed,
)


class TestTableMaterializationDuckDB(BaseTableMaterialization):
    pass


class TestMergeExcludeColumnsDuckDB(BaseMergeExcludeColumns):
    pass


class TestBasicSeedTestsDuckDB(BaseBasicSeedTests):
    pass


class TestSeedConfigFullRefreshOnDuckDB(BaseSeedConfigFullRefreshOn):
    pass


class TestSeedConfigFullRefreshOffDuckDB(BaseSeedConfigFullRefreshOff):
    pass


class TestSeedCustomSchemaDuckDB(BaseSeedCustomSchema):
    pass


class TestSeedWithWrongDelimiterDuckDB(BaseSeedWithWrongDelimiter):
    pass


class TestSeedWithEmptyDelimiterDuckDB(BaseSeedWithEmptyDelimiter):
    pass


class TestSimpleSeedEnabledViaConfigDuckDB(BaseSimpleSeedEnabledViaConfig):
    pass


class TestSeedParsingDuckDB(BaseSeedParsing):
    pass


class TestSimpleSeedWithBOMDuckDB(BaseSimpleSeedWithBOM):
    pass


class TestSeedSpecificFormatsDuckDB(BaseSeedSpecificFormats):
    pass


class TestEmptySeedDuckDB(BaseTestEmptySeed):
    pass
