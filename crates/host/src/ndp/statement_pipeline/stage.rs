//! The stage an NDP statement leaves on the device for the next one
//! ([`PipelineStage`]), and whether a statement continues it: its WHERE
//! clause must contain every conjunct of the stage's, compared compiled
//! and with the parameters bound.
//!
//! ```text
//!  stage (Locked,  p)      + statement p        → AllRows  (no filter)
//!  stage (Locked,  p)      + statement p ∧ q    → Filtered (p ∧ q on each)
//!  stage (Changed, p)      + statement p        → Filtered
//!  stage (_, p ∧ q)        + statement p        → None     (wider: scans)
//! ```
//!
//! Values only; `mod.rs` applies them to a transaction's invocations.

use ndpdb_formats::expr::{Op, Program};
use ndpdb_formats::{RecId, TableId, Value, Vid};

/// A WHERE conjunct with the values of the parameters it reads.
#[derive(Clone, Debug, PartialEq)]
struct BoundConjunct {
    program: Program,
    params: Vec<(u32, Value)>,
}

impl BoundConjunct {
    fn new(program: &Program, params: &[Value]) -> BoundConjunct {
        let mut refs: Vec<u32> = program
            .ops
            .iter()
            .filter_map(|op| match op {
                Op::Param(i) => Some(*i),
                _ => None,
            })
            .collect();
        refs.sort_unstable();
        refs.dedup();
        BoundConjunct {
            program: program.clone(),
            params: refs
                .into_iter()
                .map(|i| (i, params.get(i as usize).cloned().unwrap_or(Value::Null)))
                .collect(),
        }
    }

    /// The same condition: same program, same parameter values (by
    /// position, whatever their numbers).
    fn same_as(&self, other: &BoundConjunct) -> bool {
        self.program.consts == other.program.consts
            && self.params.len() == other.params.len()
            && self
                .params
                .iter()
                .zip(&other.params)
                .all(|((_, a), (_, b))| a == b && a.data_type() == b.data_type())
            && same_ops(
                &self.program.ops,
                &other.program.ops,
                &self.params,
                &other.params,
            )
    }
}

/// Equal instructions, parameters compared through their bound order.
fn same_ops(a: &[Op], b: &[Op], pa: &[(u32, Value)], pb: &[(u32, Value)]) -> bool {
    let rank = |p: &[(u32, Value)], i: u32| p.iter().position(|(j, _)| *j == i);
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (Op::Param(i), Op::Param(j)) => rank(pa, *i) == rank(pb, *j),
            _ => x == y,
        })
}

/// What a stage's versions are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StageKind {
    /// Versions a SELECT … FOR UPDATE locked (committed heads).
    Locked,
    /// Versions the transaction's UPDATE created (its own heads).
    Changed,
}

/// Where a stage's versions are.
#[derive(Clone, Debug)]
pub(crate) enum StageSource {
    /// Kept on the device under this handle.
    Device(u64),
    /// The device kept none: sent back as targets.
    Host(Vec<(Vid, RecId)>),
}

impl StageSource {
    /// The device's handle if it kept the stage, else the versions.
    pub fn kept(handle: u64, versions: impl FnOnce() -> Vec<(Vid, RecId)>) -> StageSource {
        match handle {
            0 => StageSource::Host(versions()),
            h => StageSource::Device(h),
        }
    }
}

/// What the next NDP statement of the transaction may continue from.
#[derive(Clone, Debug)]
pub(crate) struct PipelineStage {
    pub table: TableId,
    pub kind: StageKind,
    pub source: StageSource,
    predicate: Vec<BoundConjunct>,
}

/// How a statement continues a stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Continuation {
    /// Every stage version qualifies (a locked stage, the same predicate).
    AllRows,
    /// The statement's filter decides on each stage version.
    Filtered,
}

impl PipelineStage {
    /// A stage of `table` made by a statement whose WHERE clause is the
    /// conjunction of `conjuncts` (none: every row).
    pub fn new(
        table: TableId,
        kind: StageKind,
        conjuncts: &[Program],
        params: &[Value],
        source: StageSource,
    ) -> PipelineStage {
        PipelineStage {
            table,
            kind,
            source,
            predicate: conjuncts
                .iter()
                .map(|c| BoundConjunct::new(c, params))
                .collect(),
        }
    }

