//! One error type for everything this crate does against RADOS.

/// What a RADOS call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// librados could not be loaded (not installed, or too old).
    #[error("librados is not available: {0}")]
    Unavailable(String),
    /// The cluster could not be reached or refused the client.
    #[error("cannot connect to the Ceph cluster ({conf}): {reason}")]
    Connect { conf: String, reason: String },
    /// The object (or pool) does not exist.
    #[error("{0} does not exist")]
    NotFound(String),
    /// An exclusive create found the object there.
    #[error("{0} already exists")]
    Exists(String),
    /// A compare-and-write found other bytes than expected; nothing of
    /// the operation was applied.
    #[error("compare-and-write on {oid}: the object differs at byte {offset}")]
    Mismatch { oid: String, offset: u64 },
    /// An object-class method returned more than the reply buffer holds.
    #[error("{op}: the reply is larger than {cap} bytes")]
    ReplyTooLarge { op: String, cap: usize },
    /// Any other failure, as librados' negative errno.
    #[error("{op}: {}", std::io::Error::from_raw_os_error(*.errno))]
    Os { op: String, errno: i32 },
    /// A name with a NUL byte in it.
    #[error("{0:?}: names may not contain NUL")]
    BadName(String),
}

impl Error {
    /// The error for a negative librados return value `r` of `op` on `what`.
    pub(crate) fn from_ret(r: i64, op: &str, what: &str) -> Error {
        match -r {
            e if e == i64::from(libc::ENOENT) => Error::NotFound(what.to_string()),
            e if e == i64::from(libc::EEXIST) => Error::Exists(what.to_string()),
            e => Error::Os {
                op: format!("{op} {what}"),
                errno: i32::try_from(e).unwrap_or(libc::EIO),
            },
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// `Ok(r)` for `r >= 0`, the error otherwise.
pub(crate) fn check(r: i64, op: &str, what: &str) -> Result<i64> {
    if r < 0 {
        Err(Error::from_ret(r, op, what))
    } else {
        Ok(r)
    }
}
