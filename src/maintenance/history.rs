//! What the write audit reads through the lake handle.

use super::Lake;
use crate::audit;
use crate::error::Result;
use crate::sql::Literal;

impl Lake<'_> {
    /// What the write audit reads: the snapshots from `min_id` on, every version of every
    /// table, view and schema, and the live schema names.
    pub fn audit_history(
        &self,
        min_id: i64,
    ) -> Result<(Vec<audit::Snapshot>, Vec<audit::Version>, Vec<String>)> {
        let queries = audit::AuditQueries::new(&self.spec.alias, &self.spec.metadata_schema);
        let snapshots = self.read(&queries.snapshots(min_id), |r| {
            Ok(audit::Snapshot {
                id: r.get(0)?,
                time: r.get(1)?,
                author: r.get(2)?,
                message: r.get(3)?,
                changes: r.get(4)?,
            })
        })?;
        let versions = self
            .read(&queries.versions(), |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    audit::Version {
                        kind: audit::ObjectKind::Table,
                        id: r.get(1)?,
                        name: r.get(2)?,
                        schema_id: r.get(3)?,
                        begin: r.get(4)?,
                    },
                ))
            })?
            .into_iter()
            .filter_map(|(kind, v)| {
                audit::ObjectKind::parse(&kind).map(|kind| audit::Version { kind, ..v })
            })
            .collect();
        let schemas = self.read(&self.meta.schemas(), |r| r.get::<_, String>(0))?;
        Ok((snapshots, versions, schemas))
    }

    /// A `since :=` timestamp in microseconds since the epoch, `None` if DuckDB cannot read it.
    pub fn timestamp_micros(&self, text: &str) -> Result<Option<i64>> {
        let rows = self.read(&audit::timestamp_micros(&Literal::new(text)), |r| {
            r.get::<_, Option<i64>>(0)
        })?;
        Ok(rows.into_iter().next().flatten())
    }
}
