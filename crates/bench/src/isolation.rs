//! The isolation level a benchmark's SQL sessions run at, set the same
//! way on every target, and the retry of statements that fail with a
//! serialization failure or a deadlock.
//!
//! ```text
//!  every session:  SET default_transaction_isolation = '<level>'
//!                  SHOW transaction_isolation   must say <level>
//!  a statement failing with 40001 or 40P01:  run again (same
//!                  parameters) until it succeeds or the run ends;
//!                  each attempt again counts as a retry
//! ```

use ndpdb_formats::SqlState;
use ndpdb_host::{Error, Result};

use crate::target::Conn;

/// An isolation level as SQL names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Level {
    /// A fresh snapshot per statement; the default of PostgreSQL and ndpdb.
    #[default]
    ReadCommitted,
    /// One snapshot per transaction (ndpdb's `Isolation::Snapshot`).
    RepeatableRead,
    Serializable,
}

impl Level {
    /// The values `--isolation` takes.
    pub const OPTION_VALUES: [&'static str; 3] =
        ["read-committed", "repeatable-read", "serializable"];

    /// The level's name as `SHOW transaction_isolation` reports it.
    pub fn name(self) -> &'static str {
        match self {
            Level::ReadCommitted => "read committed",
            Level::RepeatableRead => "repeatable read",
            Level::Serializable => "serializable",
        }
    }

    /// Parses `read-committed`, `read committed`, `read_committed`, … in
    /// any case.
    pub fn parse(s: &str) -> Option<Level> {
        let s = s.trim().to_ascii_lowercase().replace(['-', '_'], " ");
        [
            Level::ReadCommitted,
            Level::RepeatableRead,
            Level::Serializable,
        ]
        .into_iter()
        .find(|l| l.name() == s)
    }

    /// The statement that makes it a session's default.
    pub fn set_sql(self) -> String {
        format!("SET default_transaction_isolation = '{}'", self.name())
    }

    /// Makes it `conn`'s default and checks that the target reports it.
    pub fn apply(self, conn: &mut Conn) -> Result<()> {
        let sql = self.set_sql();
        conn.batch(&sql).map_err(|mut e| {
            e.message = format!("{sql}: {}", e.message);
            e
        })?;
        let shown = conn.query_text("SHOW transaction_isolation")?;
        if shown != self.name() {
            return Err(Error::new(
                SqlState::INTERNAL_ERROR,
                format!(
                    "after {sql} the session reports transaction_isolation = '{shown}', not '{}'",
                    self.name()
                ),
            ));
        }
        Ok(())
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A report's header line: `isolation: <what>`.
pub fn line(what: &str) -> String {
    format!("isolation: {what}")
}

/// Whether a statement that failed with `sqlstate` is run again: a
/// serialization failure (40001) or a deadlock (40P01), the errors a
/// PostgreSQL client retries (pgbench's `--max-tries`).
pub fn retryable(sqlstate: &str) -> bool {
    sqlstate == SqlState::SERIALIZATION_FAILURE.0 || sqlstate == SqlState::DEADLOCK_DETECTED.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_values_parse_to_the_names_sql_uses() {
        let levels: Vec<Level> = Level::OPTION_VALUES
            .iter()
            .map(|v| Level::parse(v).unwrap())
            .collect();
        assert_eq!(
            levels,
            [
                Level::ReadCommitted,
                Level::RepeatableRead,
                Level::Serializable
            ]
        );
        assert_eq!(Level::parse("REPEATABLE READ"), Some(Level::RepeatableRead));
        assert_eq!(Level::parse("snapshot"), None);
        assert_eq!(
            Level::Serializable.set_sql(),
            "SET default_transaction_isolation = 'serializable'"
        );
        assert_eq!(Level::default(), Level::ReadCommitted);
    }

    #[test]
    fn serialization_failures_and_deadlocks_are_retried() {
        assert!(retryable("40001"));
        assert!(retryable("40P01"));
        assert!(!retryable("23505"));
        assert!(!retryable("0A000"));
    }
}
