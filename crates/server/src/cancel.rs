//! Query cancellation (DESIGN.md §11): PostgreSQL's CancelRequest.
//!
//! ```text
//!  startup ─► Registrar::generate ─► (pid, secret key) in BackendKeyData,
//!             and pid → (key, the session's Interrupt) in the Registry
//!  new connection: CancelRequest(pid, key) ─► Canceller ─► key matches?
//!             ─► Interrupt::cancel ─► the running statement fails with 57014
//! ```
//!
//! The secret key is random per connection; a request with a wrong key
//! or an unknown pid does nothing (PostgreSQL answers nothing either).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;
use pgwire::api::cancel::CancelHandler;
use pgwire::api::{ClientInfo, PidSecretKeyGenerator, RandomPidSecretKeyGenerator};
use pgwire::messages::cancel::CancelRequest;
use pgwire::messages::startup::SecretKey;

use ndpdb_host::Interrupt;

/// Live connections by backend pid.
#[derive(Default)]
pub struct Registry {
    connections: Mutex<HashMap<i32, (SecretKey, Interrupt)>>,
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

impl PidSecretKeyGenerator for Registrar {
    fn generate(&self, client: &dyn ClientInfo) -> (i32, SecretKey) {
        // The random key (its length follows the protocol version).
        let (_, key) = self.keys.generate(client);
        let pid = self.registry.next_pid.fetch_add(1, Ordering::Relaxed);
        self.registry
            .connections
            .lock()
            .insert(pid, (key.clone(), self.interrupt.clone()));
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

/// A key as its wire bytes: pgwire decodes a CancelRequest's 4-byte key
/// (protocol 3.0) as bytes, while BackendKeyData sent it as an i32.
fn key_bytes(key: &SecretKey) -> Vec<u8> {
    match key {
        SecretKey::I32(i) => i.to_be_bytes().to_vec(),
        SecretKey::Bytes(b) => b.to_vec(),
    }
}

/// Answers CancelRequests.
pub struct Canceller(pub Arc<Registry>);

#[async_trait]
impl CancelHandler for Canceller {
    async fn on_cancel_request(&self, request: CancelRequest) {
        let target = self
            .0
            .connections
            .lock()
            .get(&request.pid)
            .filter(|(key, _)| key_bytes(key) == key_bytes(&request.secret_key))
            .map(|(_, i)| i.clone());
        if let Some(interrupt) = target {
            interrupt.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_matches_in_either_wire_form_and_only_itself() {
        let k = SecretKey::I32(-567_948_894);
        let same = SecretKey::Bytes(bytes::Bytes::from_static(&[0xde, 0x25, 0xc9, 0xa2]));
        let other = SecretKey::Bytes(bytes::Bytes::from_static(&[0xde, 0x25, 0xc9, 0xa3]));
        assert_eq!(key_bytes(&k), key_bytes(&same));
        assert_ne!(key_bytes(&k), key_bytes(&other));
    }
}
