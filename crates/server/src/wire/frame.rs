//! Framing: cutting the client's byte stream into messages by their
//! declared lengths, within PostgreSQL's limits.
//!
//! ```text
//!  startup phase:  len:i32 │ body (len−4 bytes, 4 ≤ len−4 ≤ 10,000)
//!  afterwards:     type:u8 │ len:i32 │ body (len−4 bytes, len ≤ limit(type))
//!
//!  limit(type): Query, Parse, Bind, CopyData, FunctionCall   1 GiB − 2
//!               Sync, Flush, Terminate, Close, Describe,
//!               Execute, CopyDone, CopyFail                  10,000
//!               password messages (authentication)           65,535
//!               anything else: FATAL 08P01, before the length is read
//! ```
//!
//! A length outside the limits is a broken stream: PostgreSQL closes the
//! connection without a reply, and so do we. Nothing is allocated by a
//! declared length: the body buffer grows as bytes arrive (at most 64 KiB
//! at a time), so a client claiming a 1 GiB message holds 1 GiB only once
//! it has sent it. A body is handed on whole, so a decoder can never read
//! into the next message, and no message is decoded before all of it is here.

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::body::Body;

/// Largest startup packet body (PostgreSQL's MAX_STARTUP_PACKET_LENGTH).
pub const MAX_STARTUP_PACKET: usize = 10_000;
/// Largest Query, Parse, Bind, CopyData or FunctionCall message, length
/// word included (PostgreSQL's PQ_LARGE_MESSAGE_LIMIT, MaxAllocSize − 1).
pub const LARGE_MESSAGE_LIMIT: usize = 0x3fff_fffe;
/// Largest message of any other type (PQ_SMALL_MESSAGE_LIMIT).
pub const SMALL_MESSAGE_LIMIT: usize = 10_000;
/// Largest password / SASL message (PG_MAX_AUTH_TOKEN_LENGTH).
pub const AUTH_MESSAGE_LIMIT: usize = 65_535;
/// Most bytes read ahead of what the current message needs.
const READ_CHUNK: usize = 64 * 1024;

/// Why no message could be read.
#[derive(Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The client closed or reset the connection (or a read failed).
    Closed,
    /// A length word outside the limits: the stream cannot be trusted
    /// any more. PostgreSQL closes without a reply.
    BadLength,
}

/// Reads whole messages from the client.
pub struct FrameReader<R> {
    io: R,
    buf: BytesMut,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(io: R) -> FrameReader<R> {
        FrameReader {
            io,
            buf: BytesMut::with_capacity(8 * 1024),
        }
    }

    /// Whether bytes beyond the last message have already arrived.
    pub fn has_buffered(&self) -> bool {
        !self.buf.is_empty()
    }

    /// Reads until `n` bytes are buffered.
    async fn fill(&mut self, n: usize) -> Result<(), FrameError> {
        while self.buf.len() < n {
            self.buf
                .reserve((n - self.buf.len()).clamp(8 * 1024, READ_CHUNK));
            match self.io.read_buf(&mut self.buf).await {
                Ok(0) | Err(_) => return Err(FrameError::Closed),
                Ok(_) => {}
            }
        }
        Ok(())
    }

    fn length_word(&self, at: usize) -> usize {
        let b = &self.buf[at..at + 4];
        i32::from_be_bytes([b[0], b[1], b[2], b[3]]) as u32 as usize
    }

    /// A startup-phase packet (startup message, SSLRequest,
    /// GSSENCRequest, CancelRequest): its body after the length word.
    pub async fn startup_packet(&mut self) -> Result<Body, FrameError> {
        self.fill(4).await?;
        let len = self.length_word(0);
        let body_len = len.wrapping_sub(4);
        if len < 4 || !(4..=MAX_STARTUP_PACKET).contains(&body_len) {
            return Err(FrameError::BadLength);
        }
        self.fill(len).await?;
        self.buf.advance(4);
        Ok(Body::new(self.buf.split_to(body_len).freeze()))
    }

    /// The type byte of the next message (waits for it).
    pub async fn message_type(&mut self) -> Result<u8, FrameError> {
        self.fill(1).await?;
        Ok(self.buf[0])
    }

    /// The next message whose type byte [`FrameReader::message_type`]
    /// returned: its length word must lie in `4..=limit`.
    pub async fn message_body(&mut self, limit: usize) -> Result<Body, FrameError> {
        self.fill(5).await?;
        let len = self.length_word(1);
        if !(4..=limit).contains(&len) {
            return Err(FrameError::BadLength);
        }
        self.fill(1 + len).await?;
        self.buf.advance(5);
        Ok(Body::new(self.buf.split_to(len - 4).freeze()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(bytes: &[u8]) -> FrameReader<&[u8]> {
        FrameReader::new(bytes)
    }

    #[tokio::test]
    async fn messages_are_cut_at_their_declared_length() {
        // A Bind whose length covers 3 junk bytes, then a Sync.
        let mut r = reader(&[b'B', 0, 0, 0, 7, b'x', b'y', b'z', b'S', 0, 0, 0, 4]);
        assert_eq!(r.message_type().await.unwrap(), b'B');
        let body = r.message_body(LARGE_MESSAGE_LIMIT).await.unwrap();
        assert_eq!(body.remaining(), 3);
        assert_eq!(r.message_type().await.unwrap(), b'S');
        let body = r.message_body(SMALL_MESSAGE_LIMIT).await.unwrap();
        assert_eq!(body.remaining(), 0);
        assert_eq!(r.message_type().await, Err(FrameError::Closed));
    }

    #[tokio::test]
    async fn lengths_outside_the_limits_break_the_stream() {
        for bytes in [
            &[b'd', 0, 0, 0, 0][..],
            &[b'Q', 0, 0, 0, 2, b'x'],
            &[b'S', 0, 0, 0x27, 0x11],
            &[b'Q', 0x7f, 0xff, 0xff, 0xff],
            &[b'Q', 0xff, 0xff, 0xff, 0xff],
        ] {
            let mut r = reader(bytes);
            r.message_type().await.unwrap();
            let limit = if bytes[0] == b'S' {
                SMALL_MESSAGE_LIMIT
            } else {
                LARGE_MESSAGE_LIMIT
            };
            assert_eq!(
                r.message_body(limit).await.unwrap_err(),
                FrameError::BadLength,
                "{bytes:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_truncated_message_is_a_closed_stream() {
        let mut r = reader(&[b'Q', 0, 0, 0, 100, b'S', b'E']);
        r.message_type().await.unwrap();
        assert_eq!(
            r.message_body(LARGE_MESSAGE_LIMIT).await.unwrap_err(),
            FrameError::Closed
        );
    }

    #[tokio::test]
    async fn startup_packets_are_bounded() {
        for bytes in [
            &[0u8, 0, 0, 0][..],
            &[0x7f, 0xff, 0xff, 0xff],
            &[0, 0, 0, 7, 0, 3, 0],
            &[0, 0, 0x27, 0x15],
        ] {
            assert_eq!(
                reader(bytes).startup_packet().await.unwrap_err(),
                FrameError::BadLength,
                "{bytes:?}"
            );
        }
        let mut r = reader(&[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f, 1]);
        assert_eq!(r.startup_packet().await.unwrap().remaining(), 4);
        assert!(r.has_buffered());
    }
}
