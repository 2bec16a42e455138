//! Names as DuckDB resolves them: an unquoted or quoted identifier is looked up with its ASCII
//! letters folded to lower case (`Raw`, `RAW` and `raw` are one schema; DuckDB 1.5.5 keeps `Ä`
//! and `ä` apart). Every ownership check compares schema names this way, and a file that
//! defines two schemas (or two catalogs) one name apart only by case is refused when it is read.

/// `name` as DuckDB compares it: ASCII letters lower-cased, everything else as written.
pub fn folded(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// Whether DuckDB resolves `a` and `b` to the same object.
pub fn same_name(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_letters_fold_and_nothing_else_does() {
        assert_eq!(folded("Raw_Landed"), "raw_landed");
        assert_eq!(folded("ÄRGER"), "Ärger");
        assert!(same_name("RAW", "raw"));
        assert!(!same_name("Ä", "ä"));
        assert!(!same_name("ß", "SS"));
        assert!(!same_name("raw", "raw_"));
    }
}
