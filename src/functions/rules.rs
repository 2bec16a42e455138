//! `srdp_rules(catalog)`: the safety rules, whether each is on, and who relaxed it.
//!
//! Parameters: `catalog` (must be defined; the rules are the file's), `config :=`.
//! Returns one row per rule (`raw_append_only`, `raw_validated`, `single_writer`): `rule`,
//! `enabled BOOLEAN`, `relaxed BOOLEAN`, `source` (`default`, or `<file>:<line>` of the line that
//! sets it), `why`, `cost_if_relaxed`, `relax_with` (the line that relaxes it and the file it
//! goes in: the text every refusal of the rule ends with).
//! Errors: unknown catalog, no or an invalid `srdp.toml`.
//!
//! ```sql
//! SELECT rule, relaxed, source FROM srdp_rules('lake');
//! ```

use super::{Args, Cell, Column, Shared, SrdpFunction};
use crate::error::Result;
use crate::rules;

pub struct Rules;

impl SrdpFunction for Rules {
    type Bound = Vec<Vec<Cell>>;
    const NAME: &'static str = "srdp_rules";

    fn positional() -> &'static [&'static str] {
        &["catalog"]
    }

    fn columns() -> Vec<Column> {
        vec![
            Column::text("rule"),
            Column::boolean("enabled"),
            Column::boolean("relaxed"),
            Column::text("source"),
            Column::text("why"),
            Column::text("cost_if_relaxed"),
            Column::text("relax_with"),
        ]
    }

    fn bind(args: &Args) -> Result<Self::Bound> {
        let catalog = args.required_text(0)?;
        let config = args.config()?;
        config.catalog(&catalog)?;
        Ok(rules::states(&config)
            .into_iter()
            .map(|s| {
                vec![
                    s.info.name.into(),
                    s.enabled.into(),
                    (!s.enabled).into(),
                    s.source.into(),
                    s.info.why.into(),
                    s.info.cost_if_relaxed.into(),
                    format!(
                        "{} in {}",
                        rules::relax_line(s.info.name),
                        config.path.display()
                    )
                    .into(),
                ]
            })
            .collect())
    }

    fn run(rows: &Self::Bound, _shared: &Shared) -> Result<Vec<Vec<Cell>>> {
        Ok(rows.clone())
    }
}
