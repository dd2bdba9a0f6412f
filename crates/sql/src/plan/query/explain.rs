//! EXPLAIN output: one line per step of a plan (sources and where they
//! run, joins, filters, aggregation, ordering and limits).

use super::{Input, SelectPlan};
use crate::plan::join_plan::JoinKind;

impl SelectPlan {
    /// EXPLAIN lines for this plan.
    pub fn explain(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let on_device = |i: usize| i == 0 && self.ndp.is_some();
        if let Some((ctx, having)) = &self.agg {
            let side = if self.ndp.as_ref().is_some_and(|p| p.aggregate) {
                "device"
            } else {
                "host"
            };
            lines.push(format!(
                "Aggregate [{side}] groups={} aggregates={}{}",
                ctx.group_programs.len(),
                ctx.aggregates.len(),
                if having.is_some() { " having" } else { "" }
            ));
        }
        if self.joins.iter().any(|j| j.kind != JoinKind::Inner) {
            let kinds: Vec<&str> = self.joins.iter().map(|j| j.kind.explain()).collect();
            lines.push(format!(
                "{} [host] tables={}",
                kinds.join(", "),
                self.sources.len()
            ));
        } else if self.joins.iter().any(|j| !j.left_keys.is_empty()) || self.sources.len() > 1 {
            lines.push(format!("Hash Join [host] tables={}", self.sources.len()));
        }
        if !self.row_filter.is_empty() {
            lines.push(format!(
                "Filter [host] subquery conditions={}",
                self.row_filter.len()
            ));
        }
        for (i, src) in self.sources.iter().enumerate() {
            let access = match &src.input {
                Input::Derived(_) => "Subquery Scan".to_string(),
                Input::Rows(r) => r.explain().to_string(),
                Input::SetOp(set) => set.explain(),
                Input::Table(_) => src.access.explain(),
            };
            let side = if on_device(i) { "device" } else { "host" };
            let name = match &src.input {
                Input::Table(t) => t.meta().name.clone(),
                Input::Derived(_) | Input::Rows(_) | Input::SetOp(_) => src.alias.clone(),
            };
            lines.push(format!(
                "  {access} on {name} [{side}]{}",
                if src.filter.is_some() { " filter" } else { "" }
            ));
            if let Input::Derived(plan) = &src.input {
                if let Some(shared) = plan.shared.as_ref().filter(|s| s.references() > 1) {
                    lines.push(format!(
                        "    computed once per execution for the view's {} references",
                        shared.references()
                    ));
                }
            }
            if i == 0 && self.key_order_read.is_some() {
                lines.push("    in key order, stopping at the LIMIT".into());
            }
            if let Some(lookup) = i.checked_sub(1).and_then(|k| self.joins[k].lookup.as_ref()) {
                lines.push(format!(
                    "    or a lookup in {} per joined row, when they are few",
                    lookup.index
                ));
            }
            if let Input::Derived(plan) = &src.input {
                lines.extend(plan.explain().into_iter().map(|l| format!("    {l}")));
            }
            if let Input::SetOp(set) = &src.input {
                for side in [&set.left, &set.right] {
                    lines.extend(side.plan.explain().into_iter().map(|l| format!("    {l}")));
                }
            }
            if on_device(i) {
                if let Some(p) = &self.ndp {
                    lines.push(format!("    placement: {}", p.reason));
                    if !p.aggregate {
                        lines.push(format!("    columns returned: {:?}", p.columns));
                    }
                    if self.for_update {
                        lines.push("    locks rows in the shared lock table (FOR UPDATE)".into());
                    }
                }
            }
        }
        lines.extend(self.subqueries.explain());
        lines
    }
}
