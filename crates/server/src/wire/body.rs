//! A cursor over one message body: every read stays inside the body the
//! client declared, and a read past its end is PostgreSQL's 08P01 error
//! (`insufficient data left in message`, `invalid string in message`,
//! `invalid message format` for bytes left over), never a panic.
//!
//! ```text
//!  'B' len │ portal\0 │ stmt\0 │ n:i16 │ fmt:i16 × n │ … │   ◄── Body
//!          └─ pos ──►                                   end
//! ```
//!
//! Strings are checked to be UTF-8 (the server encoding) as PostgreSQL's
//! `pq_getmsgstring` does: 22021 naming the first invalid sequence.

use bytes::Bytes;

use ndpdb_formats::SqlState;
use ndpdb_sql::Error;

pub type Result<T> = std::result::Result<T, Error>;

/// The body of one frontend message (the bytes after its length word).
#[derive(Clone, Debug)]
pub struct Body {
    data: Bytes,
    pos: usize,
}

pub(crate) fn protocol_violation(message: impl Into<String>) -> Error {
    Error::new(SqlState::PROTOCOL_VIOLATION, message)
}

fn insufficient() -> Error {
    protocol_violation("insufficient data left in message")
}

impl Body {
    pub fn new(data: Bytes) -> Body {
        Body { data, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if n > self.remaining() {
            return Err(insufficient());
        }
        let at = self.pos;
        self.pos += n;
        Ok(&self.data[at..at + n])
    }

    /// One byte (`no data left in message` past the end).
    pub fn byte(&mut self) -> Result<u8> {
        if self.remaining() == 0 {
            return Err(protocol_violation("no data left in message"));
        }
        self.pos += 1;
        Ok(self.data[self.pos - 1])
    }

    pub fn int16(&mut self) -> Result<i16> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    /// A count: PostgreSQL reads these as unsigned 16-bit integers.
    pub fn count16(&mut self) -> Result<usize> {
        Ok(self.int16()? as u16 as usize)
    }

    pub fn int32(&mut self) -> Result<i32> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// `n` bytes; a negative `n` or one past the end is an error.
    pub fn bytes(&mut self, n: i32) -> Result<Bytes> {
        let n = usize::try_from(n).map_err(|_| insufficient())?;
        if n > self.remaining() {
            return Err(insufficient());
        }
        let at = self.pos;
        self.pos += n;
        Ok(self.data.slice(at..at + n))
    }

    /// A NUL-terminated UTF-8 string.
    pub fn cstr(&mut self) -> Result<String> {
        let rest = &self.data[self.pos..];
        let Some(nul) = rest.iter().position(|&b| b == 0) else {
            return Err(protocol_violation("invalid string in message"));
        };
        let s = utf8(&rest[..nul])?.to_owned();
        self.pos += nul + 1;
        Ok(s)
    }

    /// The rest of the body.
    pub fn rest(&mut self) -> Bytes {
        let at = self.pos;
        self.pos = self.data.len();
        self.data.slice(at..)
    }

    /// The body must be used up (`invalid message format` otherwise).
    pub fn end(&self) -> Result<()> {
        if self.remaining() != 0 {
            return Err(protocol_violation("invalid message format"));
        }
        Ok(())
    }
}

/// Checks UTF-8 as PostgreSQL's `pg_verify_mbstr` does: 22021 names the
/// bytes of the first invalid character (as many as its lead byte says).
/// A NUL byte is invalid in text, as in PostgreSQL.
pub fn utf8(bytes: &[u8]) -> Result<&str> {
    let valid = match std::str::from_utf8(bytes) {
        Ok(s) => match memchr::memchr(0, bytes) {
            None => return Ok(s),
            Some(at) => at,
        },
        Err(e) => e.valid_up_to(),
    };
    let valid = memchr::memchr(0, &bytes[..valid]).unwrap_or(valid);
    Err({
        let bad = &bytes[valid..];
        let len = match bad[0] {
            b if b & 0x80 == 0 => 1,
            b if b & 0xe0 == 0xc0 => 2,
            b if b & 0xf0 == 0xe0 => 3,
            b if b & 0xf8 == 0xf0 => 4,
            _ => 1,
        };
        let shown: Vec<String> = bad.iter().take(len).map(|b| format!("0x{b:02x}")).collect();
        Error::new(
            SqlState::CHARACTER_NOT_IN_REPERTOIRE,
            format!(
                "invalid byte sequence for encoding \"UTF8\": {}",
                shown.join(" ")
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(b: &[u8]) -> Body {
        Body::new(Bytes::copy_from_slice(b))
    }

    #[test]
    fn reads_stop_at_the_declared_end() {
        let mut b = body(&[0, 5, 0, 0]);
        assert_eq!(b.int16().unwrap(), 5);
        assert_eq!(
            b.int32().unwrap_err().message,
            "insufficient data left in message"
        );
        // The failed read consumed nothing.
        assert_eq!(b.remaining(), 2);
        assert_eq!(
            b.bytes(-2).unwrap_err().message,
            "insufficient data left in message"
        );
        assert_eq!(b.bytes(3).unwrap_err().code, SqlState::PROTOCOL_VIOLATION);
        assert_eq!(b.bytes(2).unwrap().as_ref(), &[0, 0]);
        assert_eq!(b.byte().unwrap_err().message, "no data left in message");
        b.end().unwrap();
    }

    #[test]
    fn strings_need_a_terminator_and_utf8() {
        let mut b = body(b"abc");
        assert_eq!(b.cstr().unwrap_err().message, "invalid string in message");
        let mut b = body(b"ab\0c");
        assert_eq!(b.cstr().unwrap(), "ab");
        assert_eq!(b.end().unwrap_err().message, "invalid message format");
        let mut b = body(b"x\xe2\x28\xa1\0");
        let e = b.cstr().unwrap_err();
        assert_eq!(e.code, SqlState::CHARACTER_NOT_IN_REPERTOIRE);
        assert_eq!(
            e.message,
            "invalid byte sequence for encoding \"UTF8\": 0xe2 0x28 0xa1"
        );
        assert_eq!(
            utf8(b"ab\0\0\x01").unwrap_err().message,
            "invalid byte sequence for encoding \"UTF8\": 0x00"
        );
        let mut b = body(b"\xff\0");
        assert_eq!(
            b.cstr().unwrap_err().message,
            "invalid byte sequence for encoding \"UTF8\": 0xff"
        );
    }

    #[test]
    fn counts_are_unsigned() {
        let mut b = body(&[0xff, 0xff]);
        assert_eq!(b.count16().unwrap(), 65_535);
    }
}
