//! Placement of UPDATE and DELETE (DESIGN.md §6, §9; update NDP §4.1.1):
//! a bulk modification runs on the device, a primary-key update stays on
//! the host.
//!
//! ```text
//!  UPDATE t SET c = expr WHERE p      ndp = on    → device (unless PK lookup)
//!                                     ndp = auto  → cost model (placement.rs)
//!   device: NdpOp::Update { sets: [(c, expr → cast to c's type)], not_null }
//!   host:   collect matching rows, lock + certify + new version each
//! ```
//!
//! Primary-key columns name a tuple's VID, so an update that changes
//! them is a delete plus an insert the device cannot do: with `ndp = on`
//! that is SQLSTATE 0A000, with `auto` it stays on the host. Assignments
//! whose static type cannot be assigned to the column stay on the host
//! too, which reports the error exactly as PostgreSQL does.

use ndpdb_formats::expr::{Op, Program};
use ndpdb_formats::{DataType, SqlState};
use ndpdb_host::database::TableState;
use ndpdb_host::ndp::NdpRequest;
use ndpdb_host::Database;
use ndpdb_link::ndp::NdpOp;

use crate::bind::compile::Ty;
use crate::plan::access::Access;
use crate::plan::query::{NdpMode, SelectPlan};
use crate::{Error, Result};

/// The device part of an UPDATE or DELETE.
#[derive(Clone, Debug)]
pub struct DmlPlacement {
    pub request: NdpRequest,
    pub reason: String,
}

/// Whether a value of static type `from` can be assigned to a column of
/// type `to` without a type-mismatch error (see `dml::assign`).
fn assignable(from: Ty, to: &DataType) -> bool {
    let Some(t) = from.data_type() else {
        // Literals, parameters and NULL take the column's type.
        return true;
    };
    match t {
        DataType::Bool => *to == DataType::Bool || to.is_textual(),
        DataType::Date | DataType::Timestamp => !to.is_numeric(),
        DataType::Int | DataType::BigInt | DataType::Double | DataType::Numeric { .. } => {
            !matches!(
                to,
                DataType::Date | DataType::Timestamp | DataType::Bool | DataType::Bytea
            )
        }
        _ => true,
    }
}

/// Decides where a modification over `filter`'s single table runs.
/// `sets` is `None` for DELETE.
pub fn place_dml(
    filter: &SelectPlan,
    sets: Option<&[(usize, Program, Ty)]>,
    mode: NdpMode,
    pes: u16,
    preload: bool,
    db: &Database,
) -> Result<Option<DmlPlacement>> {
    if mode == NdpMode::Off {
        return Ok(None);
    }
    let src = &filter.sources[0];
    // A condition with a subquery per row is evaluated on the host.
    // A key lookup (primary key, or an index's equality prefix) stays on
    // the host; a scan or an index range may go to the device.
    let lookup = match &src.access {
        Access::Scan => false,
        Access::Index(ix) => !ix.prefix.is_empty(),
        Access::PrimaryKey(_) => true,
    };
    if lookup || filter.has_row_filter() {
        return Ok(None);
    }
    let ts: &TableState = filter.target_table()?;
    if needs_foreign_key_work(db, ts, sets) {
        // Checks and actions of FOREIGN KEYs run on the host.
        return Ok(None);
    }
    let op = match sets {
        None => NdpOp::Delete,
        Some(sets) => {
            let pk = &ts.meta().schema.primary_key;
            if sets.iter().any(|(c, _, _)| pk.contains(c)) {
                if mode == NdpMode::On {
                    return Err(Error::new(
                        SqlState::FEATURE_NOT_SUPPORTED,
                        "an UPDATE on the device cannot change primary-key columns",
                    )
                    .with_detail("SET ndp = auto (or off) runs it on the host."));
                }
                return Ok(None);
            }
            let cols = &ts.meta().schema.columns;
            if sets.iter().any(|(c, _, ty)| !assignable(*ty, &cols[*c].ty)) {
                return Ok(None);
            }
            // Secondary indexes live on the host: a new key for an index
            // is written there (a DELETE or another column's change adds
            // no index entry and stays on the device).
            if sets.iter().any(|(c, _, _)| ts.indexes_column(*c)) {
                return Ok(None);
            }
            NdpOp::Update {
                sets: sets
                    .iter()
                    .map(|(c, p, _)| {
                        let mut p = p.clone();
                        p.ops.push(Op::Cast(cols[*c].ty));
                        (*c as u32, p)
                    })
                    .collect(),
                not_null: cols
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| !c.nullable)
                    .map(|(i, _)| i as u32)
                    .collect(),
            }
        }
    };
    let reason = match mode {
        NdpMode::On => "ndp = on".to_string(),
        _ => {
            let est =
                crate::placement::cost_model::estimate(db, ts, &op, src.filter.is_some(), pes);
            if !est.device_wins() {
                return Ok(None);
            }
            est.describe()
        }
    };
    Ok(Some(DmlPlacement {
        request: NdpRequest {
            filter: src.filter.clone(),
            conjuncts: src.conjuncts.clone(),
            op,
            pes,
            preload,
        },
        reason,
    }))
}

/// Whether a DELETE (`sets` = None) or an UPDATE of `ts` touches a
/// FOREIGN KEY: it removes or changes a referenced key, or changes a
/// referencing one.
fn needs_foreign_key_work(
    db: &Database,
    ts: &TableState,
    sets: Option<&[(usize, Program, Ty)]>,
) -> bool {
    let meta = ts.meta();
    let named = |c: usize| meta.schema.columns[c].name.as_str();
    let referencing = db.referencing(&meta.name);
    match sets {
        None => !referencing.is_empty(),
        Some(sets) => sets.iter().any(|(c, _, _)| {
            let n = named(*c);
            meta.foreign_keys
                .iter()
                .any(|f| f.columns.iter().any(|x| x == n))
                || referencing
                    .iter()
                    .any(|(_, f)| f.parent_columns.iter().any(|x| x == n))
        }),
    }
}

/// EXPLAIN lines of an UPDATE or DELETE.
pub fn explain_dml(what: &str, filter: &SelectPlan, ndp: Option<&DmlPlacement>) -> Vec<String> {
    let src = &filter.sources[0];
    let side = if ndp.is_some() { "device" } else { "host" };
    let access = src.access.explain();
    let name = src
        .table()
        .map(|t| t.meta().name.clone())
        .unwrap_or_default();
    let mut lines = vec![
        format!("{what} on {name} [{side}]"),
        format!(
            "  {access} on {name} [{side}]{}",
            if src.filter.is_some() { " filter" } else { "" }
        ),
    ];
    if let Some(p) = ndp {
        lines.push(format!("    placement: {}", p.reason));
    }
    if filter.has_row_filter() {
        lines.push("  Filter [host] subquery conditions".into());
    }
    lines.extend(filter.subqueries.explain());
    lines
}
