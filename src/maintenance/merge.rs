//! The merge step: adjacent small files of a dataset merged in one DuckLake call (very many
//! small files are merged in bounded calls instead, see [`super::batched`]).

use super::{Lake, LockUse, Stepped};
use crate::error::Result;
use crate::plan::{Dataset, OptionScope};
use crate::sql::{self, Literal};

impl Lake<'_> {
    /// Merges one dataset's adjacent small files; returns (files processed, files created). A
    /// merge that processed files counts as srdp's own commit.
    pub fn merge(
        &self,
        dataset: &Dataset,
        explicit: Option<OptionScope>,
        done: &[String],
    ) -> Result<Stepped<(i64, i64)>> {
        let statement = sql::merge(
            &Literal::new(&self.spec.alias),
            &Literal::new(&dataset.schema),
            &Literal::new(&dataset.table),
        );
        let message = format!("srdp_compact: merge {}", dataset.name());
        let step = self.labelled_step(
            dataset,
            "merge",
            &message,
            explicit,
            "",
            &statement,
            LockUse::HoldUntilCommit,
            done,
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        if step.value.0 > 0 {
            self.committed_one();
        }
        Ok(step)
    }
}
