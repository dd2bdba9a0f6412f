//! BEGIN and SET TRANSACTION: the modes a transaction block starts with
//! (isolation level, READ ONLY / READ WRITE, DEFERRABLE) and their names
//! as PostgreSQL spells them in settings.
//!
//! ```text
//!  BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY
//!     └─► isolation_of ─► Isolation::Serializable ─► begin_tx
//!  SET TRANSACTION … inside a block ─► the open transaction's modes
//!  SET default_transaction_isolation = 'repeatable read' ─► parse_isolation_name
//! ```
//!
//! A BEGIN inside a block warns (25001) and applies its modes as SET
//! TRANSACTION would; SET TRANSACTION after the first query of a block
//! is refused (25001), as in PostgreSQL.

use super::*;

pub(super) fn isolation_of(modes: &[TransactionMode]) -> Result<Option<Isolation>> {
    let mut out = None;
    for m in modes {
        if let TransactionMode::IsolationLevel(l) = m {
            out = Some(match l {
                TransactionIsolationLevel::ReadCommitted
                | TransactionIsolationLevel::ReadUncommitted => Isolation::ReadCommitted,
                TransactionIsolationLevel::RepeatableRead | TransactionIsolationLevel::Snapshot => {
                    Isolation::Snapshot
                }
                TransactionIsolationLevel::Serializable => Isolation::Serializable,
            });
        }
    }
    Ok(out)
}

pub(super) fn isolation_name(i: Isolation) -> &'static str {
    match i {
        Isolation::Snapshot => "repeatable read",
        Isolation::ReadCommitted => "read committed",
        Isolation::Serializable => "serializable",
    }
}

pub(super) fn parse_isolation_name(s: &str) -> Result<Isolation> {
    match s.trim().to_lowercase().as_str() {
        "read committed" | "read uncommitted" => Ok(Isolation::ReadCommitted),
        "repeatable read" | "snapshot" => Ok(Isolation::Snapshot),
        "serializable" => Ok(Isolation::Serializable),
        other => Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"default_transaction_isolation\": \"{other}\""),
        )),
    }
}

impl Session {
    /// `BEGIN` / `START TRANSACTION [modes]`, as PostgreSQL runs it:
    /// outside a transaction it opens a block with the modes; inside an
    /// implicit transaction it makes that transaction the block (what ran
    /// before BEGIN is part of it); inside a block it warns (25001) and
    /// still applies the modes, as SET TRANSACTION would. A failed block
    /// refuses it (25P02) like any statement but COMMIT and ROLLBACK.
    pub(super) fn begin(&mut self, modes: &[TransactionMode], begin: bool) -> Result<Output> {
        self.check_not_failed()?;
        match self.block {
            Block::Active => self.notices.push(Notice::warning(
                SqlState::ACTIVE_SQL_TRANSACTION,
                "there is already a transaction in progress",
            )),
            Block::Implicit => {}
            Block::None | Block::Failed => {
                let iso = isolation_of(modes)?.unwrap_or(self.default_isolation);
                self.tx = Some(self.begin_tx(iso)?);
            }
        }
        let was = self.block;
        self.block = Block::Active;
        if let Err(e) = self.set_transaction_modes(modes) {
            // An implicit transaction that became the block fails as the
            // block; one opened here has run nothing and is simply gone.
            if was == Block::None {
                self.tx = None;
                self.block = Block::None;
            } else {
                self.fail_transaction();
            }
            return Err(e);
        }
        Ok(Output::command(match begin {
            true => "BEGIN",
            false => "START TRANSACTION",
        }))
    }

    /// `COMMIT AND CHAIN` (`commit`) / `ROLLBACK AND CHAIN`: ends the
    /// block and at once opens the next with the same isolation level and
    /// access mode. Only in a block (25P01); a failed block is rolled
    /// back either way.
    pub(super) fn end_and_chain(&mut self, commit: bool) -> Result<Output> {
        let word = if commit { "COMMIT" } else { "ROLLBACK" };
        if matches!(self.block, Block::None | Block::Implicit) {
            return self.guarded(|_| {
                Err(Error::new(
                    SqlState::NO_ACTIVE_SQL_TRANSACTION,
                    format!("{word} AND CHAIN can only be used in transaction blocks"),
                ))
            });
        }
        let commit = commit && self.block == Block::Active;
        let modes = self.tx.as_ref().map(|t| (t.isolation(), t.read_only()));
        self.block = Block::None;
        let ended = match self.tx.take() {
            Some(tx) if commit => tx.commit(),
            Some(tx) => {
                tx.rollback();
                Ok(())
            }
            None => Ok(()),
        };
        self.transaction_ended(commit && ended.is_ok());
        let (iso, read_only) = modes.unwrap_or((self.default_isolation, self.default_read_only));
        let mut tx = self.begin_tx(iso)?;
        tx.set_read_only(read_only);
        self.tx = Some(tx);
        self.block = Block::Active;
        ended.map(|_| Output::command(if commit { "COMMIT" } else { "ROLLBACK" }))
    }

    /// Applies transaction modes to the open transaction in the order
    /// given, with PostgreSQL's checks (check_XactIsoLevel,
    /// check_transaction_read_only): another isolation level only before
    /// the transaction's first snapshot and not inside a savepoint; READ
    /// WRITE in a READ ONLY transaction only before its first snapshot.
    pub(super) fn set_transaction_modes(&mut self, modes: &[TransactionMode]) -> Result<()> {
        let Some(tx) = self.tx.as_mut() else {
            return Ok(());
        };
        let active = |message: &str| Error::new(SqlState::ACTIVE_SQL_TRANSACTION, message);
        for mode in modes {
            if let Some(iso) = isolation_of(std::slice::from_ref(mode))? {
                if tx.isolation() != iso {
                    if tx.statements() > 0 {
                        return Err(active(
                            "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                        ));
                    }
                    if tx.savepoint_count() > 0 {
                        return Err(active(
                            "SET TRANSACTION ISOLATION LEVEL must not be called in a subtransaction",
                        ));
                    }
                    tx.set_isolation(iso);
                }
            }
            if let Some(read_only) = crate::read_only::access_of(std::slice::from_ref(mode)) {
                if !read_only && tx.read_only() {
                    if tx.savepoint_count() > 0 {
                        return Err(active(
                            "cannot set transaction read-write mode inside a read-only transaction",
                        ));
                    }
                    if tx.statements() > 0 {
                        return Err(active(
                            "transaction read-write mode must be set before any query",
                        ));
                    }
                }
                tx.set_read_only(read_only);
            }
        }
        Ok(())
    }
}
