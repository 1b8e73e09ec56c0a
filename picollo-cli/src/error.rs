//! The one error type of the tool: a single line that says what went wrong and what to do.

use core::fmt;

/// An error printed as `picollo: error: <message>`, with exit status 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CliError(String);

impl CliError {
    /// An error with this message; line breaks are folded into spaces so it stays one line.
    pub(crate) fn new(message: impl Into<String>) -> Self {
        let m: String = message.into();
        CliError(m.split(['\n', '\r']).collect::<Vec<_>>().join(" "))
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CliError {}

/// The result of every command.
pub(crate) type Result<T> = core::result::Result<T, CliError>;
