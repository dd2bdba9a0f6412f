//! What a FOREIGN KEY constraint declares ([`ForeignKeyMeta`], with its
//! `ON DELETE` / `ON UPDATE` actions) and how the catalog stores it
//! (catalog section 4, docs/FORMATS.md: columns by name, the referenced
//! table by name).
//!
//! ```text
//!  catalog.rs ──► meta.rs (this file: the declaration, encode / decode)
//!  foreign_key/mod.rs ──► catalog.rs (resolving names against TableMeta)
//! ```
//!
//! The declaration knows no table: the catalog stores it with the
//! referencing table, and `foreign_key/mod.rs` resolves its names
//! against the tables' catalog entries.

use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_formats::TableId;

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
