//! `srdp_dlt_destination(catalog, layer :=, schema_name :=, project :=, writer :=)`: what dlt's
//! `ducklake` destination needs to attach the very lake srdp attaches.
//!
//! Parameters: `catalog`; `layer :=` (default `raw`); `schema_name :=` (default: the tenant
//! project's `<project>_<layer>` dataset, else the one schema of that layer); `project :=`
//! (default: the catalog's `project`); `writer :=` (default `dlt`); `config :=`.
//! Returns one row: `catalog`, `attach_name` (dlt's `ducklake_name`: the catalog name, so tables
//! are `<catalog>.<schema>.<table>` for dlt and srdp alike), `catalog_url` (dlt's `catalog`
//! credential, never with a password), `metadata_schema` (NULL for DuckDB-file and SQLite
//! catalogs, where dlt passes none; for PostgreSQL the schema dlt must pass, since it would
//! default to its own name), `storage_url`, `dataset_name`, `layer`, `writer`, `owner`,
//! `write_disposition` (`append` for raw while `raw_append_only` is on, else NULL),
//! `schema_contract` (`{"data_type": "freeze"}` for raw while `raw_validated` is on, else NULL),
//! `data_inlining_row_limit BIGINT`, `warnings VARCHAR[]` (one per relaxed rule, to log on every
//! load).
//! Errors: unknown catalog, layer, writer or project; a schema the writer may not write.
//!
//! ```sql
//! SELECT catalog_url, storage_url, dataset_name FROM srdp_dlt_destination('lake');
//! ```

use super::{Args, Cell, Column, Shared, SrdpFunction};
use crate::error::Result;
use crate::rules::{self, DltRequest};
use duckdb::core::{LogicalTypeHandle, LogicalTypeId};

pub struct DltDestination;

impl SrdpFunction for DltDestination {
    type Bound = Vec<Vec<Cell>>;
    const NAME: &'static str = "srdp_dlt_destination";

    fn positional() -> &'static [&'static str] {
        &["catalog"]
    }

    fn named() -> Vec<(&'static str, LogicalTypeHandle)> {
        ["layer", "schema_name", "project", "writer"]
            .into_iter()
            .map(|n| (n, LogicalTypeHandle::from(LogicalTypeId::Varchar)))
            .collect()
    }

    fn columns() -> Vec<Column> {
        vec![
            Column::text("catalog"),
            Column::text("attach_name"),
            Column::text("catalog_url"),
            Column::text("metadata_schema"),
            Column::text("storage_url"),
            Column::text("dataset_name"),
            Column::text("layer"),
            Column::text("writer"),
            Column::text("owner"),
            Column::text("write_disposition"),
            Column::text("schema_contract"),
            Column::bigint("data_inlining_row_limit"),
            Column::text_list("warnings"),
        ]
    }

    fn bind(args: &Args) -> Result<Self::Bound> {
        let catalog = args.required_text(0)?;
        let request = DltRequest {
            layer: args.text("layer")?,
            schema_name: args.text("schema_name")?,
            project: args.text("project")?,
            writer: args.text("writer")?,
        };
        let config = args.config()?;
        let d = rules::dlt_destination(&config, &catalog, &request)?;
        Ok(vec![vec![
            d.catalog.into(),
            d.attach_name.into(),
            d.catalog_url.into(),
            d.metadata_schema.into(),
            d.storage_url.into(),
            d.dataset_name.into(),
            d.layer.into(),
            d.writer.into(),
            d.owner.into(),
            d.write_disposition.into(),
            d.schema_contract.into(),
            d.data_inlining_row_limit.into(),
            d.warnings.into(),
        ]])
    }

    fn run(rows: &Self::Bound, _shared: &Shared) -> Result<Vec<Vec<Cell>>> {
        Ok(rows.clone())
    }
}
