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

use std::hash::{Hash, Hasher};

pub use ddl::default_constraint_name;

use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_formats::{TableId, Value, Vid};

use crate::catalog::TableMeta;
use crate::locks::LockKey;

/// `ON DELETE` / `ON UPDATE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FkAction {
    NoAction,
    Restrict,
    Cascade,
    SetNull,
    SetDefault,
}

impl FkAction {
    fn code(self) -> u8 {
        match self {
            FkAction::NoAction => 0,
            FkAction::Restrict => 1,
            FkAction::Cascade => 2,
            FkAction::SetNull => 3,
            FkAction::SetDefault => 4,
        }
    }

    fn from_code(c: u8) -> ndpdb_formats::Result<FkAction> {
        Ok(match c {
            0 => FkAction::NoAction,
            1 => FkAction::Restrict,
            2 => FkAction::Cascade,
            3 => FkAction::SetNull,
            4 => FkAction::SetDefault,
            _ => return Err(ndpdb_formats::Error::corrupted("bad foreign-key action")),
        })
    }

    /// `pg_constraint.confdeltype` / `confupdtype`.
    pub fn pg_char(self) -> char {
        match self {
            FkAction::NoAction => 'a',
            FkAction::Restrict => 'r',
            FkAction::Cascade => 'c',
            FkAction::SetNull => 'n',
            FkAction::SetDefault => 'd',
        }
    }

    /// The words of `information_schema.referential_constraints` and of
    /// a constraint's definition.
    pub fn sql(self) -> &'static str {
        match self {
            FkAction::NoAction => "NO ACTION",
            FkAction::Restrict => "RESTRICT",
            FkAction::Cascade => "CASCADE",
            FkAction::SetNull => "SET NULL",
            FkAction::SetDefault => "SET DEFAULT",
        }
    }
}

/// One FOREIGN KEY constraint of a referencing table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignKeyMeta {
    /// Unique among the table's constraints (`<table>_<cols>_fkey`).
    pub name: String,
    /// The referencing columns, by name.
    pub columns: Vec<String>,
    /// The referenced table.
    pub parent: String,
    /// The referenced columns (a primary key or a UNIQUE index of the
    /// parent), by name, in the order of `columns`.
    pub parent_columns: Vec<String>,
    pub on_delete: FkAction,
    pub on_update: FkAction,
    /// `MATCH FULL`: all key columns NULL or none (else MATCH SIMPLE: any
    /// NULL exempts the row).
    pub match_full: bool,
}

impl ForeignKeyMeta {
    /// PostgreSQL's `pg_get_constraintdef` text.
    pub fn definition(&self) -> String {
        let mut s = format!(
            "FOREIGN KEY ({}) REFERENCES {}({})",
            self.columns.join(", "),
            self.parent,
            self.parent_columns.join(", ")
        );
        if self.match_full {
            s.push_str(" MATCH FULL");
        }
        if self.on_update != FkAction::NoAction {
            s.push_str(" ON UPDATE ");
            s.push_str(self.on_update.sql());
        }
        if self.on_delete != FkAction::NoAction {
            s.push_str(" ON DELETE ");
            s.push_str(self.on_delete.sql());
        }
        s
    }

    pub(crate) fn encode(&self, table: TableId, w: &mut Writer) {
        w.u32(table.0).str(&self.name).str(&self.parent);
        w.u32(self.columns.len() as u32);
        for (c, p) in self.columns.iter().zip(&self.parent_columns) {
            w.str(c).str(p);
        }
        w.u8(self.on_delete.code())
            .u8(self.on_update.code())
            .u8(self.match_full as u8);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> ndpdb_formats::Result<(TableId, ForeignKeyMeta)> {
        let table = TableId(r.u32()?);
        let name = r.str()?.to_string();
        let parent = r.str()?.to_string();
        let k = r.count(8)?;
        let mut columns = Vec::with_capacity(k);
        let mut parent_columns = Vec::with_capacity(k);
        for _ in 0..k {
            columns.push(r.str()?.to_string());
            parent_columns.push(r.str()?.to_string());
        }
        if k == 0 {
            return Err(ndpdb_formats::Error::corrupted(
                "foreign key without columns",
            ));
        }
        let on_delete = FkAction::from_code(r.u8()?)?;
        let on_update = FkAction::from_code(r.u8()?)?;
        let match_full = r.u8()? != 0;
        Ok((
            table,
            ForeignKeyMeta {
                name,
                columns,
                parent,
                parent_columns,
                on_delete,
                on_update,
                match_full,
            },
        ))
    }
}

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
