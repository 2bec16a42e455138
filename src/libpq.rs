//! libpq connection strings, parsed the way libpq parses them (pure).
//!
//! A PostgreSQL catalog's `metadata = "postgres:<conninfo>"` reaches libpq unchanged (DuckLake
//! hands it to the PostgreSQL scanner), so srdp must read it exactly as libpq does to know
//! whether it carries a password: `key = value` pairs separated by any white space, with white
//! space allowed around `=`, values either single-quoted (backslash escapes any character) or
//! bare (up to white space; backslash escapes the next character), or the URI form
//! `postgresql://[user[:password]@][host][:port][/dbname][?key=value&...]` with percent-encoding
//! (libpq's `conninfo_parse` and `conninfo_uri_parse`, `src/interfaces/libpq/fe-connect.c`).
//!
//! Errors never contain the text they were given: a malformed string may be a password typed
//! in the wrong place, so they name a character position only.

use std::fmt;

/// The keys whose values are secrets. libpq knows `password` (the login password) and
/// `sslpassword` (the passphrase of the client key); keys are compared case-insensitively so
/// that a misspelt `PASSWORD` (which libpq would reject) is still never shown.
const SECRET_KEYS: [&str; 2] = ["password", "sslpassword"];

/// What is wrong with a connection string, without any of its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// A key without `=` after it (libpq: `missing "=" after "..." in connection info string`).
    MissingEquals { position: usize },
    /// A single-quoted value that never closes.
    UnterminatedQuote { position: usize },
    /// A URI whose `%XX` escape is not two hex digits or decodes to invalid UTF-8.
    BadPercentEncoding { position: usize },
    /// A URI query parameter without `=`.
    BadUriParameter { position: usize },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::MissingEquals { position } => write!(
                f,
                "a key at character {position} has no \"=\" after it (libpq expects key=value pairs separated by spaces)"
            ),
            ParseError::UnterminatedQuote { position } => write!(
                f,
                "the quoted value starting at character {position} is not closed with '"
            ),
            ParseError::BadPercentEncoding { position } => write!(
                f,
                "the %-escape at character {position} is not two hex digits of UTF-8"
            ),
            ParseError::BadUriParameter { position } => write!(
                f,
                "the URI parameter at character {position} has no \"=\""
            ),
        }
    }
}

/// A parsed connection string: its `(key, value)` pairs in order, URI parts included
/// (`user`, `password`, `host`, `port`, `dbname` and the query parameters).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnInfo {
    pub pairs: Vec<(String, String)>,
}

impl ConnInfo {
    /// The last value given for `key` (libpq: a later setting wins).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The secret-bearing keys present (`password`, `sslpassword`), in order, each once.
    pub fn secret_keys(&self) -> Vec<String> {
        let mut found: Vec<String> = Vec::new();
        for (k, _) in &self.pairs {
            let lower = k.to_ascii_lowercase();
            if is_secret_key(&lower) && !found.contains(&lower) {
                found.push(lower);
            }
        }
        found
    }
}

fn is_secret_key(lower: &str) -> bool {
    SECRET_KEYS.contains(&lower)
}

/// libpq's white space (C `isspace` in the "C" locale).
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// Parses a connection string as libpq does: the URI form when it starts with `postgresql://`
/// or `postgres://`, otherwise `key=value` pairs.
pub fn parse(conninfo: &str) -> Result<ConnInfo, ParseError> {
    if uri_prefix_len(conninfo).is_some() {
        parse_uri(conninfo)
    } else {
        parse_key_values(conninfo)
    }
}

fn uri_prefix_len(s: &str) -> Option<usize> {
    ["postgresql://", "postgres://"]
        .iter()
        .find(|p| s.len() >= p.len() && s.as_bytes()[..p.len()].eq_ignore_ascii_case(p.as_bytes()))
        .map(|p| p.len())
}

fn parse_key_values(s: &str) -> Result<ConnInfo, ParseError> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut pairs = Vec::new();
    loop {
        while i < b.len() && is_space(b[i]) {
            i += 1;
        }
        if i >= b.len() {
            return Ok(ConnInfo { pairs });
        }
        let key_start = i;
        while i < b.len() && b[i] != b'=' && !is_space(b[i]) {
            i += 1;
        }
        let key = &s[key_start..i];
        while i < b.len() && is_space(b[i]) {
            i += 1;
        }
        if i >= b.len() || b[i] != b'=' {
            return Err(ParseError::MissingEquals {
                position: key_start + 1,
            });
        }
        i += 1;
        while i < b.len() && is_space(b[i]) {
            i += 1;
        }
        let mut value = Vec::new();
        if i < b.len() && b[i] == b'\'' {
            let quote_at = i;
            i += 1;
            loop {
                match b.get(i) {
                    None => {
                        return Err(ParseError::UnterminatedQuote {
                            position: quote_at + 1,
                        })
                    }
                    Some(b'\\') => {
                        if let Some(&c) = b.get(i + 1) {
                            value.push(c);
                        }
                        i += 2;
                    }
                    Some(b'\'') => {
                        i += 1;
                        break;
                    }
                    Some(&c) => {
                        value.push(c);
                        i += 1;
                    }
                }
            }
        } else {
            while i < b.len() && !is_space(b[i]) {
                if b[i] == b'\\' {
                    i += 1;
                    if let Some(&c) = b.get(i) {
                        value.push(c);
                    }
                } else {
                    value.push(b[i]);
                }
                i += 1;
            }
        }
        pairs.push((
            key.to_string(),
            String::from_utf8_lossy(&value).into_owned(),
        ));
    }
}

