//! Schema patterns: `[catalogs.<c>.schemas."dbt_*"]` gives one writer every schema whose name
//! starts with `dbt_`, so dbt's derived schemas (`<target>_<custom>`, `<schema>_dbt_test__audit`,
//! per-developer `dbt_alice`, per-CI `ci_1234`) need no entry each.
//!
//! A pattern is a prefix followed by one `*`, the key's last character; no other wildcard
//! exists. Names are compared as DuckDB resolves them ([`super::folded`]: ASCII letters
//! case-folded). dbt cuts schema names to PostgreSQL's identifier length ([`IDENTIFIER_BYTES`],
//! 63 bytes, never inside a character): a derived name cut that way still matches its pattern,
//! which for a prefix longer than the cut means the one name that cut leaves
//! ([`SchemaPattern::matches`]). Two patterns [`overlap`] when some name matches both.

use super::model::SchemaDef;
use super::names::folded;

/// The wildcard that ends a pattern key.
pub const WILDCARD: char = '*';

/// PostgreSQL's identifier length in bytes (NAMEDATALEN - 1), which dbt cuts schema names to.
pub const IDENTIFIER_BYTES: usize = 63;

/// One `[catalogs.<c>.schemas."<prefix>*"]`: every schema starting with `prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaPattern {
    /// The key as written: `dbt_*`.
    pub pattern: String,
    /// The key without its `*`: `dbt_`.
    pub prefix: String,
    pub def: SchemaDef,
}

impl SchemaPattern {
    /// Whether schema `name` is the pattern's: it starts with the prefix, or it is the
    /// [`IDENTIFIER_BYTES`] cut of a name that does (possible only for a longer prefix).
    pub fn matches(&self, name: &str) -> bool {
        let (name, prefix) = (folded(name), folded(&self.prefix));
        name.starts_with(&prefix) || (prefix.len() > IDENTIFIER_BYTES && name == cut(&prefix))
    }
}

/// Whether `key` of `[catalogs.<c>.schemas]` is a pattern (ends in `*`).
pub fn is_pattern(key: &str) -> bool {
    key.ends_with(WILDCARD)
}

/// `text` cut to at most [`IDENTIFIER_BYTES`] bytes at a character boundary, as PostgreSQL cuts
/// identifiers.
pub fn cut(text: &str) -> &str {
    if text.len() <= IDENTIFIER_BYTES {
        return text;
    }
    let mut end = IDENTIFIER_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Whether some schema name matches both prefixes: after the cut, one prefix starts with the
/// other (a name starting with both starts with the longer; the cut of a long prefix is the only
/// other name a pattern matches).
pub fn overlap(a: &str, b: &str) -> bool {
    let (a, b) = (folded(a), folded(b));
    let (a, b) = (cut(&a), cut(&b));
    a.starts_with(b) || b.starts_with(a)
}

/// A schema name two overlapping prefixes both match: the longer one, cut.
pub fn shared_name(a: &str, b: &str) -> String {
    cut(if a.len() >= b.len() { a } else { b }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(prefix: &str) -> SchemaPattern {
        SchemaPattern {
            pattern: format!("{prefix}*"),
            prefix: prefix.to_string(),
            def: SchemaDef {
                writers: vec!["dbt".into()],
                layer: "curated".into(),
            },
        }
    }

    #[test]
    fn a_prefix_matches_dbt_derived_schemas_case_folded() {
        let dbt = pattern("dbt_");
        for name in [
            "dbt_",
            "dbt_alice",
            "DBT_Alice_marts",
            "dbt_alice_dbt_test__audit",
        ] {
            assert!(dbt.matches(name), "{name}");
        }
        for name in ["dbt", "dbtx_alice", "xdbt_alice", "ci_1234", "dbt-alice"] {
            assert!(!dbt.matches(name), "{name}");
        }
        // DuckDB folds ASCII letters only: `Ä` is not `ä`.
        assert!(pattern("Ärger_").matches("Ärger_x"));
        assert!(!pattern("Ärger_").matches("ärger_x"));
    }

    #[test]
    fn a_derived_audit_schema_cut_to_63_bytes_still_matches() {
        // The target schema of a CI run and its stored-failures schema, cut as dbt cuts it.
        let target = format!("ci_{}", "7".repeat(50)); // 53 bytes
        let audit = format!("{target}_dbt_test__audit"); // 69 bytes
        assert_eq!(cut(&audit), &audit[..63]);
        assert!(pattern(&format!("{target}_")).matches(cut(&audit)));
        // A prefix longer than the cut: only the cut name itself is the pattern's.
        let long = format!("{}_", "s".repeat(70));
        let derived = format!("{long}dbt_test__audit");
        assert_eq!(cut(&derived), "s".repeat(63));
        assert!(pattern(&long).matches(cut(&derived)));
        assert!(pattern(&long).matches(&"S".repeat(63)));
        assert!(!pattern(&long).matches(&"s".repeat(62)));
        assert!(!pattern(&long).matches(&"s".repeat(64)));
        // The cut never splits a character: 62 ASCII bytes then a 2-byte `é` cut to 62 bytes.
        let wide = format!("{}é_", "a".repeat(62));
        assert_eq!(cut(&wide), "a".repeat(62));
        assert!(pattern(&wide).matches(&"a".repeat(62)));
    }

    #[test]
    fn patterns_overlap_when_some_name_matches_both() {
        assert!(overlap("dbt_", "dbt_ci_"));
        assert!(overlap("DBT_CI_", "dbt_"));
        assert!(overlap("dbt_", "dbt_"));
        assert!(!overlap("dbt_", "ci_"));
        assert!(!overlap("dbt_a", "dbt_b"));
        // Two long prefixes that agree on their first 63 bytes share that cut name.
        let (a, b) = (
            format!("{}a", "s".repeat(63)),
            format!("{}b", "s".repeat(63)),
        );
        assert!(overlap(&a, &b));
        assert!(pattern(&a).matches(cut(&b)) && pattern(&b).matches(cut(&a)));
        assert_eq!(shared_name(&a, &b), "s".repeat(63));
        assert_eq!(shared_name("dbt_", "dbt_ci_"), "dbt_ci_");
        // A long prefix and a short one it does not start with share nothing.
        let long = "s".repeat(70);
        assert!(!overlap(&long, "t"));
        assert!(overlap(&long, "ss"));
    }
}
