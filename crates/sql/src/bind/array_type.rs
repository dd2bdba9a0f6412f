//! The array and record types of the catalog, carried as text.
//!
//! ndpdb's column types have no arrays or records, yet catalog queries
//! index `pg_index.indkey`, `pg_constraint.conkey` and
//! `current_schemas()`, and read fields of
//! `information_schema._pg_expandarray(…)`'s records. Those values are
//! text in PostgreSQL's output format (`1 2`, `{1,2}`, `{public}`,
//! `(1,1)`); their static type is a `VARCHAR` with a length no column
//! can have (above [`TAG_BASE`]), which tells the compiler the element
//! type of a subscript and the fields of a record:
//!
//! ```text
//!  INT2VECTOR   "1 2"          a[i] → integer, lower bound 0
//!  INT2_ARRAY   "{1,2}"        a[i] → integer, lower bound 1
//!  NAME_ARRAY   "{public}"     a[i] → text,    lower bound 1
//!  RECORD_INT   "(3,1)"        (r).x → integer, (r).n → integer
//!  RECORD_TEXT  "(public,1)"   (r).x → text,    (r).n → integer
//! ```
//!
//! Everywhere else such a value is text (compared, shown, cast as text).

use ndpdb_formats::DataType;

/// Lengths above this mark an array or record type.
pub const TAG_BASE: u32 = 0xFFFF_FF00;

pub const INT2VECTOR: DataType = DataType::Varchar(TAG_BASE + 1);
pub const INT2_ARRAY: DataType = DataType::Varchar(TAG_BASE + 2);
pub const NAME_ARRAY: DataType = DataType::Varchar(TAG_BASE + 3);
pub const RECORD_INT: DataType = DataType::Varchar(TAG_BASE + 4);
pub const RECORD_TEXT: DataType = DataType::Varchar(TAG_BASE + 5);

/// Whether `t` is one of this module's types.
pub fn is_tagged(t: DataType) -> bool {
    matches!(t, DataType::Varchar(n) if n > TAG_BASE)
}

/// The element type of an array type.
pub fn element_type(t: DataType) -> Option<DataType> {
    match t {
        INT2VECTOR | INT2_ARRAY => Some(DataType::Int),
        NAME_ARRAY => Some(DataType::Text),
        _ => None,
    }
}

/// The type of `_pg_expandarray`'s records over arrays of `element`.
pub fn record_of(element: DataType) -> DataType {
    if element == DataType::Int {
        RECORD_INT
    } else {
        RECORD_TEXT
    }
}

/// Field `name` of a record type: its 1-based position and type.
pub fn record_field(t: DataType, name: &str) -> Option<(i32, DataType)> {
    let x = match t {
        RECORD_INT => DataType::Int,
        RECORD_TEXT => DataType::Text,
        _ => return None,
    };
    match name {
        "x" => Some((1, x)),
        "n" => Some((2, DataType::Int)),
        _ => None,
    }
}

/// How PostgreSQL names the type (for error messages).
pub fn sql_name(t: DataType) -> Option<&'static str> {
    Some(match t {
        INT2VECTOR => "int2vector",
        INT2_ARRAY => "smallint[]",
        NAME_ARRAY => "name[]",
        RECORD_INT | RECORD_TEXT => "record",
        _ => return None,
    })
}
