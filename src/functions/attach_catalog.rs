//! `srdp_attach_catalog(catalog, alias :=, role :=, refresh :=, config :=)`: attaches a catalog
//! exactly as defined.
//!
//! Parameters: `catalog` (a name defined in `srdp.toml`); `alias := catalog` (the database name
//! to attach as); `role := 'reader'` (read-only; never creates a lake) or `'writer'`
//! (read-write, creates the lake on first use, needs `writer_secret` where one is defined);
//! `refresh := false` (true: DETACH and ATTACH again as defined now); `config := 'path'`.
//! Returns one row: `catalog, alias, role, read_only BOOLEAN, metadata_schema, data_path,
//! data_inlining_row_limit BIGINT, status` where status is `attached`, `already attached` (the
//! same definition is attached under that alias: nothing done) or `re-attached`.
//! Errors: unknown catalog or role, NULL or empty arguments, a missing secret, a reader of a lake
//! that does not exist or whose metadata file holds no DuckLake catalog yet (a writer's first
//! attach was killed; the writer's next attach creates it), an alias taken by another definition or by a database srdp did not
//! attach. On any error nothing is attached.
//!
//! ```sql
//! SELECT * FROM srdp_attach_catalog('lake', role := 'writer');
//! INSERT INTO lake.main.events VALUES (1);
//! ```

use super::{Args, Cell, Column, Shared, SrdpFunction};
use crate::attach::{self, AttachSpec, Role};
use crate::error::Result;
use duckdb::core::{LogicalTypeHandle, LogicalTypeId};

pub struct AttachCatalog;

pub struct Bound {
    spec: AttachSpec,
    refresh: bool,
}

impl SrdpFunction for AttachCatalog {
    type Bound = Bound;
    const NAME: &'static str = "srdp_attach_catalog";

    fn positional() -> &'static [&'static str] {
        &["catalog"]
    }

    fn named() -> Vec<(&'static str, LogicalTypeHandle)> {
        vec![
            ("alias", LogicalTypeHandle::from(LogicalTypeId::Varchar)),
            ("role", LogicalTypeHandle::from(LogicalTypeId::Varchar)),
            ("refresh", LogicalTypeHandle::from(LogicalTypeId::Boolean)),
        ]
    }

    fn columns() -> Vec<Column> {
        vec![
            Column::text("catalog"),
            Column::text("alias"),
            Column::text("role"),
            Column::boolean("read_only"),
            Column::text("metadata_schema"),
            Column::text("data_path"),
            Column::bigint("data_inlining_row_limit"),
            Column::text("status"),
        ]
    }

    fn bind(args: &Args) -> Result<Self::Bound> {
        let catalog = args.required_text(0)?;
        let role = match args.text("role")? {
            Some(r) => Role::parse(&r)?,
            None => Role::Reader,
        };
        let alias = args.text("alias")?.unwrap_or_else(|| catalog.clone());
        let refresh = args.boolean("refresh")?.unwrap_or(false);
        let config = args.config()?;
        let def = config.catalog(&catalog)?;
        Ok(Bound {
            spec: attach::plan(def, &alias, role),
            refresh,
        })
    }

    fn run(bound: &Self::Bound, shared: &Shared) -> Result<Vec<Vec<Cell>>> {
        let status = shared.runner.attach(&bound.spec, bound.refresh)?;
        let spec = &bound.spec;
        Ok(vec![vec![
            spec.catalog.clone().into(),
            spec.alias.clone().into(),
            spec.role.as_str().into(),
            spec.read_only().into(),
            spec.metadata_schema.clone().into(),
            spec.data_path.clone().into(),
            spec.data_inlining_row_limit.into(),
            status.as_str().into(),
        ]])
    }
}
