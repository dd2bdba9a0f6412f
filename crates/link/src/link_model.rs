//! The link model: named presets that throttle the data plane
//! (DESIGN.md §10). See `docs/LINK_MODEL.md` for the figures' sources.
//!
//! Each data-plane message occupies the link for `bytes / bandwidth`
//! (messages queue behind each other: the bandwidth is shared by all
//! threads), then pays the per-request latency. Control and sync planes
//! are not throttled; neither is anything inside the device.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// A link preset.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkModel {
    pub name: &'static str,
    /// Bytes per second; `None` = unthrottled.
    pub bytes_per_sec: Option<f64>,
    /// Added to every data-plane request.
    pub latency: Duration,
}

impl LinkModel {
    pub const UNTHROTTLED: LinkModel = LinkModel {
        name: "unthrottled",
        bytes_per_sec: None,
        latency: Duration::ZERO,
    };

    /// All presets, in the order documentation lists them.
    pub const PRESETS: [LinkModel; 3] = [
        LinkModel::UNTHROTTLED,
        LinkModel {
            name: "nvme-gen3x4",
            bytes_per_sec: Some(3.5e9),
            latency: Duration::from_micros(80),
        },
        LinkModel {
            name: "10gbe",
            bytes_per_sec: Some(1.17e9),
            latency: Duration::from_micros(30),
        },
    ];

    pub fn by_name(name: &str) -> Option<LinkModel> {
        LinkModel::PRESETS.iter().copied().find(|p| p.name == name)
    }

    pub fn names() -> Vec<&'static str> {
        LinkModel::PRESETS.iter().map(|p| p.name).collect()
    }

    pub fn is_throttled(&self) -> bool {
        self.bytes_per_sec.is_some() || !self.latency.is_zero()
    }
}

impl std::fmt::Display for LinkModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.bytes_per_sec {
            None => write!(f, "{}", self.name),
            Some(b) => write!(
                f,
                "{} ({:.2} GB/s, {} µs per request)",
                self.name,
                b / 1e9,
                self.latency.as_micros()
            ),
        }
    }
}

/// Applies a [`LinkModel`] to messages.
pub struct Throttle {
    model: LinkModel,
    busy_until: Mutex<Instant>,
}

impl Throttle {
    pub fn new(model: LinkModel) -> Throttle {
        Throttle {
            model,
            busy_until: Mutex::new(Instant::now()),
        }
    }

    pub fn model(&self) -> LinkModel {
        self.model
    }

    /// Delays the caller as the link would for one request moving `bytes`.
    pub fn pass(&self, bytes: usize) {
        if !self.model.is_throttled() {
            return;
        }
        let transfer = self.model.bytes_per_sec.map_or(Duration::ZERO, |bw| {
            Duration::from_secs_f64(bytes as f64 / bw)
        });
        let done = {
            let mut busy = self.busy_until.lock();
            let start = (*busy).max(Instant::now());
            *busy = start + transfer;
            start + transfer + self.model.latency
        };
        wait_until(done);
    }
}

/// Sleeps most of the way, then spins (sleep alone overshoots by ~60 µs).
fn wait_until(t: Instant) {
    loop {
        let now = Instant::now();
        if now >= t {
            return;
        }
        let left = t - now;
        if left > Duration::from_micros(200) {
            std::thread::sleep(left - Duration::from_micros(100));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// A device's processing elements: `pes`, or with 0 one per CPU it is
/// pinned to, or one per CPU of the machine.
pub fn effective_pes(pes: usize, cpus: &[usize]) -> usize {
    match (pes, cpus.len()) {
        (0, 0) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        (0, n) => n,
        (n, _) => n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_named_and_found() {
        for p in LinkModel::PRESETS {
            assert_eq!(LinkModel::by_name(p.name), Some(p));
        }
        assert!(LinkModel::by_name("carrier-pigeon").is_none());
        assert!(!LinkModel::UNTHROTTLED.is_throttled());
    }
}
