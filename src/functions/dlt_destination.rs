//! `srdp_dlt_destination(catalog, layer :=, schema_name :=, project :=, writer :=)`: what dlt's
//! `ducklake` destination needs to attach the very lake srdp attaches, or, with
//! `layer := 'landing'`, what its `filesystem` destination needs to write the catalog's landing
//! zone (`landing_path`, a folder outside DuckLake that a promotion later appends to raw).
//!
//! Parameters: `catalog`; `layer :=` (default `raw`; `landing` for the landing zone);
//! `schema_name :=` (default: the tenant project's `<project>_<layer>` dataset, else the one
//! schema of that layer; not with `landing`); `project :=` (default: the catalog's `project`);
//! `writer :=` (default `dlt`); `config :=`.
//! Returns one row: `catalog`, `attach_name` (dlt's `ducklake_name`: the catalog name, so tables
//! are `<catalog>.<schema>.<table>` for dlt and srdp alike), `catalog_url` (dlt's `catalog`
//! credential, never with a password; NULL for the landing zone), `metadata_schema` (NULL for
//! DuckDB-file and SQLite catalogs, where dlt passes none, and for the landing zone; for
//! PostgreSQL the schema dlt must pass, since it would default to its own name), `storage_url`
//! (dlt's bucket URL: `file:///abs/path/` or the object-store URL of the data path, or of the
//! landing path for the landing zone), `dataset_name` (the schema; for the landing zone the
//! folder inside the landing path: `landing`, or the tenant project's `<project>_landing` /
//! `landing_dataset`), `layer`, `writer`, `owner` (`dlt` for the landing zone), `write_disposition`
//! (`append` for raw while `raw_append_only` is on, else NULL), `schema_contract`
//! (`{"data_type": "freeze"}` for raw while `raw_validated` is on, else NULL; the raw rules do not
//! apply in the landing zone, a quarantine), `data_inlining_row_limit BIGINT`, `warnings
//! VARCHAR[]` (one per relaxed rule, to log on every load; for the landing zone only the
//! single_writer warning of a writer other than dlt), `destination_type` (`ducklake` or
//! `filesystem`), `file_format` (`parquet` for the landing zone, else NULL), `layout`
//! (`{table_name}/{load_id}.{file_id}.{ext}` for the landing zone, else NULL), `promote_into`
//! (for the landing zone the dataset promoted loads go into: the catalog's `promote_into`
//! schema, or the tenant project's dataset of its layer such as `<project>_raw`; else NULL).
//! Errors: unknown catalog, layer, writer or project; a schema the writer may not write;
//! `layer := 'landing'` on a catalog without `landing_path`, or together with `schema_name :=`;
//! a writer other than dlt into the landing zone while `single_writer` is on.
//!
//! ```sql
//! SELECT catalog_url, storage_url, dataset_name FROM srdp_dlt_destination('lake');
//! SELECT storage_url, dataset_name, layout, promote_into
//! FROM srdp_dlt_destination('lake', layer := 'landing');
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
            Column::text("destination_type"),
            Column::text("file_format"),
            Column::text("layout"),
            Column::text("promote_into"),
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
            d.destination_type.into(),
            d.file_format.into(),
            d.layout.into(),
            d.promote_into.into(),
        ]])
    }

    fn run(rows: &Self::Bound, _shared: &Shared) -> Result<Vec<Vec<Cell>>> {
        Ok(rows.clone())
    }
}
