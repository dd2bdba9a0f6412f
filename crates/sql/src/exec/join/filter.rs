//! Runtime join filters. Before a table's rows stream through a hash
//! table (an inner equi-join, `query/join_run.rs`), the hashed side's key
//! values become a filter of the streaming read, over the keys that are
//! plain INT or BIGINT columns of the table: for one such column,
//! `column IN (keys)` ANDed to the table's own filter (the scan core's
//! IN-set kernel, `scan/src/in_set.rs`, which also skips a page whose
//! zone map holds no key); for several, a Bloom filter over them
//! (`scan/src/key_bloom.rs`). Both run page by page on the host workers,
//! so rows without a partner are dropped before they are decoded, handed
//! to the session thread and probed. A hash table without keys reads
//! nothing at all.
//!
//! ```text
//!  item WHERE i_data LIKE '%bb' ──► hash on i_id (19 rows)
//!                                          │ keys {17, 912, …}
//!  order_line: ol_i_id IN keys ◄───────────┘
//!     3 M rows ─► kernels ─► 520 rows probe
//! ```
//!
//! The filter only ever lets through more rows than the join keeps: two
//! keys equal in the hash table are equal as integers, a NULL key matches
//! nothing either way, and a Bloom filter's false hits are joined (and
//! dropped) as before.

use std::sync::Arc;

use ndpdb_formats::expr::Program;
use ndpdb_formats::{DataType, Value};
use ndpdb_scan::key_bloom::{KeyBloom, MAX_KEY_COLUMNS};

use crate::exec::join::Built;
use crate::plan::query::Source;
use crate::Result;

/// Most hashed rows whose keys always become a filter; more do when the
/// probing table has at least four times as many rows. A larger hash
/// table rarely leaves much to drop, and collecting its keys costs a
/// pass over it.
pub const MAX_HASHED_ROWS: usize = 1 << 16;

/// What a read of a table filters its rows by: the table's filter (or a
/// join filter's program, which includes it) and a Bloom filter over
/// composite keys.
#[derive(Clone, Copy, Default)]
pub struct ReadFilter<'a> {
    pub program: Option<&'a Program>,
    pub bloom: Option<&'a Arc<KeyBloom>>,
}

/// What the hashed side tells the read of the probing table.
pub enum JoinFilter {
    /// No probing row can find a partner: nothing need be read.
    Nothing,
    /// One integer key column: the table's filter with `column IN
    /// (keys)`; `keys`: how many it lists.
    InList { program: Program, keys: usize },
    /// Two or more integer key columns: a Bloom filter over them, built
    /// from `keys` keys.
    Bloom { bloom: Arc<KeyBloom>, keys: usize },
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
        let probing_rows = table.vids.vid_count();
        if built.len() > MAX_HASHED_ROWS && built.len() as u64 > probing_rows / 4 {
            return Ok(JoinFilter::None);
        }
        // (key program of the hashed rows, table column it is compared to)
        let (hashed, probing) = built.keys();
        let int_keys: Vec<(&Program, u32)> = hashed
            .iter()
            .zip(probing)
            .filter_map(|(h, p)| {
                let c = p.single_column().and_then(|c| table_column(c as u32))?;
                let ty = table.types.get(c as usize)?;
                matches!(ty, DataType::Int | DataType::BigInt).then_some((h, c))
            })
            .take(MAX_KEY_COLUMNS)
            .collect();
        let Some(keys) = key_values(&int_keys, built.rows(), params)? else {
            return Ok(match built.is_empty() {
                true => JoinFilter::Nothing,
                false => JoinFilter::None,
            });
        };
        if keys.is_empty() {
            return Ok(JoinFilter::Nothing);
        }
        if let [(_, column)] = int_keys[..] {
            let items = keys.into_iter().map(|k| Value::BigInt(k[0])).collect();
            let Some(is_in) = Program::in_list(column, items) else {
                return Ok(JoinFilter::None);
            };
            let keys = is_in.consts.len();
            let program = match &src.filter {
                Some(f) => f.and(&is_in),
                None => is_in,
            };
            return Ok(JoinFilter::InList { program, keys });
        }
        let columns = int_keys.iter().map(|&(_, c)| c as usize).collect();
        let bloom = KeyBloom::new(columns, keys.iter().map(Vec::as_slice));
        Ok(JoinFilter::Bloom {
            bloom: Arc::new(bloom),
            keys: keys.len(),
        })
    }

    /// The read's filter for `src`; `None`: read nothing.
    pub fn read_filter<'a>(&'a self, src: &'a Source) -> Option<ReadFilter<'a>> {
        let program = src.filter.as_ref();
        match self {
            JoinFilter::Nothing => None,
            JoinFilter::InList { program, .. } => Some(ReadFilter {
                program: Some(program),
                bloom: None,
            }),
            JoinFilter::Bloom { bloom, .. } => Some(ReadFilter {
                program,
                bloom: Some(bloom),
            }),
            JoinFilter::None => Some(ReadFilter {
                program,
                bloom: None,
            }),
        }
    }

    /// How many keys the filter holds (EXPLAIN ANALYZE), if it is one.
    pub fn keys(&self) -> Option<usize> {
        match self {
            JoinFilter::InList { keys, .. } | JoinFilter::Bloom { keys, .. } => Some(*keys),
            JoinFilter::Nothing => Some(0),
            JoinFilter::None => None,
        }
    }
}

/// The keys of the hashed rows over `columns` (their programs), rows
/// with a NULL in one left out; `None` if there are no columns or a value
/// is not an integer.
fn key_values(
    columns: &[(&Program, u32)],
    rows: &[Vec<Value>],
    params: &[Value],
) -> Result<Option<Vec<Vec<i64>>>> {
    if columns.is_empty() {
        return Ok(None);
    }
    let mut keys = Vec::with_capacity(rows.len());
    'rows: for row in rows {
        let mut key = Vec::with_capacity(columns.len());
        for (program, _) in columns {
            match program.eval(row, params)? {
                Value::Int(x) => key.push(x as i64),
                Value::BigInt(x) => key.push(x),
                Value::Null => continue 'rows,
                _ => return Ok(None),
            }
        }
        keys.push(key);
    }
    Ok(Some(keys))
}
