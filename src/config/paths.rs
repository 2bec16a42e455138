//! Paths inside `srdp.toml`: object-store URLs told from local paths, and local paths made
//! absolute against the file's own directory.

use std::path::{Component, Path, PathBuf};

/// `s3://...`, `gs://...`, `file://...` and the like.
pub fn is_url(s: &str) -> bool {
    match s.find("://") {
        Some(i) => {
            i > 0
                && s[..i]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '+')
        }
        None => false,
    }
}

/// `p` made absolute against `base` and normalised lexically (`.` and `..` removed).
pub fn resolve(base: &Path, p: &str) -> PathBuf {
    lexical(&base.join(p))
}

/// `.`, `..` and `//` folded without looking at the file system (`..` of `/` is `/`).
pub(super) fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `s` ending in `/`, so that a data path always names a folder.
pub(super) fn with_trailing_slash(mut s: String) -> String {
    if !s.ends_with('/') {
        s.push('/');
    }
    s
}

/// `s` without surrounding white space, or `None` when nothing is left.
pub(super) fn non_empty(s: &str) -> Option<&str> {
    let s = s.trim();
    (!s.is_empty()).then_some(s)
}
