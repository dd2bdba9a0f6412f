//! Placement: where a planned statement runs — on the host or on the
//! device next to the data (near-data processing, DESIGN.md §NDP).
//!
//! ```text
//!  SET ndp = on / off / auto
//!        │
//!        ▼
//!  cost_model ── estimated rows and bytes of each side ──► host | device
//!     ├─ query.rs: a SELECT's scan (pipeline pushed down or not)
//!     └─ dml.rs:   UPDATE / DELETE (update NDP or host)
//! ```

pub mod cost_model;
pub mod dml;
mod query;
