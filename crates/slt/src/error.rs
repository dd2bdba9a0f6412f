//! Errors of the shared lock table.

use ndpdb_formats::SqlState;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SltError {
    /// A bucket or header in shared memory holds values no writer makes.
    #[error("corrupted shared lock table: {0}")]
    Corrupted(String),
    /// A release by someone who is not the holder.
    #[error("not the holder of the lock: {0}")]
    NotHolder(String),
    /// A device lock request waited longer than allowed.
    #[error("lock wait timed out")]
    Timeout,
    /// The waiter was told to stop (its job failed elsewhere).
    #[error("lock wait cancelled")]
    Cancelled,
    #[error("shared memory: {0}")]
    Io(String),
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A table in another process's memory could not be reached.
    #[error("shared lock table unreachable: {0}")]
    Unavailable(String),
}

impl SltError {
    /// The PostgreSQL SQLSTATE a client sees for this error.
    pub fn sqlstate(&self) -> SqlState {
        match self {
            SltError::Corrupted(_) => SqlState::DATA_CORRUPTED,
            SltError::NotHolder(_) => SqlState::INTERNAL_ERROR,
            SltError::Timeout => SqlState::LOCK_NOT_AVAILABLE,
            SltError::Cancelled => SqlState::QUERY_CANCELED,
            SltError::Io(_) => SqlState::IO_ERROR,
            SltError::Unsupported(_) => SqlState::FEATURE_NOT_SUPPORTED,
            SltError::Unavailable(_) => SqlState::CONNECTION_FAILURE,
        }
    }
}

pub type Result<T, E = SltError> = std::result::Result<T, E>;
