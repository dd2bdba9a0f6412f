//! The sync plane over a message link: a device's shared lock table
//! reached by SLT_LOAD, SLT_CAS and SLT_OCCUPIED when host and device
//! share no memory (`tcp:`), each one message on [`crate::Plane::Sync`].
//!
//! ```text
//!  host lock manager ── SharedLockTable::remote(SyncPlane) ── SLT_CAS ──► device
//!                                                                        └─ one 128-bit CAS
//! ```
//!
//! Over a unix socket the host maps the table in /dev/shm instead and a
//! lock costs an instruction, not a round trip: `ndpdb bench slt` puts
//! the two side by side.

use ndpdb_slt::{RemoteWords, SltError};

use crate::client::DeviceClient;
use crate::LinkError;

/// [`RemoteWords`] over a [`DeviceClient`].
pub struct SyncPlane {
    client: DeviceClient,
}

impl SyncPlane {
    pub fn new(client: DeviceClient) -> SyncPlane {
        SyncPlane { client }
    }
}

fn unavailable(e: LinkError) -> SltError {
    match e {
        LinkError::Corrupted(m) => SltError::Corrupted(m),
        e => SltError::Unavailable(e.to_string()),
    }
}

impl RemoteWords for SyncPlane {
    fn load(&self, word: u64) -> ndpdb_slt::Result<u128> {
        self.client.slt_load(word).map_err(unavailable)
    }

    fn compare_exchange(
        &self,
        word: u64,
        old: u128,
        new: u128,
    ) -> ndpdb_slt::Result<Result<(), u128>> {
        self.client.slt_cas(word, old, new).map_err(unavailable)
    }

    fn occupied(&self) -> ndpdb_slt::Result<Vec<(u64, u128)>> {
        self.client.slt_occupied().map_err(unavailable)
    }
}
