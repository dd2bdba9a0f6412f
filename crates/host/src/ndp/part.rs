//! What an update-NDP statement leaves with its transaction until commit
//! ([`NdpPart`]: the job's ΔMaps, SLT tag, logging and overflow log), the
//! logging level that decides what is logged for it ([`NdpLogging`]),
//! and the SLT tags update jobs lock with ([`TagPool`]).
//!
//! ```text
//!  ndp_modify / ndp_lock_rows ──► NdpPart ──► Transaction.ndp_parts
//!                                    │          own reads: own_heads
//!                                    ▼
//!  commit: validate (validate.rs) ─► End-NDP ─► ΔVID → VID heads
//! ```
//!
//! Values only: the transaction holds them, and `update.rs`, `validate.rs`
//! and `crate::commit` read them, without this file reaching any of them.

use std::collections::HashSet;

use ndpdb_formats::{Lsn, RecId, TableId, Vid};
use ndpdb_link::ndp::ModifyResult;
use ndpdb_slt::DeviceTag;

use super::overflow_log::OverflowRef;

/// One update-NDP statement of a transaction, waiting for its commit.
#[derive(Clone, Debug)]
pub(crate) struct NdpPart {
    pub table: TableId,
    pub tag: DeviceTag,
    pub result: ModifyResult,
    /// Logged with Start-NDP / End-NDP (`ndp_logging = basic | extended`).
    pub logged: bool,
    /// `ndp_logging = extended`: its overflow log, moved to the host at
    /// commit.
    pub extended: bool,
    pub overflow: Option<OverflowRef>,
    /// The LSN of its Start-NDP record, which End-NDP names.
    pub start_ndp: Option<Lsn>,
}

impl NdpPart {
    /// The Start-NDP LSN naming the overflow log the commit still has to
    /// move (extended logging, pages written, not moved yet).
    pub(crate) fn overflow_to_move(&self) -> Option<Lsn> {
        self.start_ndp.filter(|_| {
            self.extended && self.overflow.is_none() && !self.result.delta.l2p.is_empty()
        })
    }
}

/// What update jobs log (`SET ndp_logging`, update NDP §6): nothing (the
/// commit checkpoints instead), Start-/End-NDP records, or those plus an
/// overflow log of the new versions moved to the host before commit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NdpLogging {
    Off,
    #[default]
    Basic,
    Extended,
}

impl NdpLogging {
    pub fn name(self) -> &'static str {
        match self {
            NdpLogging::Off => "off",
            NdpLogging::Basic => "basic",
            NdpLogging::Extended => "extended",
        }
    }

    /// `off`, `basic` (also `on`) or `extended`.
    pub fn parse(s: &str) -> Option<NdpLogging> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "off" | "false" => NdpLogging::Off,
            "basic" | "on" | "true" => NdpLogging::Basic,
            "extended" => NdpLogging::Extended,
            _ => return None,
        })
    }
}

/// SLT tags of the transactions with update jobs: unique among them.
#[derive(Default)]
pub(crate) struct TagPool {
    in_use: HashSet<u16>,
    next: u16,
}

impl TagPool {
    pub(crate) fn alloc_tag(&mut self) -> Option<DeviceTag> {
        for _ in 0..u16::MAX {
            self.next = self.next.wrapping_add(1).max(2);
            if self.in_use.insert(self.next) {
                return DeviceTag::new(self.next);
            }
        }
        None
    }

    pub(crate) fn free(&mut self, tag: DeviceTag) {
        self.in_use.remove(&tag.raw());
    }
}

/// Heads an update job moved, for the transaction's own reads.
pub(crate) fn own_heads(part: &NdpPart) -> impl Iterator<Item = ((TableId, Vid), RecId)> + '_ {
    part.result
        .delta
        .vids
        .iter()
        .map(move |d| ((part.table, d.vid), d.new))
}
