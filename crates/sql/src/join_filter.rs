//! Runtime join filters. Before a table's rows stream through a hash
//! table (an inner equi-join, `query/join_run.rs`), the hashed side's key
//! values become a filter of the streaming read: `column IN (keys)` for
//! each key that is a plain INT or BIGINT column of the table, ANDed to
//! the table's own filter. The scan core runs it as its IN-set kernel
//! (`scan/src/in_set.rs`) page by page on the host workers, so rows
//! without a partner are dropped before they are decoded, handed to the
//! session thread and probed, and a page whose zone map holds no key is
//! not looked at. A hash table without keys reads nothing at all.
//!
//! ```text
//!  item WHERE i_data LIKE '%bb' ──► hash on i_id (19 rows)
//!                                          │ keys {17, 912, …}
//!  order_line: ol_i_id IN keys ◄───────────┘
//!     3 M rows ─► kernels ─► 520 rows probe
//! ```
//!
//! The filter only ever lets through more rows than the join keeps: two
//! keys equal in the hash table are equal as integers, and a NULL key
//! matches nothing either way.

use ndpdb_formats::expr::Program;
use ndpdb_formats::{DataType, Value};

use crate::join::Built;
use crate::query::Source;
use crate::Result;

/// Most hashed rows whose keys become a filter. A larger table rarely
/// leaves much to drop, and collecting its keys costs a pass over it.
pub const MAX_HASHED_ROWS: usize = 1 << 16;

/// What the hashed side tells the read of the probing table.
pub enum JoinFilter {
    /// No probing row can find a partner: nothing need be read.
    Nothing,
    /// The table's filter with `column IN (keys)` terms; `keys`: the
    /// fewest keys one of them lists.
    Keys { program: Program, keys: usize },
    /// No key filters the read.
    None,
}

impl JoinFilter {
    /// For the table `src` whose rows probe `built`; column `c` of a
    /// probing row is the table's column `table_column(c)`.
    pub fn for_probing(
        built: &Built<'_>,
        src: &Source,
        table_column: impl Fn(u32) -> Option<u32>,
        params: &[Value],
    ) -> Result<JoinFilter> {
        let Some(table) = src.table() else {
            return Ok(JoinFilter::None);
        };
        if built.len() > MAX_HASHED_ROWS {
            return Ok(JoinFilter::None);
        }
        let (hashed, probing) = built.keys();
        let mut program = src.filter.clone();
        let mut fewest: Option<usize> = None;
        for (h, p) in hashed.iter().zip(probing) {
            let Some(c) = p.single_column().and_then(|c| table_column(c as u32)) else {
                continue;
            };
            let int_column = matches!(
                table.types.get(c as usize),
                Some(DataType::Int | DataType::BigInt)
            );
            if !int_column {
                continue;
            }
            let Some(keys) = int_keys(h, built.rows(), params)? else {
                continue;
            };
            if keys.is_empty() {
                return Ok(JoinFilter::Nothing);
            }
            let Some(is_in) = Program::in_list(c, keys) else {
                continue;
            };
            let n = is_in.consts.len();
            fewest = Some(fewest.map_or(n, |f| f.min(n)));
            program = Some(match program {
                Some(f) => f.and(&is_in),
                None => is_in,
            });
        }
        Ok(match (program, fewest) {
            (Some(program), Some(keys)) => JoinFilter::Keys { program, keys },
            _ if built.is_empty() => JoinFilter::Nothing,
            _ => JoinFilter::None,
        })
    }

    /// How many keys the filter lists (EXPLAIN ANALYZE), if it is one.
    pub fn keys(&self) -> Option<usize> {
        match self {
            JoinFilter::Keys { keys, .. } => Some(*keys),
            JoinFilter::Nothing => Some(0),
            JoinFilter::None => None,
        }
    }
}

/// The non-NULL values of `key` over the hashed rows, as BIGINTs; `None`
/// if one is not an integer.
fn int_keys(key: &Program, rows: &[Vec<Value>], params: &[Value]) -> Result<Option<Vec<Value>>> {
    let mut keys = Vec::with_capacity(rows.len());
    for row in rows {
        match key.eval(row, params)? {
            Value::Int(x) => keys.push(Value::BigInt(x as i64)),
            Value::BigInt(x) => keys.push(Value::BigInt(x)),
            Value::Null => {}
            _ => return Ok(None),
        }
    }
    Ok(Some(keys))
}
