//! Emulated NVM access latency (DESIGN.md §10; DANSEN §4.1, Fig. 10–11).
//!
//! The device's store is a file in the OS page cache, i.e. DRAM. DANSEN
//! emulates NVM on DRAM by adding a fixed latency to every access; so do
//! we, with the papers' profiles:
//!
//! ```text
//!   profile   read    write      an access is …
//!   off         0 ns     0 ns    · a record a PE reads straight from the
//!   fast      305 ns   100 ns      medium (no preloader: header, then body)
//!   mid       350 ns   170 ns    · one batch the preloader fetches
//!   slow      350 ns   800 ns    · one page read or written over the link
//! ```
//!
//! Latencies are waited out by spinning on the clock (sleeping cannot wait
//! 300 ns); the wait burns the CPU of the thread that issued the access,
//! as a stalled soft-core would. With the preloader, a batch's latency is
//! paid by the preloader thread while its PE computes on the batch
//! before, which is how the papers' preloader hides NVM latency.

use std::time::{Duration, Instant};

/// An NVM latency profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvmProfile {
    pub name: &'static str,
    pub read_ns: u32,
    pub write_ns: u32,
}

impl NvmProfile {
    pub const OFF: NvmProfile = NvmProfile {
        name: "off",
        read_ns: 0,
        write_ns: 0,
    };
    pub const FAST: NvmProfile = NvmProfile {
        name: "fast",
        read_ns: 305,
        write_ns: 100,
    };
    pub const MID: NvmProfile = NvmProfile {
        name: "mid",
        read_ns: 350,
        write_ns: 170,
    };
    pub const SLOW: NvmProfile = NvmProfile {
        name: "slow",
        read_ns: 350,
        write_ns: 800,
    };
    pub const ALL: [NvmProfile; 4] = [
        NvmProfile::OFF,
        NvmProfile::FAST,
        NvmProfile::MID,
        NvmProfile::SLOW,
    ];

    pub fn by_name(name: &str) -> Option<NvmProfile> {
        NvmProfile::ALL
            .into_iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
    }

    /// Waits out one read access.
    pub fn read_access(&self) {
        spin(self.read_ns);
    }

    /// Waits out one write access.
    pub fn write_access(&self) {
        spin(self.write_ns);
    }
}

impl Default for NvmProfile {
    fn default() -> NvmProfile {
        NvmProfile::OFF
    }
}

fn spin(ns: u32) {
    if ns == 0 {
        return;
    }
    let until = Instant::now() + Duration::from_nanos(ns as u64);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_by_name() {
        assert_eq!(NvmProfile::by_name("MID"), Some(NvmProfile::MID));
        assert_eq!(NvmProfile::by_name("slow").map(|p| p.write_ns), Some(800));
        assert_eq!(NvmProfile::by_name("tape"), None);
    }

    #[test]
    fn an_access_takes_at_least_its_latency() {
        let t = Instant::now();
        for _ in 0..100 {
            NvmProfile::SLOW.write_access();
        }
        assert!(t.elapsed() >= Duration::from_micros(80));
    }
}
