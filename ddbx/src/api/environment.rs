//! The environment a recording keeps: which of the program's variables the manifest stores,
//! which look secret (the record names them), which the user left out (`--env-exclude`), and,
//! in replay, taking those back from ddbx's own environment.
//!
//! The manifest is readable by its owner only (mode 0600 in a 0700 directory), but a
//! recording is something people copy and share: a variable named like a credential is worth
//! a line at the end of the record.

use crate::error::Error;

/// Words that make a variable's name look secret when they appear anywhere in it.
const SECRET_PARTS: &[&str] = &[
    "SECRET",
    "TOKEN",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "PRIVATE",
    "APIKEY",
    "API_KEY",
    "COOKIE",
];

/// Words that make it look secret when they are one of its `_`-separated parts (`KEY` in
/// `AWS_SECRET_ACCESS_KEY`, not in `KEYBOARD`).
const SECRET_WORDS: &[&str] = &["KEY", "AUTH", "PASS", "PWD", "PW"];

/// Whether a variable's name looks like it holds a secret. `PWD` and `OLDPWD` (directories)
/// do not.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if upper == "PWD" || upper == "OLDPWD" {
        return false;
    }
    SECRET_PARTS.iter().any(|part| upper.contains(part))
        || upper.split('_').any(|word| SECRET_WORDS.contains(&word))
}

/// Whether `name` matches the shell-style `pattern`: `*` any run of characters, `?` one
/// character, anything else itself (case-sensitive, as variable names are).
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // The classic two-pointer match with one backtrack point (the last `*`).
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        match p.get(i) {
            Some('*') => {
                star = Some((i, j));
                i += 1;
            }
            Some(c) if *c == '?' || *c == n[j] => {
                i += 1;
                j += 1;
            }
            _ => match star {
                Some((si, sj)) => {
                    i = si + 1;
                    j = sj + 1;
                    star = Some((si, sj + 1));
                }
                None => return false,
            },
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

/// The program's environment split for the manifest: (the variables it stores, the names of
/// those `exclude` leaves out). The program itself gets them all.
pub fn split(env: &[(String, String)], exclude: &[String]) -> (Vec<(String, String)>, Vec<String>) {
    let (left_out, kept): (Vec<_>, Vec<_>) = env
        .iter()
        .cloned()
        .partition(|(name, _)| exclude.iter().any(|p| glob_matches(p, name)));
    (kept, left_out.into_iter().map(|(name, _)| name).collect())
}

/// The line a record shows when the manifest keeps variables that look secret.
pub fn secret_note(stored: &[(String, String)]) -> Option<String> {
    let names: Vec<&str> = stored
        .iter()
        .map(|(name, _)| name.as_str())
        .filter(|name| looks_secret(name))
        .collect();
    (!names.is_empty()).then(|| {
        format!(
            "ddbx: the recording keeps environment variables whose names look secret: {} \
             (readable by you only; `ddbx record --env-exclude PATTERN` leaves variables out, \
             and replay then takes them from its own environment)",
            names.join(", ")
        )
    })
}

/// A replay's environment: the manifest's, plus each variable the record left out, taken
/// from ddbx's own environment. Missing ones are a usage error naming them.
pub fn with_left_out(
    stored: &[(String, String)],
    left_out: &[String],
) -> Result<Vec<(String, String)>, Error> {
    let mut env = stored.to_vec();
    let mut missing = Vec::new();
    for name in left_out {
        match std::env::var_os(name) {
            Some(value) => env.push((name.clone(), value.to_string_lossy().into_owned())),
            None => missing.push(name.as_str()),
        }
    }
    if missing.is_empty() {
        return Ok(env);
    }
    Err(Error::Usage(format!(
        "the recording left out environment variables that the program had ({}); set them \
         for the replay: missing {}",
        left_out.join(", "),
        missing.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_are_recognised() {
        for name in [
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "PGPASSWORD",
            "DB_PASS",
            "STRIPE_API_KEY",
            "my_private_thing",
            "SSH_AUTH_SOCK",
        ] {
            assert!(looks_secret(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "PWD",
            "OLDPWD",
            "KEYBOARD_LAYOUT",
            "LANG",
            "TERM",
        ] {
            assert!(!looks_secret(name), "{name}");
        }
    }

    #[test]
    fn globs_match_like_a_shell() {
        assert!(glob_matches("AWS_*", "AWS_SECRET_ACCESS_KEY"));
        assert!(glob_matches("*TOKEN", "GITHUB_TOKEN"));
        assert!(glob_matches("*_KEY_*", "A_KEY_B"));
        assert!(glob_matches("A?C", "ABC"));
        assert!(glob_matches("*", ""));
        assert!(!glob_matches("AWS_*", "XAWS_A"));
        assert!(!glob_matches("A?C", "AC"));
        assert!(glob_matches("*a*b*", "xxaxxbxx"));
        assert!(!glob_matches("*a*b", "xxaxxbxxc"));
    }

    #[test]
    fn left_out_variables_come_back_from_the_environment() {
        let env = vec![
            ("PATH".to_string(), "/bin".to_string()),
            ("AWS_SECRET_ACCESS_KEY".to_string(), "hunter2".to_string()),
        ];
        let (kept, left_out) = split(&env, &["AWS_*".to_string()]);
        assert_eq!(kept, vec![env[0].clone()]);
        assert_eq!(left_out, vec!["AWS_SECRET_ACCESS_KEY".to_string()]);
        assert!(secret_note(&kept).is_none());
        assert!(secret_note(&env).unwrap().contains("AWS_SECRET_ACCESS_KEY"));
        let missing = ["DDBX_TEST_SURELY_UNSET_VARIABLE".to_string()];
        let e = with_left_out(&kept, &missing).unwrap_err();
        assert!(
            e.to_string()
                .contains("missing DDBX_TEST_SURELY_UNSET_VARIABLE"),
            "{e}"
        );
        let back = with_left_out(&kept, &["PATH".to_string()]).unwrap();
        assert_eq!(back.len(), 2);
    }
}
