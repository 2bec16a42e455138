//! The arguments every maintenance function shares: `catalog`, `schema_name :=`, `table_name :=`.

use super::Args;
use crate::config::CatalogDef;
use crate::error::Result;
use duckdb::core::{LogicalTypeHandle, LogicalTypeId};

/// Which datasets of which catalog a call touches.
#[derive(Debug, Clone)]
pub struct Selection {
    pub catalog: String,
    pub schema: Option<String>,
    pub table: Option<String>,
    /// The catalog's definition, as read in bind.
    pub def: CatalogDef,
}

impl Selection {
    /// Named parameters of a dataset selection.
    pub fn named() -> Vec<(&'static str, LogicalTypeHandle)> {
        vec![
            (
                "schema_name",
                LogicalTypeHandle::from(LogicalTypeId::Varchar),
            ),
            (
                "table_name",
                LogicalTypeHandle::from(LogicalTypeId::Varchar),
            ),
        ]
    }

    /// Reads the selection and checks the catalog is defined.
    pub fn bind(args: &Args) -> Result<Self> {
        let catalog = args.required_text(0)?;
        let config = args.config()?;
        let def = config.catalog(&catalog)?.clone();
        Ok(Selection {
            catalog,
            schema: args.text("schema_name")?,
            table: args.text("table_name")?,
            def,
        })
    }
}
