//! The three planes of the hybrid host–device protocol and the counters
//! kept per plane and direction (DESIGN.md §10).
//!
//! ```text
//!            to_device ──►            ◄── to_host
//!   data     pages, ΔMaps, results    (throttled by the link model)
//!   control  invocations, status
//!   sync     lock-table operations
//! ```
//!
//! Every command names its plane ([`crate::command::Opcode::plane`]);
//! every transport counts each frame here, in [`LinkStats`]. This file is
//! the bottom of the link crate: it names the planes and nothing else.

use std::sync::atomic::{AtomicU64, Ordering};

/// The three planes of the hybrid host–device protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Plane {
    /// Pages, shared state, results, ΔMaps (bandwidth-limited).
    Data,
    /// Invocations and status (small messages).
    Control,
    /// Shared-memory synchronization (SLT operations).
    Sync,
}

impl Plane {
    pub const ALL: [Plane; 3] = [Plane::Data, Plane::Control, Plane::Sync];

    pub fn name(self) -> &'static str {
        match self {
            Plane::Data => "data",
            Plane::Control => "control",
            Plane::Sync => "sync",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    ToDevice,
    ToHost,
}

impl Direction {
    pub const ALL: [Direction; 2] = [Direction::ToDevice, Direction::ToHost];

    pub fn name(self) -> &'static str {
        match self {
            Direction::ToDevice => "to_device",
            Direction::ToHost => "to_host",
        }
    }
}

/// Bytes and messages per plane and direction, since the link was created.
#[derive(Default, Debug)]
pub struct LinkStats {
    counters: [[(AtomicU64, AtomicU64); 2]; 3],
}

impl LinkStats {
    fn slot(&self, plane: Plane, dir: Direction) -> &(AtomicU64, AtomicU64) {
        let p = match plane {
            Plane::Data => 0,
            Plane::Control => 1,
            Plane::Sync => 2,
        };
        let d = match dir {
            Direction::ToDevice => 0,
            Direction::ToHost => 1,
        };
        &self.counters[p][d]
    }

    pub fn record(&self, plane: Plane, dir: Direction, bytes: usize) {
        let (b, m) = self.slot(plane, dir);
        b.fetch_add(bytes as u64, Ordering::Relaxed);
        m.fetch_add(1, Ordering::Relaxed);
    }

    pub fn bytes(&self, plane: Plane, dir: Direction) -> u64 {
        self.slot(plane, dir).0.load(Ordering::Relaxed)
    }

    pub fn messages(&self, plane: Plane, dir: Direction) -> u64 {
        self.slot(plane, dir).1.load(Ordering::Relaxed)
    }

    /// `(name, value)` rows: `link.<plane>.<direction>.bytes|messages`.
    pub fn rows(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for p in Plane::ALL {
            for d in Direction::ALL {
                out.push((
                    format!("link.{}.{}.bytes", p.name(), d.name()),
                    self.bytes(p, d),
                ));
                out.push((
                    format!("link.{}.{}.messages", p.name(), d.name()),
                    self.messages(p, d),
                ));
            }
        }
        out
    }
}
