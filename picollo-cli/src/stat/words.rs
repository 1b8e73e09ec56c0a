//! Shell-like command strings: [`split_command`] splits a command into words as a POSIX shell
//! would (no expansion of any kind), [`show_command`] quotes words back for display. A leaf.

use std::ffi::OsString;

use crate::error::{CliError, Result};

/// Splits a command line as a POSIX shell would split words: whitespace separates, single
/// quotes keep everything, double quotes keep everything but `\"` and `\\`, a backslash
/// outside quotes escapes the next character. No expansion of any kind.
///
/// # Errors
/// An unclosed quote or a trailing backslash, or an empty command.
pub(crate) fn split_command(s: &str) -> Result<Vec<OsString>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    let unclosed = || CliError::new(format!("unclosed quote in --vs {s:?}; close it"));
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err(unclosed()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => cur.push(c),
                            Some(c) => {
                                cur.push('\\');
                                cur.push(c);
                            }
                            None => return Err(unclosed()),
                        },
                        Some(c) => cur.push(c),
                        None => return Err(unclosed()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => {
                    in_word = true;
                    cur.push(c);
                }
                None => {
                    return Err(CliError::new(format!(
                        "trailing backslash in --vs {s:?}; remove it"
                    )))
                }
            },
            c if c.is_whitespace() => {
                if in_word {
                    words.push(OsString::from(core::mem::take(&mut cur)));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(OsString::from(cur));
    }
    if words.is_empty() {
        return Err(CliError::new(
            "--vs is empty; give the other command, quoted: --vs 'sleep 0.1'",
        ));
    }
    Ok(words)
}

/// A command line for display: arguments with spaces or quotes are single-quoted.
pub(crate) fn show_command(argv: &[OsString]) -> String {
    argv.iter()
        .map(|a| {
            let a = a.to_string_lossy();
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"\\$`".contains(c)) {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_split_like_a_shell() {
        let w = split_command(r#"sh -c 'echo "a b"' x\ y "q\"z""#).unwrap();
        assert_eq!(w, ["sh", "-c", "echo \"a b\"", "x y", "q\"z"]);
        assert!(split_command("echo 'oops").is_err());
        assert!(split_command("   ").is_err());
        assert_eq!(show_command(&w), r#"sh -c 'echo "a b"' 'x y' 'q"z'"#);
    }
}
