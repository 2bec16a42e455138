//! The SQL functions, one file each, and the glue they share.
//!
//! Each function implements [`SrdpFunction`]: its name, parameters, result columns, a `bind`
//! that reads arguments and the definition and plans (no side effects: DuckDB may bind twice
//! or only for `EXPLAIN`), and a `run` that executes the plan on the runner exactly once, at
//! execution time. [`Table`] turns that into a DuckDB table function: it prefixes errors with
//! the function name and emits the rows in vector-sized chunks.

mod args;
mod attach_catalog;
mod catalog_pressure;
mod catalogs;
mod check_writer;
mod compact;
mod dlt_destination;
mod flush;
mod inlined_row_count;
mod output;
mod postgres_roles;
mod retry_wait;
mod rules;
mod selection;
mod table_name;
mod version;
mod write_audit;

pub use args::{Args, CONFIG_SETTING};
pub use output::{Cell, Column};

use crate::error::SrdpError;
use crate::runner::Runner;
use duckdb::core::{DataChunkHandle, LogicalTypeHandle};
use duckdb::vtab::{BindInfo, InitInfo, TableFunctionInfo, VTab};
use duckdb::Connection;
use std::error::Error;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

/// What the entrypoint hands every function: the runner of this database.
#[derive(Clone)]
pub struct Shared {
    pub runner: Arc<Runner>,
}

/// One srdp SQL function.
pub trait SrdpFunction: 'static {
    /// The planned call, built in bind.
    type Bound: Send + Sync + 'static;
    const NAME: &'static str;
    /// Positional parameters (all VARCHAR in srdp).
    fn positional() -> &'static [&'static str] {
        &[]
    }
    /// Named parameters besides `config`, with their DuckDB types.
    fn named() -> Vec<(&'static str, LogicalTypeHandle)> {
        Vec::new()
    }
    fn columns() -> Vec<Column>;
    fn bind(args: &Args) -> crate::error::Result<Self::Bound>;
    fn run(bound: &Self::Bound, shared: &Shared) -> crate::error::Result<Vec<Vec<Cell>>>;
}

/// A [`SrdpFunction`] as a DuckDB table function.
pub struct Table<F>(PhantomData<F>);

pub struct BindData<F: SrdpFunction> {
    bound: F::Bound,
}

/// Rows computed on the first `func` call and emitted from `next`.
pub struct InitData {
    rows: Mutex<Option<(Vec<Vec<Cell>>, usize)>>,
}

fn prefixed<F: SrdpFunction>(e: SrdpError) -> Box<dyn Error> {
    format!("{}: {e}", F::NAME).into()
}

impl<F: SrdpFunction> VTab for Table<F> {
    type InitData = InitData;
    type BindData = BindData<F>;

    fn bind(bind: &BindInfo) -> Result<Self::BindData, Box<dyn Error>> {
        for column in F::columns() {
            bind.add_result_column(column.name, column.kind.handle());
        }
        let args = Args::new(bind, F::NAME, F::positional());
        let bound = F::bind(&args).map_err(prefixed::<F>)?;
        Ok(BindData { bound })
    }

    fn init(init: &InitInfo) -> Result<Self::InitData, Box<dyn Error>> {
        init.set_max_threads(1);
        Ok(InitData {
            rows: Mutex::new(None),
        })
    }

    fn func(
        func: &TableFunctionInfo<Self>,
        output: &mut DataChunkHandle,
    ) -> Result<(), Box<dyn Error>> {
        let init = func.get_init_data();
        let mut state = init
            .rows
            .lock()
            .map_err(|_| "srdp: result state poisoned")?;
        if state.is_none() {
            // SAFETY: the extra info is the `Shared` registered with this function in
            // `register`; DuckDB keeps it alive as long as the function exists.
            let shared = unsafe { &*func.get_extra_info::<Shared>() };
            let rows = F::run(&func.get_bind_data().bound, shared).map_err(prefixed::<F>)?;
            *state = Some((rows, 0));
        }
        let (rows, emitted) = state.as_mut().ok_or("srdp: missing result state")?;
        let n = output::write(output, &F::columns(), &rows[*emitted..]);
        *emitted += n;
        Ok(())
    }

    fn parameters() -> Option<Vec<LogicalTypeHandle>> {
        Some(
            F::positional()
                .iter()
                .map(|_| output::Kind::Text.handle())
                .collect(),
        )
    }

    fn named_parameters() -> Option<Vec<(String, LogicalTypeHandle)>> {
        let mut named = vec![("config".to_string(), output::Kind::Text.handle())];
        named.extend(F::named().into_iter().map(|(n, t)| (n.to_string(), t)));
        Some(named)
    }
}

/// Registers every srdp function on `con`.
pub fn register(con: &Connection, shared: &Shared) -> duckdb::Result<()> {
    con.register_table_function_with_extra_info::<Table<version::Version>, _>(
        version::Version::NAME,
        shared,
    )?;
    con.register_table_function_with_extra_info::<Table<catalogs::Catalogs>, _>(
        catalogs::Catalogs::NAME,
        shared,
    )?;
    con.register_table_function_with_extra_info::<Table<attach_catalog::AttachCatalog>, _>(
        attach_catalog::AttachCatalog::NAME,
        shared,
    )?;
    con.register_table_function_with_extra_info::<Table<inlined_row_count::InlinedRowCount>, _>(
        inlined_row_count::InlinedRowCount::NAME,
        shared,
    )?;
    con.register_table_function_with_extra_info::<Table<flush::Flush>, _>(
        flush::Flush::NAME,
        shared,
    )?;
    con.register_table_function_with_extra_info::<Table<compact::Compact>, _>(
        compact::Compact::NAME,
        shared,
    )?;
    con.register_table_function_with_extra_info::<Table<catalog_pressure::CatalogPressure>, _>(
        catalog_pressure::CatalogPressure::NAME,
        shared,
    )?;
    con.register_table_function_with_extra_info::<Table<rules::Rules>, _>(
        rules::Rules::NAME,
        shared,
    )?;
    con.register_table_function_with_extra_info::<Table<check_writer::CheckWriter>, _>(
        check_writer::CheckWriter::NAME,
        shared,
    )?;
    con.register_table_function_with_extra_info::<Table<dlt_destination::DltDestination>, _>(
        dlt_destination::DltDestination::NAME,
        shared,
    )?;
    con.register_table_function_with_extra_info::<Table<table_name::TableName>, _>(
        table_name::TableName::NAME,
        shared,
    )?;
    con.register_table_function_with_extra_info::<Table<retry_wait::RetryWait>, _>(
        retry_wait::RetryWait::NAME,
        shared,
    )?;
    con.register_table_function_with_extra_info::<Table<postgres_roles::PostgresRoles>, _>(
        postgres_roles::PostgresRoles::NAME,
        shared,
    )?;
    con.register_table_function_with_extra_info::<Table<write_audit::WriteAudit>, _>(
        write_audit::WriteAudit::NAME,
        shared,
    )?;
    Ok(())
}

/// The name of the `srdp_config` setting, for the entrypoint that registers it.
pub fn args_config_setting() -> &'static str {
    CONFIG_SETTING
}
