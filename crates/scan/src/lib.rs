//! The scan core (DESIGN.md §2, "Execution"): one implementation of the
//! hot loop of a table scan, run by the device's processing elements and
//! by the host executor alike, so NDP and host-only plans compute the same
//! results at the same speed per tuple.
//!
//! ```text
//!  VID heads (one chunk) ─► runs of heads on one page
//!        │                      │
//!        │        page summary: every version visible? ── yes ─► selection = run
//!        │                      │ no
//!        │        per head: creator visible? ─ yes ─► selection
//!        │                      │ no ─► chain walk (row at a time, in order)
//!        ▼
//!  selection vector over a PAX page ─► predicate kernels ─► aggregate /
//!                                     (typed, per column)    projection kernels
//! ```
//!
//! Modules in pipeline order ("pipeline" in this crate is a scan's filter
//! path, filter → operation, not an NDP statement pipeline):
//! - [`page_visibility`]: runs of VID-map heads per page, checked against
//!   the page summary; chain walks only for heads a snapshot does not see.
//! - [`predicate`]: expression bytecode compiled into typed comparison
//!   kernels with SQL's three-valued logic (row-at-a-time fallback for
//!   anything else); [`in_set`]: the IN kernel of integer lists of any
//!   length, which runtime join filters use too; [`key_bloom`]: the
//!   runtime join filter of composite integer keys; [`kernel`]: truth
//!   bytes, value reads and selection refinement they all share.
//! - [`aggregate`]: typed SUM / COUNT / MIN / MAX / AVG over a selection,
//!   folded into the same accumulators the row path uses.
//! - [`group_page`]: GROUP BY over a page selection; [`groups`]: the
//!   partial aggregates by group key the device and host merge.
//! - [`pipeline`]: filter → operation over pages and single rows.
//! - [`prefetch`]: the cache lines of the pages ahead of the walk.

pub mod aggregate;
pub mod group_page;
pub mod groups;
pub mod in_set;
pub mod kernel;
pub mod key_bloom;
pub mod object_scan;
pub mod page_visibility;
pub mod pipeline;
pub mod predicate;
pub mod prefetch;

pub use page_visibility::{walk_heads, PageSource, RunBuffers};
pub use pipeline::{merge_groups, Groups, Pipeline, PipelineOp, PipelineState};

#[cfg(test)]
mod tests;