fn parse_uri(s: &str) -> Result<ConnInfo, ParseError> {
    let start = uri_prefix_len(s).unwrap_or(0);
    let rest = &s[start..];
    let (main, query, query_at) = match rest.find('?') {
        Some(q) => (&rest[..q], Some(&rest[q + 1..]), start + q + 1),
        None => (rest, None, s.len()),
    };
    let (authority, dbname) = match main.find('/') {
        Some(slash) => (
            &main[..slash],
            Some((&main[slash + 1..], start + slash + 1)),
        ),
        None => (main, None),
    };
    let mut pairs = Vec::new();
    let mut hosts = authority;
    let mut hosts_at = start;
    if let Some(at) = authority.rfind('@') {
        let userinfo = &authority[..at];
        hosts = &authority[at + 1..];
        hosts_at = start + at + 1;
        match userinfo.find(':') {
            Some(colon) => {
                pairs.push(("user".into(), decode(&userinfo[..colon], start)?));
                pairs.push((
                    "password".into(),
                    decode(&userinfo[colon + 1..], start + colon + 1)?,
                ));
            }
            None => pairs.push(("user".into(), decode(userinfo, start)?)),
        }
    }
    if !hosts.is_empty() {
        // host[:port][,host[:port]...]; an IPv6 host is in brackets.
        let (host, port) = split_host_port(hosts);
        pairs.push(("host".into(), decode(host, hosts_at)?));
        if let Some(port) = port {
            pairs.push(("port".into(), decode(port, hosts_at)?));
        }
    }
    if let Some((db, at)) = dbname {
        if !db.is_empty() {
            pairs.push(("dbname".into(), decode(db, at)?));
        }
    }
    if let Some(query) = query {
        let mut at = query_at;
        for param in query.split('&') {
            if !param.is_empty() {
                let (k, v) = param
                    .split_once('=')
                    .ok_or(ParseError::BadUriParameter { position: at + 1 })?;
                pairs.push((decode(k, at)?, decode(v, at + k.len() + 1)?));
            }
            at += param.len() + 1;
        }
    }
    Ok(ConnInfo { pairs })
}

fn split_host_port(hosts: &str) -> (&str, Option<&str>) {
    if hosts.contains(',') {
        return (hosts, None); // several hosts: kept as libpq's comma list
    }
    let search_from = if hosts.starts_with('[') {
        hosts.find(']').unwrap_or(0)
    } else {
        0
    };
    match hosts[search_from..].rfind(':') {
        Some(c) => (
            &hosts[..search_from + c],
            Some(&hosts[search_from + c + 1..]),
        ),
        None => (hosts, None),
    }
}

/// Percent-decoding of a URI part that starts at byte `offset` of the whole string.
fn decode(part: &str, offset: usize) -> Result<String, ParseError> {
    let b = part.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = part
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or(ParseError::BadPercentEncoding {
                    position: offset + i + 1,
                })?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| ParseError::BadPercentEncoding {
        position: offset + 1,
    })
}

/// Quotes a value for a libpq `key=value` string: bare when it is a plain word, otherwise
/// single-quoted with `\` and `'` escaped.
pub fn quote_value(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .bytes()
            .all(|b| !is_space(b) && b != b'\'' && b != b'\\');
    if plain {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// Byte ranges `(value_start, value_end)` of every secret value in `text`, found by libpq's
/// own rules wherever a secret key (`password`, `sslpassword`, any case) is followed by `=`
/// (white space allowed around it), and the password of every `scheme://user:password@` URI.
/// `text` may be a whole error message with a connection string somewhere inside it, so the
/// ranges err on the side of covering too much.
pub fn secret_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut ranges = key_value_secret_ranges(text);
    ranges.extend(uri_password_ranges(text));
    ranges.sort_unstable();
    ranges
}

fn key_value_secret_ranges(text: &str) -> Vec<(usize, usize)> {
    let lower = text.to_ascii_lowercase();
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = lower[from..].find("password") {
        let mut i = from + found + "password".len();
        from = i;
        while i < b.len() && is_space(b[i]) {
            i += 1;
        }
        if i >= b.len() || b[i] != b'=' {
            continue;
        }
        i += 1;
        while i < b.len() && is_space(b[i]) {
            i += 1;
        }
        let start = i;
        if i < b.len() && b[i] == b'\'' {
            i += 1;
            while i < b.len() && b[i] != b'\'' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
        } else {
            while i < b.len() && !is_space(b[i]) {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = i.min(b.len());
        }
        // Never end inside a UTF-8 character.
        while i < b.len() && !text.is_char_boundary(i) {
            i += 1;
        }
        out.push((start, i));
        from = i.max(from);
    }
    out
}

fn uri_password_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let authority_start = from + found + 3;
        let tail = &text[authority_start..];
        // The authority ends at the first '/', white space or quote after the last '@' that
        // precedes any of those; a password may itself contain '/', so look for '@' first.
        let stop = tail
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'')
            .unwrap_or(tail.len());
        let segment = &tail[..stop];
        if let Some(at) = segment.rfind('@') {
            if let Some(colon) = segment[..at].find(':') {
                out.push((authority_start + colon + 1, authority_start + at));
            }
        }
        from = authority_start;
    }
    out
}

#[cfg(test)]
mod tests;
