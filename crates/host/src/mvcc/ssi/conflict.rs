//! The dangerous-structure rules: what a new rw-antidependency or a
//! commit must check, in PostgreSQL's order and with its reason codes
//! (`OnConflict_CheckForSerializationFailure`,
//! `PreCommit_CheckForSerializationFailure`).
//!
//! ```text
//!   T0 ──rw──► R ──rw──► W ──rw──► T2
//!   new edge R→W:  W committed with a conflict out (T2 committed first)  ─► fail
//!                  W → T2 with T2 prepared first                         ─► fail
//!                  W prepared, T0 → R with T0 not committed before W    ─► fail
//!   fail: I am W ─► 40001 now; W prepared ─► I (R) fail; else doom W
//!   commit of me:  R → me, R running, something running → R  ─► doom R
//! ```
//!
//! A doomed transaction fails at its next read, write or commit.

use ndpdb_formats::{SqlState, TxId};

use super::{During, Graph};
use crate::error::{Error, Result};

/// PostgreSQL's serialization failure under SERIALIZABLE.
pub(super) fn failure(reason: impl Into<String>) -> Error {
    Error::new(
        SqlState::SERIALIZATION_FAILURE,
        "could not serialize access due to read/write dependencies among transactions",
    )
    .with_detail(format!("Reason code: {}", reason.into()))
    .with_hint("The transaction might succeed if retried.")
}

impl Graph {
    /// `me` read data the concurrent `writer` wrote.
    pub(super) fn conflict_out(&mut self, me: TxId, writer: TxId) -> Result<()> {
        if writer == me {
            return Ok(());
        }
        let (Some(r), Some(w)) = (self.sxacts.get(&me), self.sxacts.get(&writer)) else {
            return Ok(());
        };
        if w.doomed || r.outs.contains(&writer) || r.snapshot.sees(writer) {
            return Ok(());
        }
        // A read-only reader appears to run first — unless the writer
        // committed after a conflict out to one that committed before
        // the reader's snapshot.
        if r.read_only
            && w.committed()
            && w.conflict_out
                .is_none_or(|earliest| r.last_commit_before_snapshot < earliest)
        {
            return Ok(());
        }
        self.flag(me, writer, me)
    }

    /// The concurrent `reader` read data `me` writes.
    pub(super) fn conflict_in(&mut self, reader: TxId, me: TxId) -> Result<()> {
        if reader == me {
            return Ok(());
        }
        let (Some(r), Some(w)) = (self.sxacts.get(&reader), self.sxacts.get(&me)) else {
            return Ok(());
        };
        if r.doomed || r.outs.contains(&me) || (r.committed() && w.snapshot.sees(reader)) {
            return Ok(());
        }
        self.flag(reader, me, me)
    }

    /// Adds `reader ──rw──► writer` after checking it completes no
    /// dangerous structure (`me` is the transaction that found it).
    fn flag(&mut self, reader: TxId, writer: TxId, me: TxId) -> Result<()> {
        if self.completes_dangerous_structure(reader, writer) {
            let w = &self.sxacts[&writer];
            if me == writer {
                return Err(failure(
                    "Canceled on identification as a pivot, during write.",
                ));
            }
            if w.prepared() {
                return Err(failure(format!(
                    "Canceled on conflict out to pivot {}, during read.",
                    writer.0
                )));
            }
            if let Some(w) = self.sxacts.get_mut(&writer) {
                w.doomed = true;
            }
        }
        if let Some(r) = self.sxacts.get_mut(&reader) {
            r.outs.insert(writer);
        }
        if let Some(w) = self.sxacts.get_mut(&writer) {
            w.ins.insert(reader);
        }
        Ok(())
    }

    fn completes_dangerous_structure(&self, reader: TxId, writer: TxId) -> bool {
        let (r, w) = (&self.sxacts[&reader], &self.sxacts[&writer]);
        // R → W → T2 where W committed after a conflict out to an
        // earlier committed T2.
        if w.committed() && w.conflict_out.is_some() {
            return true;
        }
        // R → W → T2 with T2 prepared before R and W committed (and, for
        // a read-only R, before R's snapshot).
        let t2_first = w.outs.iter().filter_map(|t| self.sxacts.get(t)).any(|t2| {
            let Some(p) = t2.prepare_seq else {
                return false;
            };
            r.commit_seq.is_none_or(|c| p <= c)
                && w.commit_seq.is_none_or(|c| p <= c)
                && (!r.read_only || p <= r.last_commit_before_snapshot)
        });
        if t2_first {
            return true;
        }
        // T0 → R → W with W prepared and T0 not committed before it.
        match w.prepare_seq {
            Some(wp) if !r.read_only => r.ins.iter().filter_map(|t| self.sxacts.get(t)).any(|t0| {
                !t0.doomed
                    && t0.commit_seq.is_none_or(|c| c >= wp)
                    && (!t0.read_only || t0.last_commit_before_snapshot >= wp)
            }),
            _ => false,
        }
    }

    /// The pre-commit check (see the module docs).
    pub(super) fn pre_commit(&mut self, me: TxId) -> Result<()> {
        self.check_doomed(me, During::Commit)?;
        let Some(s) = self.sxacts.get(&me) else {
            return Ok(());
        };
        let mut doom = Vec::new();
        for near in &s.ins {
            let Some(n) = self.sxacts.get(near) else {
                continue;
            };
            if n.committed() || n.doomed {
                continue;
            }
            let pivot = n.ins.iter().any(|far| {
                *far == me
                    || self
                        .sxacts
                        .get(far)
                        .is_some_and(|f| !f.committed() && !f.read_only && !f.doomed)
            });
            if pivot {
                doom.push((*near, n.prepared()));
            }
        }
        for (near, prepared) in doom {
            if prepared {
                // A prepared pivot cannot be canceled any more.
                return Err(failure(
                    "Canceled on commit attempt with conflict in from prepared pivot.",
                ));
            }
            if let Some(n) = self.sxacts.get_mut(&near) {
                n.doomed = true;
            }
        }
        self.last_commit_seq += 1;
        let seq = self.last_commit_seq;
        if let Some(s) = self.sxacts.get_mut(&me) {
            s.prepare_seq = Some(seq);
        }
        Ok(())
    }
}
