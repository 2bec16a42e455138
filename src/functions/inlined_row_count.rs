//! `srdp_inlined_row_count(catalog, schema_name :=, table_name :=)`: inlined rows per dataset.
//!
//! Counts, per dataset, the physical inlined insertion records across every schema version
//! (live, deleted and superseded rows included; inline deletion markers excluded), read from
//! DuckLake 1.0's `ducklake_inlined_data_tables` registry in the catalog's metadata, whatever
//! its metadata schema and backend. These are the rows the next flush writes out.
//! Parameters: `catalog` (attached through `srdp_attach_catalog`, any role), `schema_name :=`,
//! `table_name :=` (a table name alone matches that table in every schema), `config :=`.
//! Returns one row per selected dataset, zeros included, in (schema, table) order:
//! `catalog, schema_name, table_name, inlined_rows BIGINT, inlined_tables BIGINT`.
//! Errors: unknown catalog, schema or dataset (lists what exists), catalog not attached.
//!
//! ```sql
//! SELECT * FROM srdp_inlined_row_count('lake', schema_name := 'raw');
//! ```

use super::selection::Selection;
use super::{Args, Cell, Column, Shared, SrdpFunction};
use crate::error::Result;
use duckdb::core::LogicalTypeHandle;

pub struct InlinedRowCount;

impl SrdpFunction for InlinedRowCount {
    type Bound = Selection;
    const NAME: &'static str = "srdp_inlined_row_count";

    fn positional() -> &'static [&'static str] {
        &["catalog"]
    }

    fn named() -> Vec<(&'static str, LogicalTypeHandle)> {
        Selection::named()
    }

    fn columns() -> Vec<Column> {
        vec![
            Column::text("catalog"),
            Column::text("schema_name"),
            Column::text("table_name"),
            Column::bigint("inlined_rows"),
            Column::bigint("inlined_tables"),
        ]
    }

    fn bind(args: &Args) -> Result<Self::Bound> {
        Selection::bind(args)
    }

    fn run(sel: &Self::Bound, shared: &Shared) -> Result<Vec<Vec<Cell>>> {
        shared.runner.with_lake(&sel.catalog, None, |lake| {
            let datasets = lake.select(sel.schema.as_deref(), sel.table.as_deref())?;
            let inlined = lake.inlined(&datasets)?;
            Ok(datasets
                .iter()
                .map(|d| {
                    let n = inlined.get(&d.table_id).copied().unwrap_or_default();
                    vec![
                        sel.catalog.clone().into(),
                        d.schema.clone().into(),
                        d.table.clone().into(),
                        n.rows.into(),
                        n.tables.into(),
                    ]
                })
                .collect())
        })
    }
}
