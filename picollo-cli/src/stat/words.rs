//! Shell-like command strings: [`split_command`] splits a command into words as a POSIX shell
//! would (no expansion of any kind; the `shell-words` crate does the splitting),
//! [`show_command`] quotes words back for display. A leaf.

use std::ffi::OsString;

use crate::error::{CliError, Result};

/// Splits `what` (the `--vs` command, a command run without a shell, a hook) as a POSIX shell
/// splits words: blanks separate, single quotes keep everything, double quotes keep
/// everything but `\"`, `\\`, `\$` and `` \` ``, a backslash outside quotes escapes the next
/// character, `#` at the start of a word begins a comment. No expansion of any kind.
///
/// # Errors
/// An unclosed quote, or no word at all.
pub(crate) fn split_command(s: &str, what: &str) -> Result<Vec<OsString>> {
    let words = shell_words::split(s).map_err(|e| {
        CliError::new(format!(
            "cannot split {what} {s:?} into words: {e} (unclosed quote); close it"
        ))
    })?;
    if words.is_empty() {
        return Err(CliError::new(format!(
            "{what} is empty; give the command, quoted: {what} 'sleep 0.1'"
        )));
    }
    Ok(words.into_iter().map(OsString::from).collect())
}

/// A command line for display: arguments with blanks, quotes, `\\`, `$` or `` ` `` are
/// single-quoted (fewer than `shell_words::join` quotes: `CC=gcc` and `*.c` stay as typed).
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
        let w = split_command(r#"sh -c 'echo "a b"' x\ y "q\"z" # a comment"#, "--vs").unwrap();
        assert_eq!(w, ["sh", "-c", "echo \"a b\"", "x y", "q\"z"]);
        let e = split_command("echo 'oops", "--vs").unwrap_err().to_string();
        assert!(e.contains("unclosed quote"), "{e}");
        assert!(split_command("   ", "--vs").is_err());
        assert_eq!(show_command(&w), r#"sh -c 'echo "a b"' 'x y' 'q"z'"#);
    }
}
