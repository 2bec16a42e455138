//! One spelling per storage location, so that two spellings of one folder compare equal.
//!
//! The landing zone must never hold a data path nor sit inside one, and a string comparison
//! lets `file://localhost/srv/lake/../lake/landing`, `S3A://bucket//lake/./landing` or a
//! symlinked parent slip past. [`canonical`] maps every spelling of a folder or S3 prefix to one
//! string, and every overlap check compares those. The rules are the same as
//! `python/srdp/locations.py` (`canonical(url)`), which the Python side uses for the same
//! purpose; keep the two identical:
//!
//! * a local folder (a plain path, made absolute against the working directory; `file:///p`,
//!   `file://localhost/p`, `file:/p`): `file://` + the absolute path with `.`, `..` and `//`
//!   folded lexically, then the symlinks of its longest existing prefix resolved, + `/`;
//! * S3 (`s3://`, `s3a://`, `s3n://`, scheme in any case): `s3://<bucket>/<key>/` with the key's
//!   `//` and `.` folded and `..` applied; the bucket as written;
//! * anything else is an error naming the location: another scheme, a `file://` URL of another
//!   host, a relative `file:` URL, an S3 URL without a bucket or whose `..` climbs above it.
//!
//! For other object stores (`gs://`, `az://`, ...), which [`canonical`] does not know,
//! [`comparable`] falls back to the scheme lower-cased and the rest as written.

use super::paths::lexical;
use std::path::{Path, PathBuf};

/// The S3 schemes, all one store (`s3a` and `s3n` are Hadoop's names for it).
const S3_SCHEMES: [&str; 3] = ["s3", "s3a", "s3n"];

/// The one spelling of the folder or S3 prefix `location` names, ending in `/`; an error
/// (a sentence naming `location`) for what it cannot name. See the module doc for the rules.
pub fn canonical(location: &str) -> Result<String, String> {
    let Some((scheme, rest)) = split_scheme(location) else {
        if location.is_empty() {
            return Err(
                "an empty location is no folder; give a path or an s3://bucket/prefix URL".into(),
            );
        }
        return Ok(local(Path::new(location)));
    };
    let scheme = scheme.to_ascii_lowercase();
    if scheme == "file" {
        let path = match rest.strip_prefix("//") {
            Some(authority) => {
                let (host, path) = authority
                    .find('/')
                    .map_or((authority, ""), |i| (&authority[..i], &authority[i..]));
                if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
                    return Err(format!(
                        "'{location}' names a folder on host '{host}'; srdp reads local folders \
                         only (file:///path or a plain path)"
                    ));
                }
                path
            }
            None => rest,
        };
        if !path.starts_with('/') {
            return Err(format!(
                "'{location}' is a relative file: URL; write file:///absolute/path or a plain path"
            ));
        }
        return Ok(local(Path::new(path)));
    }
    if let (true, Some(authority)) = (
        S3_SCHEMES.contains(&scheme.as_str()),
        rest.strip_prefix("//"),
    ) {
        let (bucket, key) = authority.split_once('/').unwrap_or((authority, ""));
        if bucket.is_empty() {
            return Err(format!(
                "'{location}' names no bucket; write s3://bucket/prefix/"
            ));
        }
        let mut parts: Vec<&str> = Vec::new();
        for part in key.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    if parts.pop().is_none() {
                        return Err(format!("'{location}' climbs above its bucket with '..'"));
                    }
                }
                _ => parts.push(part),
            }
        }
        let key: String = parts.iter().map(|p| format!("{p}/")).collect();
        return Ok(format!("s3://{bucket}/{key}"));
    }
    Err(format!(
        "'{location}' is neither a local folder (a path or file:///path) nor an S3 location \
         (s3://bucket/prefix/)"
    ))
}

/// The form overlap checks compare: [`canonical`], or for a URL it does not know, the scheme
/// lower-cased and the rest as written, ending in `/`.
pub fn comparable(location: &str) -> String {
    canonical(location).unwrap_or_else(|_| {
        let mut out = match split_scheme(location) {
            Some((scheme, rest)) => format!("{}:{rest}", scheme.to_ascii_lowercase()),
            None => location.to_string(),
        };
        if !out.ends_with('/') {
            out.push('/');
        }
        out
    })
}

/// Whether [`canonical`] knows the scheme of `location` (none, `file`, or an S3 one), so that a
/// location it refuses is an error in `srdp.toml` rather than another object store.
pub fn is_known_kind(location: &str) -> bool {
    match split_scheme(location) {
        None => true,
        Some((scheme, _)) => {
            let scheme = scheme.to_ascii_lowercase();
            scheme == "file" || S3_SCHEMES.contains(&scheme.as_str())
        }
    }
}

/// `scheme:rest` when `location` starts with a URL scheme of two or more characters (one letter
/// is a drive, not a scheme), as RFC 3986 spells it: a letter, then letters, digits, `+`, `-`, `.`.
fn split_scheme(location: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = location.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let valid = first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && scheme.len() > 1;
    valid.then_some((scheme, rest))
}

/// `file://` + the real absolute folder of `path` + `/`.
fn local(path: &Path) -> String {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let real = resolve_symlinks(&lexical(&absolute));
    let text = real.display().to_string();
    format!("file://{}/", text.trim_end_matches('/'))
}

