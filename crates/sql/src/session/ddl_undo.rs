//! DDL inside a transaction block: the relations a block's CREATE
//! statements made are dropped again when the block rolls back (ROLLBACK,
//! an error that fails an implicit transaction), so a migration that
//! fails half-way leaves no table, index, view or sequence behind — as in
//! PostgreSQL, whose catalog is transactional.
//!
//! ```text
//!  in a block: CREATE …  ─► relations before / after ─► new ones ─► ddl_undo
//!  COMMIT                ─► ddl_undo forgotten
//!  ROLLBACK / failure    ─► drop them, newest first (tables and views
//!                           before the indexes and sequences they own)
//! ```
//!
//! ndpdb's catalog is not versioned: until the block ends, other sessions
//! see what it created, and a crash before COMMIT keeps it. DROP and
//! ALTER inside a block take effect when they run (docs/COMPATIBILITY.md).

use std::collections::BTreeSet;

use ndpdb_host::Database;

use super::{Block, Session};

/// A relation a block created, by kind and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Created {
    /// Tables and views go first: their indexes and owned sequences go
    /// with them.
    Relation {
        view: bool,
        name: String,
    },
    Index {
        name: String,
    },
    Sequence {
        name: String,
    },
}

/// Every relation of the catalog.
pub(super) fn relations(db: &Database) -> BTreeSet<Created> {
    let mut all = BTreeSet::new();
    for t in db.tables() {
        for ix in &t.indexes {
            all.insert(Created::Index {
                name: ix.name.clone(),
            });
        }
        all.insert(Created::Relation {
            view: false,
            name: t.name.clone(),
        });
    }
    for v in db.views() {
        all.insert(Created::Relation {
            view: true,
            name: v.name.clone(),
        });
    }
    for s in db.sequence_names() {
        all.insert(Created::Sequence { name: s });
    }
    all
}

impl Session {
    /// Runs the DDL `f`; inside a block, remembers what it created.
    pub(super) fn creating<T>(
        &mut self,
        f: impl FnOnce(&mut Session) -> crate::Result<T>,
    ) -> crate::Result<T> {
        if self.block == Block::None {
            return f(self);
        }
        let before = relations(&self.db);
        let out = f(self)?;
        let after = relations(&self.db);
        let created: Vec<Created> = after.difference(&before).cloned().collect();
        if !created.is_empty() {
            self.ddl_undo.push(created);
        }
        Ok(out)
    }

    /// The transaction ended: on rollback, what its DDL created goes.
    pub(super) fn end_ddl(&mut self, committed: bool) {
        let created = std::mem::take(&mut self.ddl_undo);
        if committed || created.is_empty() {
            return;
        }
        // Newest statement first; within one, relations before the
        // indexes and sequences they own (a DROP of those then finds
        // them gone, which is what it wants).
        for c in created.iter().rev().flatten() {
            let gone = match c {
                Created::Relation { name, .. } => {
                    { self.db.drop_relations(std::slice::from_ref(name), true) }.map(|_| ())
                }
                Created::Index { name } => self.db.drop_index(name, true),
                Created::Sequence { name } => self.db.drop_sequence(name),
            };
            // Gone already (with its table, or dropped by the block).
            let _ = gone;
        }
    }
}
