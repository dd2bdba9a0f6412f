//! YCSB client threads that run in the background of a longer experiment
//! (`mixed-update`, `churn`): reads and single-row updates on Zipfian
//! keys, at PostgreSQL's default isolation ([`ISOLATION`]), until stopped.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use ndpdb_formats::Value;
use ndpdb_host::Result;

use crate::isolation::Level;
use crate::target::Backend;
use crate::ycsb::{random_field, Workload, TABLE};
use crate::zipf::Zipfian;

/// The clients' isolation level: READ COMMITTED, so that a hot-key
/// update waits and re-checks instead of failing.
pub const ISOLATION: Level = Level::ReadCommitted;

/// Running clients and what they have done so far.
pub struct Clients {
    /// Operations that succeeded.
    pub ops: Arc<AtomicU64>,
    /// Operations that failed (e.g. 40001).
    pub errors: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    handles: Vec<JoinHandle<Result<()>>>,
}

impl Clients {
    /// Starts `threads` clients of `workload` over keys `0..records`.
    pub fn start(
        backend: &Backend,
        threads: usize,
        records: u64,
        workload: Workload,
    ) -> Result<Clients> {
        let ops = Arc::new(AtomicU64::new(0));
        let errors = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let zipf = Arc::new(Zipfian::new(records, 0.99));
        let mut handles = Vec::new();
        for t in 0..threads {
            let mut s = backend.connect()?;
            ISOLATION.apply(&mut s)?;
            crate::pin::pin_session(&mut s, t)?;
            let read = s.prepare(&format!("SELECT * FROM {TABLE} WHERE ycsb_key = $1"))?;
            let update = s.prepare(&format!(
                "UPDATE {TABLE} SET field0 = $1 WHERE ycsb_key = $2"
            ))?;
            let (ops, errors, stop, zipf) =
                (ops.clone(), errors.clone(), stop.clone(), zipf.clone());
            let read_fraction = workload.read_fraction();
            handles.push(std::thread::spawn(move || -> Result<()> {
                crate::pin::pin_host_thread(t);
                let mut rng = SmallRng::seed_from_u64(300 + t as u64);
                while !stop.load(Ordering::Relaxed) {
                    let key = Value::BigInt(zipf.next_key(&mut rng) as i64);
                    let r = if rng.gen::<f64>() < read_fraction {
                        s.execute(&read, &[key])
                    } else {
                        let v = Value::Text(random_field(&mut rng, 100));
                        s.execute(&update, &[v, key])
                    };
                    match r {
                        Ok(_) => ops.fetch_add(1, Ordering::Relaxed),
                        Err(_) => errors.fetch_add(1, Ordering::Relaxed),
                    };
                }
                Ok(())
            }));
        }
        Ok(Clients {
            ops,
            errors,
            stop,
            handles,
        })
    }

    /// Stops the clients; returns the failed operations.
    pub fn stop(self) -> Result<u64> {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.handles {
            h.join().map_err(|_| thread_panic())??;
        }
        Ok(self.errors.load(Ordering::Relaxed))
    }
}

pub(crate) fn thread_panic() -> ndpdb_host::Error {
    ndpdb_host::Error::new(
        ndpdb_formats::SqlState::INTERNAL_ERROR,
        "benchmark thread panicked",
    )
}
