//! `srdp_catalog_pressure(catalog, threshold :=)`: datasets with too many inlined rows.
//!
//! Advisory only: one `DatasetCatalogPressure` row per dataset whose inlined rows (as
//! `srdp_inlined_row_count` counts them) exceed the threshold, on every call; nothing changes.
//! Parameters: `catalog` (attached through `srdp_attach_catalog`, any role), `threshold :=`
//! (BIGINT ≥ 0; default: the catalog's `pressure_warning_rows`, 100,000 unless defined),
//! `config :=`.
//! Returns: `event` (`DatasetCatalogPressure`), `catalog, schema_name, table_name,
//! inlined_rows BIGINT, threshold BIGINT, checked_at TIMESTAMPTZ`.
//! Errors: unknown catalog, catalog not attached, a negative or NULL threshold.
//!
//! ```sql
//! SELECT schema_name, table_name, inlined_rows FROM srdp_catalog_pressure('lake', threshold := 5000);
//! ```

use super::selection::Selection;
use super::{Args, Cell, Column, Shared, SrdpFunction};
use crate::error::{Result, SrdpError};
use duckdb::core::{LogicalTypeHandle, LogicalTypeId};

/// The event name every row carries.
pub const EVENT: &str = "DatasetCatalogPressure";

pub struct CatalogPressure;

pub struct Bound {
    sel: Selection,
    threshold: i64,
}

impl SrdpFunction for CatalogPressure {
    type Bound = Bound;
    const NAME: &'static str = "srdp_catalog_pressure";

    fn positional() -> &'static [&'static str] {
        &["catalog"]
    }

    fn named() -> Vec<(&'static str, LogicalTypeHandle)> {
        vec![("threshold", LogicalTypeHandle::from(LogicalTypeId::Bigint))]
    }

    fn columns() -> Vec<Column> {
        vec![
            Column::text("event"),
            Column::text("catalog"),
            Column::text("schema_name"),
            Column::text("table_name"),
            Column::bigint("inlined_rows"),
            Column::bigint("threshold"),
            Column::timestamptz("checked_at"),
        ]
    }

    fn bind(args: &Args) -> Result<Self::Bound> {
        let sel = Selection::bind(args)?;
        let threshold = match args.bigint("threshold")? {
            Some(t) if t < 0 => {
                return Err(SrdpError::InvalidArgument(format!(
                    "threshold := must be 0 or more, got {t}; leave it out to use pressure_warning_rows ({})",
                    sel.def.tunables.pressure_warning_rows
                )))
            }
            Some(t) => t,
            None => i64::try_from(sel.def.tunables.pressure_warning_rows).unwrap_or(i64::MAX),
        };
        Ok(Bound { sel, threshold })
    }

    fn run(b: &Self::Bound, shared: &Shared) -> Result<Vec<Vec<Cell>>> {
        let checked_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
        shared.runner.with_lake(&b.sel.catalog, None, |lake| {
            let datasets = lake.select(None, None)?;
            let inlined = lake.inlined(&datasets)?;
            Ok(datasets
                .iter()
                .filter_map(|d| {
                    let rows = inlined.get(&d.table_id)?.rows;
                    (rows > b.threshold).then(|| {
                        vec![
                            EVENT.into(),
                            b.sel.catalog.clone().into(),
                            d.schema.clone().into(),
                            d.table.clone().into(),
                            rows.into(),
                            b.threshold.into(),
                            Cell::Timestamp(checked_at),
                        ]
                    })
                })
                .collect())
        })
    }
}