    /// Whether a statement over `table` whose WHERE clause is the
    /// conjunction of `conjuncts` changes only rows of this stage.
    pub fn continued_by(
        &self,
        table: TableId,
        conjuncts: &[Program],
        params: &[Value],
    ) -> Option<Continuation> {
        if table != self.table {
            return None;
        }
        let next: Vec<BoundConjunct> = conjuncts
            .iter()
            .map(|c| BoundConjunct::new(c, params))
            .collect();
        let implied = self
            .predicate
            .iter()
            .all(|s| next.iter().any(|n| n.same_as(s)));
        if !implied {
            return None;
        }
        let same = next
            .iter()
            .all(|n| self.predicate.iter().any(|s| s.same_as(n)));
        Some(match (self.kind, same) {
            (StageKind::Locked, true) => Continuation::AllRows,
            _ => Continuation::Filtered,
        })
    }

    /// The stage's handle on the device, if it is kept there.
    pub fn device_handle(&self) -> Option<u64> {
        match self.source {
            StageSource::Device(h) => Some(h),
            StageSource::Host(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndpdb_formats::expr::Op;

    /// `column c < $p` or `column c < const`.
    fn lt(c: u32, param: Option<u32>, konst: i32) -> Program {
        match param {
            Some(p) => Program {
                consts: vec![],
                ops: vec![Op::Column(c), Op::Param(p), Op::Lt],
            },
            None => Program {
                consts: vec![Value::Int(konst)],
                ops: vec![Op::Column(c), Op::Const(0), Op::Lt],
            },
        }
    }

    fn stage(kind: StageKind, conjuncts: &[Program], params: &[Value]) -> PipelineStage {
        PipelineStage::new(TableId(1), kind, conjuncts, params, StageSource::Device(7))
    }

    #[test]
    fn a_statement_continues_a_stage_whose_predicate_it_implies() {
        let locked = stage(StageKind::Locked, &[lt(0, None, 10)], &[]);
        let t = TableId(1);
        assert_eq!(
            locked.continued_by(t, &[lt(0, None, 10)], &[]),
            Some(Continuation::AllRows)
        );
        // Narrower: one more conjunct, in any position.
        assert_eq!(
            locked.continued_by(t, &[lt(1, None, 3), lt(0, None, 10)], &[]),
            Some(Continuation::Filtered)
        );
        // Wider or different: a scan.
        assert_eq!(locked.continued_by(t, &[], &[]), None);
        assert_eq!(locked.continued_by(t, &[lt(0, None, 11)], &[]), None);
        assert_eq!(locked.continued_by(t, &[lt(1, None, 10)], &[]), None);
        assert_eq!(
            locked.continued_by(TableId(2), &[lt(0, None, 10)], &[]),
            None
        );
        // A stage of every row is continued by any predicate.
        let all = stage(StageKind::Locked, &[], &[]);
        assert_eq!(all.continued_by(t, &[], &[]), Some(Continuation::AllRows));
        assert_eq!(
            all.continued_by(t, &[lt(0, None, 1)], &[]),
            Some(Continuation::Filtered)
        );
    }

    #[test]
    fn parameters_compare_by_value() {
        let locked = stage(StageKind::Locked, &[lt(0, Some(0), 0)], &[Value::Int(10)]);
        let t = TableId(1);
        assert_eq!(
            locked.continued_by(t, &[lt(0, Some(0), 0)], &[Value::Int(10)]),
            Some(Continuation::AllRows)
        );
        // The same value as another parameter number.
        assert_eq!(
            locked.continued_by(
                t,
                &[lt(0, Some(2), 0)],
                &[Value::Null, Value::Int(4), Value::Int(10)]
            ),
            Some(Continuation::AllRows)
        );
        assert_eq!(
            locked.continued_by(t, &[lt(0, Some(0), 0)], &[Value::Int(11)]),
            None
        );
        assert_eq!(
            locked.continued_by(t, &[lt(0, Some(0), 0)], &[Value::BigInt(10)]),
            None,
            "another type is another condition"
        );
    }

    #[test]
    fn a_changed_stage_always_filters() {
        // UPDATE … SET x = x + 100 WHERE x < 10; DELETE … WHERE x < 10:
        // the new versions are checked again.
        let changed = stage(StageKind::Changed, &[lt(0, None, 10)], &[]);
        assert_eq!(
            changed.continued_by(TableId(1), &[lt(0, None, 10)], &[]),
            Some(Continuation::Filtered)
        );
    }
}
