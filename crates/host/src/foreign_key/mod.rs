//! FOREIGN KEY constraints: what a referencing table declares, and the
//! key lock that keeps a referenced key alive while rows refer to it.
//!
//! ```text
//!  child (referencing)                     parent (referenced)
//!  INSERT / UPDATE of the key columns      DELETE / UPDATE of the key
//!    ─► ref key K shared (to commit)         ─► ref key K exclusive (to commit):
//!    ─► a live committed row with K?            waits out every writer that
//!       (a fresh snapshot: what is             refers to K
//!       committed now, and own writes)       ─► rows that refer to K now:
//!       no ─► 23503                             NO ACTION / RESTRICT ─► 23503
//!                                               CASCADE / SET NULL ─► applied
//! ```
//!
//! The ref key lock ([`ref_key_lock`]) names a referenced key value, not
//! a tuple: it lives in the host lock table only (shared mode), so two
//! transactions inserting rows that refer to one parent run side by
//! side, while a transaction removing the parent waits for both (as
//! PostgreSQL's FOR KEY SHARE). An UPDATE of the parent's other columns
//! takes no ref key lock and does not wait. Statements that would need
//! these checks on the device run on the host (see the DML placement).
//!
//! Checks run per row, right after the row is written (so a row may
//! refer to itself); PostgreSQL checks at the end of the statement, so
//! a multi-row statement that only becomes consistent at its end
//! (rows inserted before the rows they refer to) is refused here.
//!
//! Constraints are stored with the referencing table, columns by name
//! (catalog section 4, docs/FORMATS.md): the referenced table is found
//! by name, as views find theirs.

mod ddl;
mod meta;

use std::hash::{Hash, Hasher};

pub use ddl::default_constraint_name;
pub use meta::{FkAction, ForeignKeyMeta};

use ndpdb_formats::codec::Writer;
use ndpdb_formats::{TableId, Value, Vid};

use crate::catalog::TableMeta;
use crate::mvcc::locks::LockKey;

/// The index a foreign key over `parent`'s columns `parent_columns` (by
/// name) relies on: the primary key's (`<table>_pkey`) when it has
/// exactly those columns, else the first UNIQUE index that has.
pub fn referenced_index(parent: &TableMeta, parent_columns: &[String]) -> Option<String> {
    let pcols = positions(parent, parent_columns)?;
    let same = |key: &[usize]| key.len() == pcols.len() && key.iter().all(|c| pcols.contains(c));
    if !parent.schema.primary_key.is_empty() && same(&parent.schema.primary_key) {
        return Some(parent.pk_constraint_name());
    }
    parent
        .indexes
        .iter()
        .find(|i| i.unique && same(&i.columns))
        .map(|i| i.name.clone())
}

/// Positions of `names` in `table`'s columns (`None` if one is gone).
pub fn positions(table: &TableMeta, names: &[String]) -> Option<Vec<usize>> {
    names
        .iter()
        .map(|n| table.schema.columns.iter().position(|c| &c.name == n))
        .collect()
}

/// The lock on referenced key `key` of `parent` (through `columns`, the
/// referenced column positions): outside the VID space and apart from
/// the UNIQUE indexes' key locks.
pub fn ref_key_lock(parent: TableId, columns: &[usize], key: &[Value]) -> LockKey {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    "foreign key".hash(&mut h);
    columns.hash(&mut h);
    let mut w = Writer::new();
    for v in key {
        v.key_bytes(&mut w);
    }
    w.as_slice().hash(&mut h);
    (parent, Vid(h.finish() | (1 << 63)))
}

/// The key of `row` at `columns`, unless MATCH SIMPLE exempts it (a
/// NULL in it). With MATCH FULL a partly NULL key is an error the
/// caller reports (`Err(())`).
pub(crate) fn key_of(
    row: &[Value],
    columns: &[usize],
    match_full: bool,
) -> std::result::Result<Option<Vec<Value>>, ()> {
    let key: Vec<Value> = columns.iter().map(|&c| row[c].clone()).collect();
    let nulls = key.iter().filter(|v| v.is_null()).count();
    match nulls {
        0 => Ok(Some(key)),
        n if match_full && n < key.len() => Err(()),
        _ => Ok(None),
    }
}
