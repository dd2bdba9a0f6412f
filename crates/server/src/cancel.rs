//! Query cancellation (DESIGN.md §11): PostgreSQL's CancelRequest.
//!
//! ```text
//!  startup ─► Registrar::generate ─► (pid, secret key) in BackendKeyData,
//!             and pid → (key, the session's Interrupt) in the Registry
//!  new connection: CancelRequest(pid, key) ─► Registry::cancel ─► key
//!             matches? ─► Interrupt::cancel ─► the running statement
//!             fails with 57014
//! ```
//!
//! The secret key is random per connection; a request with a wrong key
//! or an unknown pid does nothing (PostgreSQL answers nothing either).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use pgwire::api::{ClientInfo, PidSecretKeyGenerator, RandomPidSecretKeyGenerator};
use pgwire::messages::startup::SecretKey;

use ndpdb_host::Interrupt;

/// Live connections by backend pid.
#[derive(Default)]
pub struct Registry {
    connections: Mutex<HashMap<i32, (Vec<u8>, Interrupt)>>,
    next_pid: AtomicI32,
}

impl Registry {
    pub fn new() -> Arc<Registry> {
        Arc::new(Registry {
            connections: Mutex::new(HashMap::new()),
            next_pid: AtomicI32::new(10_000),
        })
    }

    fn forget(&self, pid: i32) {
        self.connections.lock().remove(&pid);
    }

    /// A CancelRequest: interrupts the statement `pid` runs if `key` is
    /// that connection's secret key.
    pub fn cancel(&self, pid: i32, key: &[u8]) {
        let target = self
            .connections
            .lock()
            .get(&pid)
            .filter(|(k, _)| k.as_slice() == key)
            .map(|(_, i)| i.clone());
        if let Some(interrupt) = target {
            interrupt.cancel();
        }
    }
}

/// One connection's pid and key: registered at startup, removed on drop.
pub struct Registrar {
    registry: Arc<Registry>,
    interrupt: Interrupt,
    keys: RandomPidSecretKeyGenerator,
    pid: Mutex<Option<i32>>,
}

impl Registrar {
    pub fn new(registry: Arc<Registry>, interrupt: Interrupt) -> Registrar {
        Registrar {
            registry,
            interrupt,
            keys: RandomPidSecretKeyGenerator::default(),
            pid: Mutex::new(None),
        }
    }
}

/// A key as its wire bytes (a protocol 3.0 key is sent as an i32).
fn key_bytes(key: &SecretKey) -> Vec<u8> {
    match key {
        SecretKey::I32(i) => i.to_be_bytes().to_vec(),
        SecretKey::Bytes(b) => b.to_vec(),
    }
}

impl Registrar {
    /// The pid sent in BackendKeyData (after startup).
    pub fn pid(&self) -> Option<i32> {
        *self.pid.lock()
    }
}

impl PidSecretKeyGenerator for Registrar {
    fn generate(&self, client: &dyn ClientInfo) -> (i32, SecretKey) {
        // The random key (its length follows the protocol version).
        let (_, key) = self.keys.generate(client);
        // The OS thread serving the connection where a thread id is a pid
        // (`renice -p`, `setpriority`), as PostgreSQL's backend pid names
        // its process; unique among live connections, as each has its own
        // thread and unregisters before that thread ends.
        let pid = if cfg!(target_os = "linux") {
            ndpdb_sql::session::current_thread_pid()
        } else {
            self.registry.next_pid.fetch_add(1, Ordering::Relaxed)
        };
        self.registry
            .connections
            .lock()
            .insert(pid, (key_bytes(&key), self.interrupt.clone()));
        *self.pid.lock() = Some(pid);
        (pid, key)
    }
}

impl Drop for Registrar {
    fn drop(&mut self) {
        if let Some(pid) = self.pid.lock().take() {
            self.registry.forget(pid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_right_key_cancels() {
        let registry = Registry::new();
        let interrupt = Interrupt::new();
        let registrar = Registrar::new(registry.clone(), interrupt.clone());
        let key = SecretKey::I32(-567_948_894);
        registry
            .connections
            .lock()
            .insert(7, (key_bytes(&key), interrupt.clone()));
        registry.cancel(7, &[0xde, 0x25, 0xc9, 0xa3]);
        registry.cancel(8, &[0xde, 0x25, 0xc9, 0xa2]);
        assert!(interrupt.check().is_ok());
        registry.cancel(7, &[0xde, 0x25, 0xc9, 0xa2]);
        assert!(interrupt.check().is_err());
        drop(registrar);
    }
}
