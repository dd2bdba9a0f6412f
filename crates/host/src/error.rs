//! The host error: a SQLSTATE, a message and optional detail and hint lines.

use ndpdb_formats::SqlState;
use ndpdb_link::LinkError;
use ndpdb_wal::WalError;

#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub code: SqlState,
    pub message: String,
    pub detail: Option<String>,
    /// PostgreSQL's HINT line.
    pub hint: Option<String>,
    /// The routine PostgreSQL names in its R field, for the few errors
    /// clients recognise by it (drivers prepare a statement again on
    /// `RevalidateCachedQuery` and `FetchPreparedStatement`).
    pub routine: Option<&'static str>,
}

impl Error {
    pub fn new(code: SqlState, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
            detail: None,
            hint: None,
            routine: None,
        }
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Error {
        self.detail = Some(detail.into());
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Error {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_routine(mut self, routine: &'static str) -> Error {
        self.routine = Some(routine);
        self
    }

    pub fn serialization() -> Error {
        Error::new(
            SqlState::SERIALIZATION_FAILURE,
            "could not serialize access due to concurrent update",
        )
    }

    pub fn undefined_table(name: &str) -> Error {
        Error::new(
            SqlState::UNDEFINED_TABLE,
            format!("relation \"{name}\" does not exist"),
        )
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some(d) = &self.detail {
            write!(f, " ({d})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

impl From<ndpdb_formats::Error> for Error {
    fn from(e: ndpdb_formats::Error) -> Error {
        let code = e.sqlstate();
        match e {
            ndpdb_formats::Error::Sql {
                message,
                detail,
                hint,
                ..
            } => {
                let mut e = Error::new(code, message);
                e.detail = detail;
                e.hint = hint;
                e
            }
            other => Error::new(code, other.to_string()),
        }
    }
}

impl From<LinkError> for Error {
    fn from(e: LinkError) -> Error {
        let code = match e {
            LinkError::Corrupted(_) => SqlState::DATA_CORRUPTED,
            // sqlserver_rejected_establishment_of_sqlconnection
            LinkError::Refused(_) => SqlState::SQLSERVER_REJECTED_ESTABLISHMENT_OF_SQLCONNECTION,
            // connection_failure: the device is gone, or came back and the
            // host is reattaching; the statement may be retried.
            LinkError::Transport(_) | LinkError::Restarted(_) => SqlState::CONNECTION_FAILURE,
            _ => SqlState::IO_ERROR,
        };
        Error::new(code, e.to_string())
    }
}

impl From<WalError> for Error {
    fn from(e: WalError) -> Error {
        Error::new(SqlState::IO_ERROR, e.to_string())
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::new(SqlState::IO_ERROR, e.to_string())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
