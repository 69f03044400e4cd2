//! Why the kernel did not hash a table; the Python path then hashes it (or says why it cannot).

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelError {
    /// A column type the kernel does not write: the caller hands that column to the Python path.
    Unsupported(String),
    /// A value rows-v1 refuses or the kernel cannot read (a date outside the years 1 to 9999,
    /// invalid UTF-8, a null map key): the Python path reports it in its own words.
    Value(String),
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::Unsupported(text) => write!(f, "unsupported: {text}"),
            KernelError::Value(text) => write!(f, "value: {text}"),
        }
    }
}

impl std::error::Error for KernelError {}

impl From<crate::temporal::OutOfRange> for KernelError {
    fn from(error: crate::temporal::OutOfRange) -> Self {
        KernelError::Value(error.0)
    }
}

pub type Result<T> = std::result::Result<T, KernelError>;
