//! The PostgreSQL wire format as ndpdb reads and writes it: every byte a
//! client sends is untrusted, so framing and decoding are ours and
//! bounded; pgwire supplies only the backend message encoders and the
//! password exchanges.
//!
//! ```text
//!  socket ─► frame (length limits, body read as it arrives)
//!         ─► body (bounded field reads, UTF-8 checks)
//!         ─► frontend (typed message, body used up)  ─► connection.rs
//!  connection.rs ─► out (encode, flush at PostgreSQL's points) ─► socket
//! ```
//!
//! A violation is answered as PostgreSQL answers it: an 08P01 ERROR for a
//! malformed body (the connection goes on), a FATAL 08P01 for an unknown
//! message type, and a silent close for a length word that breaks the
//! framing.

pub mod body;
pub mod frame;
pub mod frontend;
pub mod out;

pub use body::Body;
pub use frame::{FrameError, FrameReader};
pub use frontend::{Frontend, Target};
pub use out::{Gone, Out};
