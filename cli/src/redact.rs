//! The one place a store URL (or anything an operator may have typed as one)
//! is made printable: every credential in it is replaced by `***`, while the
//! scheme, user, host, port, database and harmless parameters stay, so a
//! message still tells which store it is about.
//!
//! Forms handled:
//! * `scheme://user:password@host:port/db?...`: the password (multi-host
//!   URLs too; a password holding an unencoded `/`, `@`, `?` or `#` is still
//!   hidden: when in doubt, hide);
//! * query parameters whose key names a secret (`password`, `passfile`,
//!   `sslpassword`, `token`, `api_key`, ...; see [`is_secret_key`]);
//! * libpq key=value connection strings (`host=h password=secret`, quoted
//!   values included; an unterminated quote hides the rest);
//! * anything else with an `@` (a mistyped URL): what precedes the last `@`.

/// Placeholder for a hidden value.
pub const HIDDEN: &str = "***";

/// `text` with every credential it may hold replaced by [`HIDDEN`].
pub fn redact(text: &str) -> String {
    if text.starts_with("sqlite:") && !text.contains("://") {
        // A file path: no credentials. (`sqlite://` URLs go through the URL form.)
        return text.to_owned();
    }
    if let Some(scheme_end) = text.find("://").filter(|end| is_scheme(&text[..*end])) {
        let (scheme, rest) = (&text[..scheme_end], &text[scheme_end + 3..]);
        return format!("{scheme}://{}", redact_url_rest(rest));
    }
    if text.contains('=') {
        return redact_key_values(text);
    }
    match text.rfind('@') {
        Some(at) => format!("{HIDDEN}{}", &text[at..]),
        None => text.to_owned(),
    }
}

/// Free text (an error message from a library, a TOML parse error) with
/// [`redact`] applied to every word (split at whitespace and quotes) that
/// may be or hold a store URL: one with `://`, `@` or `=`.
pub fn redact_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut start = 0;
    let flush = |out: &mut String, word: &str| {
        if word.contains("://") || word.contains('@') || word.contains('=') {
            out.push_str(&redact(word));
        } else {
            out.push_str(word);
        }
    };
    for (index, c) in text.char_indices() {
        if c.is_whitespace() || matches!(c, '"' | '\'' | '`') {
            flush(&mut out, &text[start..index]);
            out.push(c);
            start = index + c.len_utf8();
        }
    }
    flush(&mut out, &text[start..]);
    out
}

/// `postgres`, `postgresql`, `sqlite`, `tcp`, `git+ssh`: a URL scheme (RFC 3986).
fn is_scheme(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|first| first.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Whether a parameter named `key` carries a secret (case-insensitive,
/// percent-decoded, `-`/`_` ignored).
pub fn is_secret_key(key: &str) -> bool {
    let key: String = percent_decode(key).to_lowercase().chars().filter(|c| *c != '-' && *c != '_').collect();
    const SECRET: [&str; 8] = ["pass", "pwd", "secret", "token", "key", "auth", "credential", "cookie"];
    SECRET.iter().any(|word| key.contains(word))
}

/// `user:password@host/db?query#fragment` (what follows `scheme://`).
fn redact_url_rest(rest: &str) -> String {
    let mut out = String::with_capacity(rest.len());
    let after_userinfo = match userinfo_end(rest) {
        Some(at) => {
            let userinfo = &rest[..at];
            match userinfo.find(':') {
                Some(colon) => {
                    out.push_str(&userinfo[..colon]);
                    out.push(':');
                    out.push_str(HIDDEN);
                }
                None => out.push_str(userinfo),
            }
            out.push('@');
            &rest[at + 1..]
        }
        None => rest,
    };
    // host[:port][,host2...]/db, then ?query, then #fragment
    let query_at = after_userinfo.find(['?', '#']).unwrap_or(after_userinfo.len());
    out.push_str(&after_userinfo[..query_at]);
    let tail = &after_userinfo[query_at..];
    let (query, fragment) = match tail.strip_prefix('?') {
        Some(query) => match query.find('#') {
            Some(hash) => (Some(&query[..hash]), &query[hash..]),
            None => (Some(query), ""),
        },
        None => (None, tail),
    };
    if let Some(query) = query {
        out.push('?');
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if is_secret_key(key) => format!("{key}={HIDDEN}"),
                _ => pair.to_owned(),
            })
            .collect();
        out.push_str(&pairs.join("&"));
    }
    // A fragment has no meaning to a store URL: never print it.
    if !fragment.is_empty() {
        out.push('#');
        out.push_str(HIDDEN);
    }
    out
}

