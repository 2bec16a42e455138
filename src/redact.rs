//! Removes credentials from text before it reaches a user, a log or an error.
//!
//! DuckLake and the PostgreSQL scanner echo the metadata connection string in some errors
//! (`Existing DuckLake at metadata catalog "postgres:... password=..." does not exist`).
//! Every DuckDB error that srdp reports passes through [`redact`], which finds secrets with the
//! same libpq rules that [`crate::libpq`] parses connection strings with.

use crate::libpq;

const MASK: &str = "***";

/// Masks every libpq `password`/`sslpassword` value (any white space around `=`, quoted or
/// bare, with escapes) and the password part of `scheme://user:password@host` URIs.
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (start, end) in libpq::secret_ranges(text) {
        if end <= copied {
            continue;
        }
        let start = start.max(copied);
        out.push_str(&text[copied..start]);
        out.push_str(MASK);
        copied = end;
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn masks_libpq_password() {
        assert_eq!(
            redact("Existing DuckLake at metadata catalog \"postgres:dbname=lakecat host=127.0.0.1 user=lake password=lakepw\" does not exist"),
            "Existing DuckLake at metadata catalog \"postgres:dbname=lakecat host=127.0.0.1 user=lake password=*** does not exist"
        );
    }

    #[test]
    fn masks_quoted_and_spaced_password() {
        assert_eq!(
            redact("host=h password = 'a b\\'c' port=5"),
            "host=h password = *** port=5"
        );
        assert_eq!(redact("PASSWORD=Secret1"), "PASSWORD=***");
        assert_eq!(redact("password\t=Secret1 x"), "password\t=*** x");
        assert_eq!(redact("password\n=\nSecret1"), "password\n=\n***");
        assert_eq!(redact("sslpassword=k3y"), "sslpassword=***");
    }

    #[test]
    fn masks_uri_password() {
        assert_eq!(
            redact("postgres://lake:lakepw@127.0.0.1:55433/dltcat failed"),
            "postgres://lake:***@127.0.0.1:55433/dltcat failed"
        );
        assert_eq!(
            redact("postgres://h/d?password=pw&sslmode=require"),
            "postgres://h/d?password=***"
        );
    }

    #[test]
    fn leaves_other_text_alone() {
        let text = "s3://bucket/prefix/ and password policy and user@host";
        assert_eq!(redact(text), text);
    }
}
