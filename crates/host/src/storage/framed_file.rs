//! Small files replaced atomically (the catalog, the sequences):
//!
//! ```text
//!  MAGIC (4 bytes) | crc32 of payload u32 | payload length u64 | payload
//! ```
//!
//! Written to a temporary file, fsynced, renamed over the old one, and
//! the directory fsynced: a reader sees the old file or the new one.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use ndpdb_formats::codec::{Reader, Writer};

use crate::error::Result;

/// Replaces `path` with `magic` and `payload`, durably.
pub fn write(path: &Path, magic: &[u8; 4], payload: &[u8]) -> Result<()> {
    let mut w = Writer::new();
    w.raw(magic)
        .u32(crc32fast::hash(payload))
        .u64(payload.len() as u64)
        .raw(payload);
    let tmp = path.with_extension("tmp");
    {
        let mut f = File::create(&tmp)?;
        f.write_all(w.as_slice())?;
        f.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// The payload of a file's `bytes`, checked against `magic` and its
/// checksum (`what` names the file in errors).
pub fn payload<'a>(
    bytes: &'a [u8],
    magic: &[u8; 4],
    what: &str,
) -> ndpdb_formats::Result<&'a [u8]> {
    let mut r = Reader::new(bytes);
    if r.take(4)? != magic {
        return Err(ndpdb_formats::Error::corrupted(format!("bad {what} magic")));
    }
    let crc = r.u32()?;
    let len = r.u64()? as usize;
    let payload = r.take(len)?;
    if crc32fast::hash(payload) != crc {
        return Err(ndpdb_formats::Error::corrupted(format!(
            "{what} checksum mismatch"
        )));
    }
    Ok(payload)
}
