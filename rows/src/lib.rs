//! The rows-v1 kernel of `ubunye_rows`: canonical lines of Arrow data written in one pass per
//! row range, each hashed with SHA-256 (SHA extensions where the CPU has them), summed into the
//! two lanes and the 256-bucket sketch, on threads with the GIL released.
//!
//! The Python path (`ubunye_rows.hashing.canonical`) is the specification; every text this crate
//! writes is held to it byte for byte by the differential tests.

pub mod decimal;
pub mod error;
pub mod floats;
pub mod lanes;
pub mod line;
pub mod strings;
pub mod temporal;
pub mod text;
pub mod writer;

#[cfg(feature = "python")]
mod import;
#[cfg(feature = "python")]
mod python;

/// True when this CPU has the SHA extensions the SHA-256 here uses.
pub fn sha_extensions() -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        std::is_x86_feature_detected!("sha") && std::is_x86_feature_detected!("sse4.1")
    }
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("sha2")
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}
