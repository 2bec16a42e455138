//! Who may write where, and what a dlt load must look like (pure: config in, decisions out).
//!
//! The three safety rules are on unless `srdp.toml` relaxes one with a visible line under
//! `[rules]`; every relaxation is reported with that line, and every load that runs with a rule
//! off gets one warning per relaxed rule. Schema ownership comes from
//! `[catalogs.<c>.schemas.<s>]`; a tenant project's datasets (`<project>_<layer>`) take the owner
//! of the catalog's schemas of that layer.
//!
//! Rooms: this file holds the rules, their states and warnings, and [`relax_line`] (how every
//! refusal says to relax a rule); `single_writer` holds the schema definitions that rule refuses
//! ([`schema_refusal`]) and [`check_writer`]; `dlt` plans one dlt load ([`dlt_destination`]) and
//! holds the URLs and names dlt sees.

mod dlt;
mod single_writer;

pub use dlt::{
    catalog_url, dlt_destination, postgres_url, storage_url, table_name, DltDestination,
    DltRequest, DEFAULT_DLT_LAYER, DEFAULT_DLT_WRITER,
};
pub use single_writer::{
    check_writer, owner, ownership, schema_refusal, Owner, PatternClashes, WriterCheck,
};

use crate::config::{Config, Rule};

/// The key of the single_writer rule under `[rules]`.
pub const SINGLE_WRITER: &str = "single_writer";

/// One safety rule: its key under `[rules]`, and why it exists in a reviewer's words.
#[derive(Debug, PartialEq, Eq)]
pub struct RuleInfo {
    pub name: &'static str,
    pub why: &'static str,
    pub cost_if_relaxed: &'static str,
}

/// The rules, in the order `srdp_rules` lists them.
pub const RULES: [RuleInfo; 3] = [
    RuleInfo {
        name: "raw_append_only",
        why: "raw keeps a complete audit trail and curated layers can always be rebuilt from it",
        cost_if_relaxed:
            "the audit trail and rebuild from raw are lost for those tables; dropping \
                          a table also resets dlt's incremental state",
    },
    RuleInfo {
        name: "raw_validated",
        why: "unconforming data is caught before it reaches the lake while sources can still add \
              fields",
        cost_if_relaxed: "a type mismatch silently adds a variant column (such as \
                          `amount__v_text`) instead of failing",
    },
    RuleInfo {
        name: SINGLE_WRITER,
        why: "dlt cannot load into tables another writer created, and Dagster models one asset \
              per data object",
        cost_if_relaxed: "a mix-up fails during the load instead of before it",
    },
];

/// The state of one rule as `srdp_rules` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleState {
    pub info: &'static RuleInfo,
    pub enabled: bool,
    /// `default`, or `<file>:<line>` of the line that sets it.
    pub source: String,
}

fn rule_of<'a>(config: &'a Config, name: &str) -> &'a Rule {
    match name {
        "raw_append_only" => &config.rules.raw_append_only,
        "raw_validated" => &config.rules.raw_validated,
        _ => &config.rules.single_writer,
    }
}

/// Every rule with its state and source.
pub fn states(config: &Config) -> Vec<RuleState> {
    RULES
        .iter()
        .map(|info| {
            let rule = rule_of(config, info.name);
            RuleState {
                info,
                enabled: rule.enabled,
                source: match rule.line {
                    Some(line) => format!("{}:{line}", config.path.display()),
                    None => "default".to_string(),
                },
            }
        })
        .collect()
}

/// One warning per relaxed rule, to be logged on every load.
pub fn relaxed_warnings(config: &Config) -> Vec<String> {
    relaxed_warnings_except(config, None)
}

/// [`relaxed_warnings`] without the rule named `skip`.
fn relaxed_warnings_except(config: &Config, skip: Option<&str>) -> Vec<String> {
    states(config)
        .into_iter()
        .filter(|s| !s.enabled && Some(s.info.name) != skip)
        .map(|s| {
            format!(
                "srdp rule {} is relaxed by {}: {}",
                s.info.name, s.source, s.info.cost_if_relaxed
            )
        })
        .collect()
}

/// How every refusal says to relax `rule`: ``the line `single_writer = false` under [rules]``.
pub fn relax_line(rule: &str) -> String {
    format!("the line `{rule} = false` under [rules]")
}

/// Comma-separated items, or `none`.
fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

#[cfg(test)]
mod tests;
