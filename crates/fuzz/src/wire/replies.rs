//! What the server sent back, checked as a client would read it.
//!
//! ```text
//!  bytes ─► 'N'/'S'/'G' answers to SSL/GSS requests (one byte each)
//!        ─► messages: type ∈ backend types, length ≥ 4, body complete
//!           ErrorResponse/NoticeResponse: severity, 5-character SQLSTATE,
//!           message; ReadyForQuery: I, T or E; nothing after a FATAL
//!        ─► acknowledged: did the server tell the client that something
//!           committed (ReadyForQuery 'I' after a CommandComplete, or a
//!           CommandComplete "COMMIT")?
//! ```

/// Backend message types the server may send.
const BACKEND_TYPES: &[u8] = b"RSKZCTDIEN123snGtv";

#[derive(Debug, Default)]
pub struct Replies {
    /// (type, SQLSTATE of errors) in order, for novelty and reports.
    pub trail: Vec<(u8, Option<String>)>,
    /// A commit was acknowledged to the client.
    pub acknowledged: bool,
    /// A FATAL error was sent.
    pub fatal: bool,
}

fn error_fields(body: &[u8]) -> Result<(String, String), String> {
    let mut severity = None;
    let mut code = None;
    let mut message = None;
    // Fields, each NUL-terminated, then one more NUL.
    let fields = body
        .strip_suffix(&[0])
        .and_then(|f| f.strip_suffix(&[0]))
        .ok_or("an error response without its terminators")?;
    for f in fields.split(|b| *b == 0) {
        let Some((&t, v)) = f.split_first() else {
            return Err("an empty error field".into());
        };
        let v = std::str::from_utf8(v).map_err(|_| "an error field that is not UTF-8")?;
        match t {
            b'S' => severity = Some(v.to_owned()),
            b'C' => code = Some(v.to_owned()),
            b'M' => message = Some(v.to_owned()),
            _ => {}
        }
    }
    let (Some(severity), Some(code), Some(_)) = (severity, code, message) else {
        return Err(format!("an error response without S, C and M: {body:?}"));
    };
    if code.len() != 5 || !code.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(format!("a malformed SQLSTATE {code:?}"));
    }
    Ok((severity, code))
}

/// Parses and checks everything the server wrote on one connection.
/// `negotiation` is how many one-byte SSL/GSS answers to expect first.
pub fn check(bytes: &[u8], negotiation: usize) -> Result<Replies, String> {
    let mut replies = Replies::default();
    let mut at = 0;
    for _ in 0..negotiation {
        match bytes.get(at) {
            Some(b'N') => at += 1,
            Some(other) => {
                // A FATAL error may follow a refused request instead.
                if *other == b'E' {
                    break;
                }
                return Err(format!("answer {other} to an SSL/GSS request"));
            }
            None => break,
        }
    }
    let mut since_ready = 0usize;
    while at < bytes.len() {
        if replies.fatal {
            return Err("the server wrote after a FATAL error".into());
        }
        let ty = bytes[at];
        if !BACKEND_TYPES.contains(&ty) {
            return Err(format!("an unknown backend message type {ty} at byte {at}"));
        }
        let Some(len) = bytes.get(at + 1..at + 5) else {
            return Err("a backend message cut inside its length".into());
        };
        let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        if len < 4 {
            return Err(format!("a backend message length {len}"));
        }
        let end = at + 1 + len as usize;
        let Some(body) = bytes.get(at + 5..end) else {
            return Err("a backend message cut short".into());
        };
        let mut code = None;
        match ty {
            b'E' | b'N' => {
                let (severity, c) = error_fields(body)?;
                if ty == b'E' && severity == "FATAL" {
                    replies.fatal = true;
                }
                code = Some(c);
            }
            b'Z' => {
                let [status] = body else {
                    return Err("a ReadyForQuery without one status byte".into());
                };
                if !b"ITE".contains(status) {
                    return Err(format!("a ReadyForQuery status {status}"));
                }
                if *status == b'I' && since_ready > 0 {
                    replies.acknowledged = true;
                }
                since_ready = 0;
            }
            b'C' => {
                since_ready += 1;
                if body.starts_with(b"COMMIT") {
                    replies.acknowledged = true;
                }
            }
            _ => {}
        }
        replies.trail.push((ty, code));
        at = end;
    }
    Ok(replies)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(ty: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![ty];
        m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn commits_are_acknowledged_by_ready_for_query_or_commit() {
        let r = check(&[msg(b'C', b"DELETE 1\0"), msg(b'Z', b"I")].concat(), 0).unwrap();
        assert!(r.acknowledged);
        let r = check(&[msg(b'C', b"DELETE 1\0"), msg(b'Z', b"T")].concat(), 0).unwrap();
        assert!(!r.acknowledged);
        let r = check(&msg(b'C', b"DELETE 1\0"), 0).unwrap();
        assert!(!r.acknowledged);
        assert!(check(&msg(b'Z', b"X"), 0).is_err());
        assert!(check(
            &[msg(b'E', b"SFATAL\0C08P01\0Mx\0\0"), msg(b'Z', b"I")].concat(),
            0
        )
        .is_err());
        assert!(check(&msg(b'E', b"SERROR\0C08P\0Mx\0\0"), 0).is_err());
    }
}
