use super::*;

fn pairs(s: &str) -> Vec<(String, String)> {
    parse(s).unwrap().pairs
}

fn kv(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn key_values_with_any_white_space_around_equals() {
    assert_eq!(
        pairs("dbname=x host=127.0.0.1 port=1 password\t=Secret1"),
        kv(&[
            ("dbname", "x"),
            ("host", "127.0.0.1"),
            ("port", "1"),
            ("password", "Secret1")
        ])
    );
    assert_eq!(
        pairs("dbname = x\npassword\n=\r\nSecret1\x0bport=\x0c5"),
        kv(&[("dbname", "x"), ("password", "Secret1"), ("port", "5")])
    );
}

#[test]
fn quoted_and_escaped_values() {
    assert_eq!(
        pairs(r"password='a b\'c\\' dbname=d\ e"),
        kv(&[("password", r"a b'c\"), ("dbname", "d e")])
    );
    assert_eq!(
        pairs("application_name=''"),
        kv(&[("application_name", "")])
    );
    assert_eq!(pairs("   "), kv(&[]));
}

#[test]
fn malformed_strings_name_a_position_only() {
    let e = parse("dbname=x Secret1").unwrap_err();
    assert_eq!(e, ParseError::MissingEquals { position: 10 });
    assert_eq!(
        e.to_string(),
        "a key at character 10 has no \"=\" after it (libpq expects key=value pairs separated by spaces)"
    );
    let e = parse("dbname=x password='Secret1").unwrap_err();
    assert_eq!(
        e.to_string(),
        "the quoted value starting at character 19 is not closed with '"
    );
    assert!(!e.to_string().contains("Secret1"));
}

#[test]
fn uri_form() {
    assert_eq!(
        pairs("postgresql://u%40x:p%3Aw@db.internal:5433/lake%20cat?sslmode=require&password=two"),
        kv(&[
            ("user", "u@x"),
            ("password", "p:w"),
            ("host", "db.internal"),
            ("port", "5433"),
            ("dbname", "lake cat"),
            ("sslmode", "require"),
            ("password", "two"),
        ])
    );
    assert_eq!(
        pairs("postgres://[::1]:5432/d"),
        kv(&[("host", "[::1]"), ("port", "5432"), ("dbname", "d")])
    );
    assert_eq!(pairs("POSTGRES://h"), kv(&[("host", "h")]));
    assert_eq!(
        parse("postgres://h/d?x").unwrap_err().to_string(),
        "the URI parameter at character 16 has no \"=\""
    );
    assert_eq!(
        parse("postgres://u:%zz@h/d").unwrap_err(),
        ParseError::BadPercentEncoding { position: 14 }
    );
}

#[test]
fn secret_keys_in_every_form() {
    for s in [
        "password=x",
        "password =x",
        "password\t= x",
        "password\n=x",
        "PASSWORD=x",
        "host=h sslpassword='x y'",
        "postgres://u:x@h/d",
        "postgresql://h/d?password=x",
    ] {
        assert!(!parse(s).unwrap().secret_keys().is_empty(), "{s:?}");
    }
    assert!(parse("dbname=password host=h user=password_user")
        .unwrap()
        .secret_keys()
        .is_empty());
    assert_eq!(parse("dbname=a dbname=b").unwrap().get("dbname"), Some("b"));
}

#[test]
fn quoting_round_trips() {
    for v in ["plain", "a b", "it's", r"back\slash", "", "tab\there", "é"] {
        let s = format!("k={}", quote_value(v));
        assert_eq!(parse(&s).unwrap().get("k"), Some(v), "{s}");
    }
    assert_eq!(quote_value("lake"), "lake");
    assert_eq!(quote_value("a b'c"), r"'a b\'c'");
}

#[test]
fn secret_ranges_cover_libpq_values_inside_messages() {
    let text = "catalog \"postgres:dbname=x password\t=Secret1\" failed; URI postgres://u:pw@h/d";
    let masked: Vec<&str> = secret_ranges(text)
        .iter()
        .map(|&(a, b)| &text[a..b])
        .collect();
    assert_eq!(masked, ["Secret1\"", "pw"]);
}
