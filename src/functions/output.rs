//! Result columns and writing rows into DuckDB's output chunk.

use duckdb::core::{DataChunkHandle, Inserter, LogicalTypeHandle, LogicalTypeId};
use std::ffi::CString;

/// DuckDB's vector size: the most rows one output chunk takes.
const CHUNK_ROWS: usize = 2048;

/// The column types srdp returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    BigInt,
    Boolean,
    /// TIMESTAMP WITH TIME ZONE, microseconds since the epoch.
    TimestampTz,
    /// VARCHAR[]
    TextList,
}

impl Kind {
    pub fn handle(self) -> LogicalTypeHandle {
        LogicalTypeHandle::from(match self {
            Kind::TextList => {
                return LogicalTypeHandle::list(&LogicalTypeHandle::from(LogicalTypeId::Varchar))
            }
            Kind::Text => LogicalTypeId::Varchar,
            Kind::BigInt => LogicalTypeId::Bigint,
            Kind::Boolean => LogicalTypeId::Boolean,
            Kind::TimestampTz => LogicalTypeId::TimestampTZ,
        })
    }
}

/// One result column.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    pub kind: Kind,
}

impl Column {
    pub const fn text(name: &'static str) -> Self {
        Column {
            name,
            kind: Kind::Text,
        }
    }
    pub const fn bigint(name: &'static str) -> Self {
        Column {
            name,
            kind: Kind::BigInt,
        }
    }
    pub const fn boolean(name: &'static str) -> Self {
        Column {
            name,
            kind: Kind::Boolean,
        }
    }
    pub const fn text_list(name: &'static str) -> Self {
        Column {
            name,
            kind: Kind::TextList,
        }
    }
    pub const fn timestamptz(name: &'static str) -> Self {
        Column {
            name,
            kind: Kind::TimestampTz,
        }
    }
}

/// One value of a result row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    Text(String),
    Int(i64),
    Bool(bool),
    /// Microseconds since the Unix epoch.
    Timestamp(i64),
    List(Vec<String>),
    Null,
}

impl From<&str> for Cell {
    fn from(s: &str) -> Self {
        Cell::Text(s.to_string())
    }
}
impl From<String> for Cell {
    fn from(s: String) -> Self {
        Cell::Text(s)
    }
}
impl From<bool> for Cell {
    fn from(b: bool) -> Self {
        Cell::Bool(b)
    }
}
impl From<u64> for Cell {
    fn from(n: u64) -> Self {
        Cell::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}
impl From<i64> for Cell {
    fn from(n: i64) -> Self {
        Cell::Int(n)
    }
}
impl From<Vec<String>> for Cell {
    fn from(items: Vec<String>) -> Self {
        Cell::List(items)
    }
}
impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(v: Option<T>) -> Self {
        v.map_or(Cell::Null, Into::into)
    }
}

/// Writes up to one chunk of `rows` and returns how many it wrote. A cell whose type does not
/// match its column is written as NULL.
pub fn write(output: &mut DataChunkHandle, columns: &[Column], rows: &[Vec<Cell>]) -> usize {
    let n = rows.len().min(CHUNK_ROWS);
    for (c, column) in columns.iter().enumerate() {
        if column.kind == Kind::TextList {
            write_lists(output, c, &rows[..n]);
            continue;
        }
        let mut vector = output.flat_vector(c);
        for (r, row) in rows[..n].iter().enumerate() {
            match (column.kind, row.get(c).unwrap_or(&Cell::Null)) {
                (Kind::Text, Cell::Text(s)) => {
                    // Interior NULs cannot cross the C API; they never occur in srdp's values.
                    let s = CString::new(s.replace('\0', "")).unwrap_or_default();
                    vector.insert(r, s);
                }
                // SAFETY: the vector is a flat BIGINT vector of at least CHUNK_ROWS entries.
                (Kind::BigInt, Cell::Int(v)) => unsafe { vector.as_mut_slice::<i64>()[r] = *v },
                // SAFETY: the vector is a flat BOOLEAN vector of at least CHUNK_ROWS entries.
                (Kind::Boolean, Cell::Bool(v)) => unsafe { vector.as_mut_slice::<bool>()[r] = *v },
                // SAFETY: TIMESTAMPTZ is stored as i64 microseconds, CHUNK_ROWS entries.
                (Kind::TimestampTz, Cell::Timestamp(v)) => unsafe {
                    vector.as_mut_slice::<i64>()[r] = *v
                },
                // SAFETY: TIMESTAMPTZ is stored as i64 microseconds, CHUNK_ROWS entries.
                _ => vector.set_null(r),
            }
        }
    }
    output.set_len(n);
    n
}

/// Writes the VARCHAR[] column `c` of `rows` (a non-list cell is written as NULL).
fn write_lists(output: &mut DataChunkHandle, c: usize, rows: &[Vec<Cell>]) {
    let mut lists = output.list_vector(c);
    let total: usize = rows
        .iter()
        .map(|row| match row.get(c) {
            Some(Cell::List(items)) => items.len(),
            _ => 0,
        })
        .sum();
    let child = lists.child(total.max(1));
    let mut offset = 0;
    for (r, row) in rows.iter().enumerate() {
        match row.get(c) {
            Some(Cell::List(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let item = CString::new(item.replace('\0', "")).unwrap_or_default();
                    child.insert(offset + i, item);
                }
                lists.set_entry(r, offset, items.len());
                offset += items.len();
            }
            _ => lists.set_null(r),
        }
    }
    lists.set_len(total);
}
