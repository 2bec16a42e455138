//! `srdp_catalogs()`: lists the catalog definitions, secrets redacted.
//!
//! Parameters: `config := 'path'` (optional).
//! Returns one row per catalog, in name order: `catalog`, `backend` (`duckdb`, `sqlite`,
//! `postgres`), `metadata` (absolute path or connection text, never a password),
//! `metadata_schema`, `data_path`, `data_inlining_row_limit BIGINT`,
//! `pressure_warning_rows BIGINT`, `attached BOOLEAN` (srdp attached it in this database and it
//! is still attached), `read_only BOOLEAN` (NULL when not attached), `landing_path` (the
//! landing zone, in the same form as `data_path`: an absolute local path ending in `/` or an
//! object-store URL; NULL when none), `promote_into` (the schema loads promoted from the landing
//! zone go into; NULL without a landing zone).
//! Errors: no or an invalid `srdp.toml`.
//!
//! ```sql
//! SELECT catalog, backend, attached FROM srdp_catalogs();
//! ```

use super::{Args, Cell, Column, Shared, SrdpFunction};
use crate::config::Config;
use crate::error::Result;
use std::sync::Arc;

pub struct Catalogs;

impl SrdpFunction for Catalogs {
    type Bound = Arc<Config>;
    const NAME: &'static str = "srdp_catalogs";

    fn columns() -> Vec<Column> {
        vec![
            Column::text("catalog"),
            Column::text("backend"),
            Column::text("metadata"),
            Column::text("metadata_schema"),
            Column::text("data_path"),
            Column::bigint("data_inlining_row_limit"),
            Column::bigint("pressure_warning_rows"),
            Column::boolean("attached"),
            Column::boolean("read_only"),
            Column::text("landing_path"),
            Column::text("promote_into"),
        ]
    }

    fn bind(args: &Args) -> Result<Self::Bound> {
        args.config()
    }

    fn run(config: &Self::Bound, shared: &Shared) -> Result<Vec<Vec<Cell>>> {
        let attachments = shared.runner.attachments()?;
        Ok(config
            .catalogs
            .values()
            .map(|def| {
                let mine: Vec<_> = attachments
                    .iter()
                    .filter(|a| a.catalog == def.name)
                    .collect();
                let read_only = (!mine.is_empty()).then(|| mine.iter().all(|a| a.read_only()));
                vec![
                    def.name.clone().into(),
                    def.backend.name().into(),
                    def.backend.display().into(),
                    def.metadata_schema.clone().into(),
                    def.data_path.clone().into(),
                    def.tunables.data_inlining_row_limit.into(),
                    def.tunables.pressure_warning_rows.into(),
                    (!mine.is_empty()).into(),
                    read_only.into(),
                    def.landing_path.clone().into(),
                    def.promote_into.clone().into(),
                ]
            })
            .collect())
    }
}
