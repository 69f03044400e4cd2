//! Why the kernel did not hash a table; the Python path then hashes it (or says why it cannot).

use std::any::Any;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelError {
    /// A column type the kernel does not write: the caller hands that column to the Python path.
    Unsupported(String),
    /// A value rows-v1 refuses or the kernel cannot read (a date outside the years 1 to 9999,
    /// invalid UTF-8, a null map key): the Python path reports it in its own words.
    Value(String),
    /// The caller's arguments do not fit the data (not one name and one raw flag per column):
    /// a bug in the caller, reported to it, never handed to the Python path.
    Arguments(String),
    /// The kernel panicked (a bug in it), caught before it reached Python: the Python path
    /// hashes the data.
    Panic(String),
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::Unsupported(text) => write!(f, "unsupported: {text}"),
            KernelError::Value(text) => write!(f, "value: {text}"),
            KernelError::Arguments(text) => write!(f, "arguments: {text}"),
            KernelError::Panic(text) => write!(f, "panic: {text}"),
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

/// What `work` returns, or `KernelError::Panic` with the panic's message when it panics (on
/// this thread, or on a hash thread: the pool carries a worker's panic back to its caller).
pub fn catch_panic<T>(work: impl FnOnce() -> T) -> Result<T> {
    // Unwind safety holds: the kernel only reads what `work` borrows (Arrow buffers, names),
    // what it builds is dropped with the panic, and the one shared state it changes, the kept
    // thread pools, is read past a poisoned lock (lanes::pool).
    catch_unwind(AssertUnwindSafe(work))
        .map_err(|payload| KernelError::Panic(message_of(&*payload)))
}

/// The text a panic was raised with (`panic!` gives a `&str` or a `String`).
fn message_of(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_that_returns_is_passed_through() {
        assert_eq!(catch_panic(|| 7), Ok(7));
    }

    #[test]
    fn a_panic_becomes_a_panic_error_with_its_message() {
        let caught = catch_panic(|| -> u8 { panic!("row {} has no column {}", 3, "b") });
        assert_eq!(
            caught,
            Err(KernelError::Panic("row 3 has no column b".to_string()))
        );
        let literal = catch_panic(|| -> u8 { panic!("plain") });
        assert_eq!(literal, Err(KernelError::Panic("plain".to_string())));
        let other = catch_panic(|| -> u8 { std::panic::panic_any(42_u32) });
        assert_eq!(
            other,
            Err(KernelError::Panic("a panic without a message".to_string()))
        );
    }

    #[test]
    fn a_panic_on_a_pool_thread_is_caught_on_the_calling_thread() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let caught = catch_panic(|| pool.install(|| -> u8 { panic!("on a worker") }));
        assert_eq!(caught, Err(KernelError::Panic("on a worker".to_string())));
        assert_eq!(pool.install(|| 1 + 1), 2); // the pool still runs work after it
    }
}
