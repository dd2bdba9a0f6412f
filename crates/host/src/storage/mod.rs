//! Storage, the host's side: where a table's bytes are and how they are
//! read. Pages live on the device; the host keeps the authoritative
//! address maps, caches pages and decides where new pages go.
//!
//! ```text
//!  maps.rs         VID map (tuple → head record) and L2P map (LPN → PPN)
//!  space.rs        free-space management: which PPNs may be written next
//!  buffer_pool.rs  device pages cached under a byte budget
//!  page_scan.rs    the host's side of the scan core (page by page)
//!  pk_index/       primary key → VID, checkpointed
//!  secondary_index/ key values → VIDs
//!  rewrite.rs      a table rewritten into a new layout (ADD / DROP COLUMN)
//!  framed_file.rs  small files replaced atomically (catalog, sequences)
//! ```

pub mod buffer_pool;
pub mod framed_file;
pub mod maps;
pub mod page_scan;
pub mod pk_index;
pub mod rewrite;
pub mod secondary_index;
pub mod space;
