//! On-storage formats shared by the host and the device (DESIGN.md §2).
//!
//! Everything both sides must agree on byte-for-byte lives here, and only
//! here, so that the host and the device engine parse pages with the *same*
//! code (the "layout accessors" and "format parsers" of the DANSEN paper):
//!
//! - [`ids`]: typed identifiers (`TxId`, `Vid`, `Lpn`, `Ppn`, `RecId`, `Lsn`, `JobId`).
//! - [`codec`]: little-endian writer and bounds-checked reader.
//! - [`types`] / [`value`]: SQL types, values, and their text forms;
//!   [`array`]: array values; [`json`]: json and jsonb values.
//! - [`record`]: version records (header + schema-driven body).
//! - [`page`]: 8 KiB PAX pages (a version minipage and one minipage per column).
//! - [`agg`]: aggregate specs and accumulators (partials merge exactly).
//! - [`expr`]: the portable expression bytecode and its one evaluator.
//! - [`delta_maps`]: ΔMaps (ΔL2P, ΔVID) and their one codec.
//! - [`udf`]: built-in UDFs (the SPN inference of Query-SPN).
//! - [`visibility`]: snapshots and the version-chain walk.
//! - [`error`]: SQLSTATE codes and the format-layer error.
//!
//! Bytes handed to any parser here are untrusted: every read is bounds
//! checked and a malformed input yields [`Error::Corrupted`], never a panic.

pub mod agg;
pub mod array;
pub mod array_funcs;
pub mod catalog_funcs;
pub mod codec;
pub mod datetime_part;
pub mod delta_maps;
pub mod error;
pub mod expr;
pub mod ids;
pub mod json;
pub mod json_convert;
pub mod json_funcs;
pub mod json_rows;
pub mod page;
pub mod record;
pub mod rows;
pub mod types;
pub mod udf;
pub mod value;
pub mod visibility;

pub use error::{Error, Result, SqlState};
pub use ids::{JobId, Lpn, Lsn, Ppn, RecId, TableId, TxId, Vid};
pub use types::{Column, DataType, Schema};
pub use value::{Decimal, Value};
