//! `srdp_table_name(catalog, schema_name, table_name)`: the fully qualified physical name that
//! lineage uses, `<catalog>.<schema>.<table>` (the catalog name is the ATTACH alias every
//! component uses, dlt included).
//!
//! Parameters: `catalog` (must be defined), `schema_name`, `table_name`, `config :=`.
//! Returns one row: `catalog, schema_name, table_name, qualified_name`.
//! Errors: unknown catalog; NULL or empty arguments.
//!
//! ```sql
//! SELECT qualified_name FROM srdp_table_name('lake', 'raw', 'events');  -- lake.raw.events
//! ```

use super::{Args, Cell, Column, Shared, SrdpFunction};
use crate::error::Result;
use crate::rules;

pub struct TableName;

impl SrdpFunction for TableName {
    type Bound = Vec<Vec<Cell>>;
    const NAME: &'static str = "srdp_table_name";

    fn positional() -> &'static [&'static str] {
        &["catalog", "schema_name", "table_name"]
    }

    fn columns() -> Vec<Column> {
        vec![
            Column::text("catalog"),
            Column::text("schema_name"),
            Column::text("table_name"),
            Column::text("qualified_name"),
        ]
    }

    fn bind(args: &Args) -> Result<Self::Bound> {
        let catalog = args.required_text(0)?;
        let schema = args.required_text(1)?;
        let table = args.required_text(2)?;
        args.config()?.catalog(&catalog)?;
        let qualified = rules::table_name(&catalog, &schema, &table);
        Ok(vec![vec![
            catalog.into(),
            schema.into(),
            table.into(),
            qualified.into(),
        ]])
    }

    fn run(rows: &Self::Bound, _shared: &Shared) -> Result<Vec<Vec<Cell>>> {
        Ok(rows.clone())
    }
}
