//! `srdp_check_writer(catalog, schema_name, writer)`: may this writer write this schema?
//!
//! Parameters: `catalog`, `schema_name` (a schema of the definition, or a tenant project's
//! `<project>_<layer>` dataset), `writer` (a writer the definition names), `config :=`.
//! Returns one row when allowed: `catalog, schema_name, writer, owner, layer, allowed BOOLEAN`
//! (always true) and `warning` (NULL, or the text to log when the write is allowed only because
//! `single_writer` is relaxed).
//! Errors: unknown catalog or writer; with `single_writer` on, a schema owned by another writer
//! or by nobody (the message names the owner, the schemas the writer may write and the
//! `srdp.toml` line that would relax the rule).
//!
//! ```sql
//! SELECT allowed, warning FROM srdp_check_writer('lake', 'raw', 'dlt');
//! ```

use super::{Args, Cell, Column, Shared, SrdpFunction};
use crate::error::Result;
use crate::rules;

pub struct CheckWriter;

impl SrdpFunction for CheckWriter {
    type Bound = Vec<Vec<Cell>>;
    const NAME: &'static str = "srdp_check_writer";

    fn positional() -> &'static [&'static str] {
        &["catalog", "schema_name", "writer"]
    }

    fn columns() -> Vec<Column> {
        vec![
            Column::text("catalog"),
            Column::text("schema_name"),
            Column::text("writer"),
            Column::text("owner"),
            Column::text("layer"),
            Column::boolean("allowed"),
            Column::text("warning"),
        ]
    }

    fn bind(args: &Args) -> Result<Self::Bound> {
        let catalog = args.required_text(0)?;
        let schema = args.required_text(1)?;
        let writer = args.required_text(2)?;
        let config = args.config()?;
        let check = rules::check_writer(&config, &catalog, &schema, &writer)?;
        Ok(vec![vec![
            catalog.into(),
            schema.into(),
            writer.into(),
            check.owner.into(),
            check.layer.into(),
            true.into(),
            check.warning.into(),
        ]])
    }

    fn run(rows: &Self::Bound, _shared: &Shared) -> Result<Vec<Vec<Cell>>> {
        Ok(rows.clone())
    }
}