/// `path` with the symlinks of its longest existing prefix resolved (the rest does not exist
/// yet, so it holds none).
fn resolve_symlinks(path: &Path) -> PathBuf {
    let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(mut real) = std::fs::canonicalize(existing) {
            real.extend(missing.iter().rev());
            return real;
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name);
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A fresh folder under the system's temporary folder, symlinks resolved.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("srdp-locations-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::canonicalize(dir).unwrap()
    }

    #[test]
    fn local_spellings_of_one_folder_are_one() {
        for spelling in [
            "/nonexistent-srdp/lake/landing",
            "/nonexistent-srdp/lake/landing/",
            "/nonexistent-srdp//lake/./landing",
            "/nonexistent-srdp/lake/raw/../landing",
            "file:///nonexistent-srdp/lake/landing",
            "file://localhost/nonexistent-srdp/lake/landing/",
            "FILE://LocalHost/nonexistent-srdp/lake/x/../landing",
            "file:/nonexistent-srdp/lake//landing",
        ] {
            assert_eq!(
                canonical(spelling).as_deref(),
                Ok("file:///nonexistent-srdp/lake/landing/"),
                "{spelling}"
            );
        }
        assert_eq!(canonical("/").as_deref(), Ok("file:///"));
        assert_eq!(canonical("/..").as_deref(), Ok("file:///"));
    }

    #[test]
    fn s3_spellings_of_one_prefix_are_one() {
        for spelling in [
            "s3://bucket/lake/landing",
            "S3://bucket/lake/landing/",
            "s3a://bucket/lake//landing",
            "S3N://bucket/lake/./landing/",
            "s3://bucket//lake/raw/../landing//",
        ] {
            assert_eq!(
                canonical(spelling).as_deref(),
                Ok("s3://bucket/lake/landing/"),
                "{spelling}"
            );
        }
        assert_eq!(canonical("s3://Bucket").as_deref(), Ok("s3://Bucket/"));
        assert_eq!(canonical("s3://bucket/a/..").as_deref(), Ok("s3://bucket/"));
    }

    #[test]
    fn what_it_cannot_name_is_an_error_naming_it() {
        assert_eq!(
            canonical("file://server/share/x"),
            Err(
                "'file://server/share/x' names a folder on host 'server'; srdp reads local \
                 folders only (file:///path or a plain path)"
                    .into()
            )
        );
        assert_eq!(
            canonical("file:landing"),
            Err(
                "'file:landing' is a relative file: URL; write file:///absolute/path or a plain \
                 path"
                    .into()
            )
        );
        assert_eq!(
            canonical("s3:///x"),
            Err("'s3:///x' names no bucket; write s3://bucket/prefix/".into())
        );
        assert_eq!(
            canonical("s3://b/x/../../y"),
            Err("'s3://b/x/../../y' climbs above its bucket with '..'".into())
        );
        assert_eq!(
            canonical("gs://b/x"),
            Err(
                "'gs://b/x' is neither a local folder (a path or file:///path) nor an S3 \
                 location (s3://bucket/prefix/)"
                    .into()
            )
        );
        assert_eq!(
            canonical(""),
            Err("an empty location is no folder; give a path or an s3://bucket/prefix URL".into())
        );
    }

    #[test]
    fn other_object_stores_compare_with_the_scheme_folded() {
        assert_eq!(comparable("GS://b/x"), "gs://b/x/");
        assert_eq!(comparable("az://c/y/"), "az://c/y/");
        assert_eq!(comparable("S3A://b//x"), "s3://b/x/");
        assert!(is_known_kind("S3N://b/x") && is_known_kind("/x") && is_known_kind("File:/x"));
        assert!(!is_known_kind("gs://b/x"));
    }

    #[test]
    fn symlinks_of_the_existing_prefix_are_resolved() {
        let dir = scratch("links");
        let real = dir.join("real");
        std::fs::create_dir_all(real.join("lake")).unwrap();
        std::os::unix::fs::symlink(&real, dir.join("link")).unwrap();
        let expected = format!("file://{}/lake/landing/", real.display());
        // Through the link, with the last two components not existing yet.
        assert_eq!(
            canonical(&format!("{}/link/lake/landing", dir.display())),
            Ok(expected.clone())
        );
        assert_eq!(
            canonical(&format!(
                "file://localhost{}/link/./lake//landing/",
                dir.display()
            )),
            Ok(expected)
        );
        // `..` is folded before the link is followed, as os.path.abspath does in Python.
        assert_eq!(
            canonical(&format!("{}/link/../real/lake", dir.display())),
            Ok(format!("file://{}/lake/", real.display()))
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    proptest! {
        #[test]
        fn canonical_twice_is_canonical_once(
            scheme in prop::sample::select(vec!["", "file://", "file://localhost", "s3://b", "S3A://b", "s3n://b"]),
            parts in prop::collection::vec(prop::sample::select(vec!["a", "B", ".", "..", "", "x.y"]), 0..8),
        ) {
            let location = format!("{scheme}/{}", parts.join("/"));
            if let Ok(once) = canonical(&location) {
                prop_assert_eq!(canonical(&once), Ok(once.clone()));
                prop_assert!(once.ends_with('/'));
            }
        }
    }
}
