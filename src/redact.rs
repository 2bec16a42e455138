//! Removes credentials from text before it reaches a user, a log or an error.
//!
//! DuckLake and the PostgreSQL scanner echo the metadata connection string in some errors
//! (`Existing DuckLake at metadata catalog "postgres:... password=..." does not exist`).
//! Every DuckDB error that srdp reports passes through [`redact`].

const MASK: &str = "***";

/// Masks libpq `password=...` values (plain or single-quoted) and the password part of
/// `scheme://user:password@host` URIs.
pub fn redact(text: &str) -> String {
    redact_uri_passwords(&redact_key_value_passwords(text))
}

fn redact_key_value_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let lower = rest.to_ascii_lowercase();
        let Some(pos) = find_password_key(&lower) else {
            out.push_str(rest);
            return out;
        };
        // Copy up to and including `password` and the `=` (with any spaces around it).
        let mut cut = pos + "password".len();
        let bytes = rest.as_bytes();
        while cut < bytes.len() && bytes[cut] == b' ' {
            cut += 1;
        }
        cut += 1; // the '='
        while cut < bytes.len() && bytes[cut] == b' ' {
            cut += 1;
        }
        out.push_str(&rest[..cut]);
        let value = &rest[cut..];
        let skip = value_len(value);
        out.push_str(MASK);
        rest = &value[skip..];
    }
}

/// Byte position of a `password` key that is followed by `=`.
fn find_password_key(lower: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = lower[from..].find("password") {
        let pos = from + found;
        let after = lower[pos + "password".len()..].trim_start_matches(' ');
        if after.starts_with('=') {
            return Some(pos);
        }
        from = pos + "password".len();
    }
    None
}

/// Length of a libpq value: single-quoted with backslash escapes, or up to white space or a
/// character that ends a quoted connection string in an error message.
fn value_len(value: &str) -> usize {
    let bytes = value.as_bytes();
    if bytes.first() == Some(&b'\'') {
        let mut i = 1;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 2,
                b'\'' => return i + 1,
                _ => i += 1,
            }
        }
        return bytes.len();
    }
    value
        .find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == ')' || c == ',')
        .unwrap_or(value.len())
}

fn redact_uri_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(scheme_end) = rest.find("://") {
        let authority_start = scheme_end + 3;
        out.push_str(&rest[..authority_start]);
        let tail = &rest[authority_start..];
        let authority_end = tail
            .find(|c: char| c == '/' || c.is_whitespace() || c == '"' || c == '\'')
            .unwrap_or(tail.len());
        let authority = &tail[..authority_end];
        match (authority.rfind('@'), authority.find(':')) {
            (Some(at), Some(colon)) if colon < at => {
                out.push_str(&authority[..=colon]);
                out.push_str(MASK);
                out.push_str(&authority[at..]);
            }
            _ => out.push_str(authority),
        }
        rest = &tail[authority_end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn masks_libpq_password() {
        assert_eq!(
            redact("Existing DuckLake at metadata catalog \"postgres:dbname=lakecat host=127.0.0.1 user=lake password=lakepw\" does not exist"),
            "Existing DuckLake at metadata catalog \"postgres:dbname=lakecat host=127.0.0.1 user=lake password=***\" does not exist"
        );
    }

    #[test]
    fn masks_quoted_and_spaced_password() {
        assert_eq!(
            redact("host=h password = 'a b\\'c' port=5"),
            "host=h password = *** port=5"
        );
        assert_eq!(redact("PASSWORD=Secret1"), "PASSWORD=***");
    }

    #[test]
    fn masks_uri_password() {
        assert_eq!(
            redact("postgres://lake:lakepw@127.0.0.1:55433/dltcat failed"),
            "postgres://lake:***@127.0.0.1:55433/dltcat failed"
        );
    }

    #[test]
    fn leaves_other_text_alone() {
        let text = "s3://bucket/prefix/ and password policy and user@host";
        assert_eq!(redact(text), text);
    }
}