/// Where the userinfo of `rest` ends (the `@`), if it has one.
fn userinfo_end(rest: &str) -> Option<usize> {
    let last_at = rest.rfind('@')?;
    let query_at = rest.find(['?', '#']).unwrap_or(rest.len());
    if last_at < query_at {
        return Some(last_at);
    }
    // An `@` after a `?` or `#`: a query holding an `@`, or a password holding
    // an unencoded `?` or `#` (`user:pa?ss@host`, `user:p@ss?x@host`).
    let head = &rest[..query_at];
    match head.rfind('@') {
        // `user:pw@host/db?x=a@b`: a host and a path before the query.
        Some(at) if head[at + 1..].split_once('/').is_some_and(|(host, _)| !host.is_empty()) => Some(at),
        // In doubt: hide up to the last `@` (the host is lost, the password never printed).
        Some(_) => Some(last_at),
        None => match head.find(':') {
            Some(colon) if !head[..colon].contains('/') => Some(last_at),
            _ => None,
        },
    }
}

/// A libpq connection string: `host=h port=5432 password='a b' dbname=d`.
fn redact_key_values(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() {
            out.push(c);
            chars.next();
            continue;
        }
        // The key: up to `=` or whitespace.
        let mut key_end = text.len();
        while let Some(&(index, c)) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                key_end = index;
                break;
            }
            chars.next();
        }
        let key = &text[start..key_end];
        // `user:pw@host` where a key should be (a mistyped URL): hide the userinfo.
        match key.rfind('@') {
            Some(at) => {
                out.push_str(HIDDEN);
                out.push_str(&key[at..]);
            }
            None => out.push_str(key),
        }
        // Whitespace, `=`, whitespace.
        let mut spacing = String::new();
        while let Some(&(_, c)) = chars.peek() {
            if !c.is_whitespace() {
                break;
            }
            spacing.push(c);
            chars.next();
        }
        if chars.peek().map(|&(_, c)| c) != Some('=') {
            // A bare word (not libpq syntax).
            out.push_str(&spacing);
            continue;
        }
        chars.next();
        out.push_str(&spacing);
        out.push('=');
        while let Some(&(_, c)) = chars.peek() {
            if !c.is_whitespace() {
                break;
            }
            out.push(c);
            chars.next();
        }
        // The value: 'quoted with \' escapes' or up to whitespace (\ escapes).
        let value_start = chars.peek().map_or(text.len(), |&(index, _)| index);
        let quoted = chars.peek().map(|&(_, c)| c) == Some('\'');
        if quoted {
            chars.next();
        }
        let mut value_end = None;
        let mut escaped = false;
        while let Some(&(index, c)) = chars.peek() {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if quoted && c == '\'' {
                chars.next();
                value_end = Some(index + 1);
                break;
            } else if !quoted && c.is_whitespace() {
                value_end = Some(index);
                break;
            }
            chars.next();
        }
        let value_end = match value_end {
            Some(end) => end,
            None if quoted => {
                // An unterminated quote: where the value ends is unknown.
                out.push_str(HIDDEN);
                return out;
            }
            None => text.len(),
        };
        if is_secret_key(key) {
            out.push_str(HIDDEN);
        } else {
            out.push_str(&text[value_start..value_end]);
        }
    }
    out
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            if let Some(byte) = bytes
                .get(index + 1..index + 3)
                .and_then(|hex| std::str::from_utf8(hex).ok().and_then(|hex| u8::from_str_radix(hex, 16).ok()))
            {
                decoded.push(byte);
                index += 3;
                continue;
            }
        }
        decoded.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_passwords() {
        assert_eq!(redact("postgres://u:pw@h:5432/d"), "postgres://u:***@h:5432/d");
        assert_eq!(redact("postgresql://u:pw@h/d?sslmode=require"), "postgresql://u:***@h/d?sslmode=require");
        assert_eq!(redact("postgres://u:p%40ss@h1:1,h2:2/d"), "postgres://u:***@h1:1,h2:2/d");
        assert_eq!(redact("postgres://u:pa/ss@w@h/d"), "postgres://u:***@h/d", "unencoded / and @");
        assert_eq!(redact("postgres://u:pa?ss@h/d"), "postgres://u:***@h/d", "unencoded ?");
        assert_eq!(redact("postgres://u:pa#ss@h/d"), "postgres://u:***@h/d", "unencoded #");
        assert_eq!(redact("postgres://u:p/a?ss@h/d"), "postgres://u:***@h/d", "unencoded / then ?");
        assert_eq!(redact("postgres://h:5432/d?x=@"), "postgres://h:***@", "in doubt, hidden");
        assert_eq!(redact("postgres://a:Pw@x?y@a:5432/db"), "postgres://a:***@a:5432/db", "unencoded @ then ?");
        assert_eq!(redact("postgres://u:pw@h/d?x=a@b"), "postgres://u:***@h/d?x=a@b", "an @ in the query");
        assert_eq!(redact("postgres://u@h/d?x=a@b"), "postgres://u@h/d?x=a@b");
        assert_eq!(redact("postgres://u:@h/d"), "postgres://u:***@h/d");
        assert_eq!(redact("sqlite://u:pw@h/d"), "sqlite://u:***@h/d");
        assert_eq!(redact("mysql://x:secret@h/d"), "mysql://x:***@h/d");
    }

    #[test]
    fn urls_without_credentials_are_unchanged() {
        for url in ["postgres://u@h/d", "postgres://h/d?x=@", "postgres://127.0.0.1:1/x", "postgres:///d?host=/run/pg"]
        {
            assert_eq!(redact(url), url);
        }
        assert_eq!(redact("sqlite:/a/b@c.db"), "sqlite:/a/b@c.db");
        assert_eq!(redact("sqlite:rel.db"), "sqlite:rel.db");
    }

    #[test]
    fn secret_query_parameters() {
        assert_eq!(
            redact("postgres://u@h/d?password=pw&sslmode=require"),
            "postgres://u@h/d?password=***&sslmode=require"
        );
        assert_eq!(redact("postgres://h/d?passfile=/home/u/.pgpass"), "postgres://h/d?passfile=***");
        assert_eq!(redact("postgres://h/d?sslpassword=pw&sslkey=/k"), "postgres://h/d?sslpassword=***&sslkey=***");
        assert_eq!(redact("postgres://h/d?PASSWORD=pw"), "postgres://h/d?PASSWORD=***");
        assert_eq!(redact("postgres://h/d?pass%77ord=pw"), "postgres://h/d?pass%77ord=***");
        assert_eq!(redact("postgres://h/d?api_key=k&token=t&x=1"), "postgres://h/d?api_key=***&token=***&x=1");
        assert_eq!(redact("postgres://u:a@h/d?password=b#frag"), "postgres://u:***@h/d?password=***#***");
    }

    #[test]
    fn key_value_connection_strings() {
        assert_eq!(
            redact("host=127.0.0.1 port=1 password=secret dbname=d"),
            "host=127.0.0.1 port=1 password=*** dbname=d"
        );
        assert_eq!(redact("host=h password = 'a b\\' c' user=u"), "host=h password = *** user=u");
        assert_eq!(redact("host=h password=a\\ b user=u"), "host=h password=*** user=u");
        assert_eq!(redact("host=h passfile=/p sslpassword=s"), "host=h passfile=*** sslpassword=***");
        assert_eq!(redact("host=h password='unterminated user=u"), "host=h password=***");
        assert_eq!(redact("host='unterminated password=secret"), "host=***");
        assert_eq!(redact("password="), "password=***");
        assert_eq!(redact("host=h junk u:pw@x"), "host=h junk ***@x");
        assert_eq!(redact("host=é password=ü"), "host=é password=***");
        assert_eq!(redact("postgres:u:pw@h?x=1"), "***@h?x=1");
        assert_eq!(redact("host=h password='a://b' port=1"), "host=h password=*** port=1");
    }

    #[test]
    fn other_text() {
        assert_eq!(redact("postgres//u:pw@h/d"), "***@h/d");
        assert_eq!(redact("just-a-name"), "just-a-name");
        assert_eq!(redact(""), "");
    }

    #[test]
    fn words_in_free_text() {
        assert_eq!(
            redact_text("invalid type: string \"postgres://u:pw@h/d\", expected a boolean"),
            "invalid type: string \"postgres://u:***@h/d\", expected a boolean"
        );
        assert_eq!(redact_text("bad `password=pw` near u:pw@h"), "bad `password=***` near ***@h");
        assert_eq!(
            redact_text("unknown field `stroe`, expected one of `store`"),
            "unknown field `stroe`, expected one of `store`"
        );
        assert_eq!(redact_text("é password=é x"), "é password=*** x");
    }

    #[test]
    fn secret_keys() {
        for key in ["password", "passfile", "sslpassword", "PassWord", "api-key", "API_KEY", "token", "secret"] {
            assert!(is_secret_key(key), "{key}");
        }
        for key in ["host", "port", "dbname", "user", "sslmode", "application_name"] {
            assert!(!is_secret_key(key), "{key}");
        }
    }
}
