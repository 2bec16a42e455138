//! Where in the file a problem is: byte offsets turned into lines, columns and the dotted key
//! written there, and the [`SrdpError::ConfigInvalid`] that names them.
//!
//! A message never echoes the text of a line: a file that is not TOML at all (a `.pgpass` passed
//! by mistake) shows at most a well-formed key.

use crate::error::SrdpError;
use std::path::Path;

/// An error at byte `offset` of `text`; the key is taken from the line when not known.
pub(super) fn invalid(
    path: &Path,
    text: &str,
    offset: usize,
    key: Option<String>,
    message: String,
) -> SrdpError {
    let line = line_of(text, offset);
    let key = key.or_else(|| key_at(text, offset));
    SrdpError::ConfigInvalid {
        path: path.to_path_buf(),
        line,
        key: key.map(|k| format!("key '{k}': ")).unwrap_or_default(),
        message,
    }
}

/// A TOML syntax error at its line and column. The key is shown only when the line starts with
/// a well-formed key or table header; no other text of the line is ever shown.
pub(super) fn syntax_error(path: &Path, text: &str, e: &toml::de::Error) -> SrdpError {
    let offset = e.span().map(|s| s.start).unwrap_or(0).min(text.len());
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let column = text[line_start..offset].chars().count() + 1;
    let key = key_at(text, offset).filter(|k| is_plain_key(k));
    SrdpError::ConfigInvalid {
        path: path.to_path_buf(),
        line: line_of(text, offset),
        key: key.map(|k| format!("key '{k}': ")).unwrap_or_default(),
        message: format!("column {column}: {}", e.message().trim()),
    }
}

/// A dotted key of bare TOML key characters (`catalogs.lake.data_path`).
fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key.split('.').all(|part| {
            let part = part.trim();
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
}

/// 1-based line number of a byte offset.
pub fn line_of(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The dotted key written on the line of `offset` (`catalogs.lake.max_attempts`), if any.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next().unwrap_or("").trim();
    let table = |l: &str| {
        l.trim_start_matches('[')
            .trim_end_matches(']')
            .trim()
            .to_string()
    };
    if line.starts_with('[') {
        return Some(table(line));
    }
    let key = line.split('=').next()?.trim();
    if key.is_empty() || key.starts_with('#') {
        return None;
    }
    let header = text[..start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(table);
    Some(match header {
        Some(h) => format!("{h}.{key}"),
        None => key.to_string(),
    })
}
