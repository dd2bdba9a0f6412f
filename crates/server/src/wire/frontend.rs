//! The frontend messages after startup, decoded from a framed body.
//!
//! ```text
//!  type  message       body
//!  'Q'   Query         sql\0
//!  'P'   Parse         name\0 sql\0 n:i16 oid:i32 × n
//!  'B'   Bind          (decoded by the handler, in PostgreSQL's order)
//!  'D'   Describe      'S'|'P' name\0
//!  'E'   Execute       portal\0 max_rows:i32
//!  'C'   Close         'S'|'P' name\0
//!  'S'   Sync   'H' Flush   'X' Terminate          (empty)
//!  'd'   CopyData      bytes        'c' CopyDone   'f' CopyFail  message\0
//!  'F'   FunctionCall  (refused)
//! ```
//!
//! Each decoder reads its fields with [`Body`] and requires the body to be
//! used up, so a malformed message is an 08P01 error naming what is
//! wrong, exactly as PostgreSQL words it.

use bytes::Bytes;

use super::body::{protocol_violation, Body, Result};
use super::frame::{LARGE_MESSAGE_LIMIT, SMALL_MESSAGE_LIMIT};

/// What a Describe or Close names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Statement,
    Portal,
}

#[derive(Debug)]
pub enum Frontend {
    Query(String),
    Parse {
        name: String,
        sql: String,
        param_types: Vec<u32>,
    },
    Bind(Body),
    Describe {
        target: Target,
        name: String,
    },
    Execute {
        portal: String,
        max_rows: i32,
    },
    Close {
        target: Target,
        name: String,
    },
    Sync,
    Flush,
    Terminate,
    CopyData(Bytes),
    CopyDone,
    CopyFail(String),
    FunctionCall,
}

/// The length limit of a message type after startup, or `None` for a
/// type that does not exist (a FATAL protocol violation).
pub fn limit_of(ty: u8) -> Option<usize> {
    match ty {
        b'Q' | b'P' | b'B' | b'd' | b'F' => Some(LARGE_MESSAGE_LIMIT),
        b'S' | b'H' | b'X' | b'C' | b'D' | b'E' | b'c' | b'f' => Some(SMALL_MESSAGE_LIMIT),
        _ => None,
    }
}

/// Whether an error in this message type starts PostgreSQL's skip to
/// the next Sync (the extended query protocol's messages).
pub fn is_extended(ty: u8) -> bool {
    matches!(ty, b'P' | b'B' | b'D' | b'E' | b'C' | b'H')
}

fn target(byte: u8, what: &str) -> Result<Target> {
    match byte {
        b'S' => Ok(Target::Statement),
        b'P' => Ok(Target::Portal),
        other => Err(protocol_violation(format!(
            "invalid {what} message subtype {other}"
        ))),
    }
}

/// Decodes the body of a message of type `ty` (one [`limit_of`] knows).
pub fn decode(ty: u8, mut body: Body) -> Result<Frontend> {
    let msg = match ty {
        b'Q' => Frontend::Query(body.cstr()?),
        b'P' => {
            let name = body.cstr()?;
            let sql = body.cstr()?;
            let n = body.count16()?;
            if n * 4 > body.remaining() {
                return Err(protocol_violation("insufficient data left in message"));
            }
            let param_types = (0..n)
                .map(|_| body.int32().map(|oid| oid as u32))
                .collect::<Result<_>>()?;
            Frontend::Parse {
                name,
                sql,
                param_types,
            }
        }
        b'B' => return Ok(Frontend::Bind(body)),
        b'D' => {
            let t = target(body.byte()?, "DESCRIBE")?;
            Frontend::Describe {
                target: t,
                name: body.cstr()?,
            }
        }
        b'C' => {
            let t = target(body.byte()?, "CLOSE")?;
            Frontend::Close {
                target: t,
                name: body.cstr()?,
            }
        }
        b'E' => Frontend::Execute {
            portal: body.cstr()?,
            max_rows: body.int32()?,
        },
        b'S' => Frontend::Sync,
        b'H' => Frontend::Flush,
        // PostgreSQL reads no further than the type of these.
        b'X' => return Ok(Frontend::Terminate),
        b'F' => return Ok(Frontend::FunctionCall),
        b'd' => return Ok(Frontend::CopyData(body.rest())),
        b'c' => return Ok(Frontend::CopyDone),
        b'f' => return Ok(Frontend::CopyFail(body.cstr()?)),
        other => {
            return Err(protocol_violation(format!(
                "invalid frontend message type {other}"
            )))
        }
    };
    body.end()?;
    Ok(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_bytes(ty: u8, b: &[u8]) -> Result<Frontend> {
        decode(ty, Body::new(Bytes::copy_from_slice(b)))
    }

    #[test]
    fn malformed_bodies_get_postgres_messages() {
        for (ty, body, message) in [
            // Parse without its parameter-type count.
            (
                b'P',
                &b"\0SELECT 1\0"[..],
                "insufficient data left in message",
            ),
            // A count the body cannot hold is refused before allocating.
            (
                b'P',
                b"\0SELECT 1\0\xff\xff",
                "insufficient data left in message",
            ),
            (b'S', b"ab", "invalid message format"),
            (b'D', b"X\0", "invalid DESCRIBE message subtype 88"),
            (b'C', b"X\0", "invalid CLOSE message subtype 88"),
            (b'Q', b"SELECT 1", "invalid string in message"),
            (b'Q', b"SELECT 1\0SELECT 2\0", "invalid message format"),
        ] {
            let e = decode_bytes(ty, body).unwrap_err();
            assert_eq!(e.message, message, "{} {body:?}", ty as char);
        }
    }

    #[test]
    fn well_formed_messages_decode() {
        match decode_bytes(b'E', b"\0\xff\xff\xff\xfb").unwrap() {
            Frontend::Execute { portal, max_rows } => {
                assert_eq!(portal, "");
                assert_eq!(max_rows, -5);
            }
            m => panic!("{m:?}"),
        }
        match decode_bytes(b'P', b"s1\0SELECT $1\0\0\x01\0\0\0\x17").unwrap() {
            Frontend::Parse {
                name, param_types, ..
            } => {
                assert_eq!(name, "s1");
                assert_eq!(param_types, vec![23]);
            }
            m => panic!("{m:?}"),
        }
        assert!(limit_of(b'!').is_none() && limit_of(b'p').is_none());
    }
}
