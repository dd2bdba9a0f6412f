//! The startup phase of a connection, as a PostgreSQL 15 server runs it.
//!
//! ```text
//!  packet ─┬─ SSLRequest / GSSENCRequest ─► 'N' (no GSS; TLS, when the server
//!          │                                  has a certificate, was set up
//!          │                                  before this: tls.rs), next packet
//!          ├─ CancelRequest (16 bytes)    ─► cancel that session, close
//!          ├─ bad length                  ─► close, no reply
//!          └─ StartupMessage 3.x ─► layout checked (08P01), user required
//!               (28000), 3.1+ or _pq_ options ─► NegotiateProtocolVersion 3.0
//!             ─► authentication (auth.rs): password messages read with
//!                their own limit, anything else FATAL 08P01
//!             ─► AuthenticationOk, ParameterStatus…, BackendKeyData, ReadyForQuery
//! ```
//!
//! The whole phase must finish within [`AUTHENTICATION_TIMEOUT`]
//! (PostgreSQL's authentication_timeout), so a client that connects and
//! says nothing does not hold a connection slot.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Sink;
use pgwire::api::auth::StartupHandler;
use pgwire::api::{ClientInfo, DefaultClient, PgWireConnectionState};
use pgwire::messages::response::TransactionStatus;
use pgwire::messages::startup::{
    NegotiateProtocolVersion, Password, PasswordMessageFamily, SASLInitialResponse, SASLResponse,
    SecretKey, Startup as StartupMessage,
};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage, ProtocolVersion};
use pgwire::tokio::tokio_rustls::rustls::pki_types::CertificateDer;
use tokio::io::{AsyncRead, AsyncWrite};

use ndpdb_formats::SqlState;
use ndpdb_sql::Error;

use crate::auth::Startup;
use crate::cancel::Registry;
use crate::wire::body::protocol_violation;
use crate::wire::frame::AUTH_MESSAGE_LIMIT;
use crate::wire::{Body, FrameError, FrameReader, Out};

/// PostgreSQL's default authentication_timeout.
pub const AUTHENTICATION_TIMEOUT: Duration = Duration::from_secs(60);

const CANCEL_REQUEST_CODE: i32 = 80_877_102;
pub(crate) const SSL_REQUEST_CODE: i32 = 80_877_103;
pub(crate) const GSSENC_REQUEST_CODE: i32 = 80_877_104;

/// How the startup phase ended.
pub enum Started {
    /// Authenticated: the client's startup parameters.
    Session(HashMap<String, String>),
    /// The connection is over (a cancel request, a refusal, a close).
    Closed,
}

/// The password exchange's view of the client: pgwire's handlers write
/// their messages here; the caller sends them.
struct AuthClient {
    info: DefaultClient<()>,
    sent: Vec<PgWireBackendMessage>,
}

impl ClientInfo for AuthClient {
    fn socket_addr(&self) -> SocketAddr {
        self.info.socket_addr()
    }
    fn is_secure(&self) -> bool {
        false
    }
    fn protocol_version(&self) -> ProtocolVersion {
        self.info.protocol_version()
    }
    fn set_protocol_version(&mut self, version: ProtocolVersion) {
        self.info.set_protocol_version(version)
    }
    fn pid_and_secret_key(&self) -> (i32, SecretKey) {
        self.info.pid_and_secret_key()
    }
    fn set_pid_and_secret_key(&mut self, pid: i32, secret_key: SecretKey) {
        self.info.set_pid_and_secret_key(pid, secret_key)
    }
    fn state(&self) -> PgWireConnectionState {
        self.info.state()
    }
    fn set_state(&mut self, new_state: PgWireConnectionState) {
        self.info.set_state(new_state)
    }
    fn transaction_status(&self) -> TransactionStatus {
        self.info.transaction_status()
    }
    fn set_transaction_status(&mut self, new_status: TransactionStatus) {
        self.info.set_transaction_status(new_status)
    }
    fn metadata(&self) -> &HashMap<String, String> {
        self.info.metadata()
    }
    fn metadata_mut(&mut self) -> &mut HashMap<String, String> {
        self.info.metadata_mut()
    }
    fn session_extensions(&self) -> &pgwire::api::SessionExtensions {
        self.info.session_extensions()
    }
    fn sni_server_name(&self) -> Option<&str> {
        None
    }
    fn client_certificates<'a>(&self) -> Option<&[CertificateDer<'a>]> {
        None
    }
}

impl Sink<PgWireBackendMessage> for AuthClient {
    type Error = std::io::Error;

    fn poll_ready(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }
    fn start_send(mut self: Pin<&mut Self>, item: PgWireBackendMessage) -> Result<(), Self::Error> {
        self.sent.push(item);
        Ok(())
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }
    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }
}

fn fatal(code: SqlState, message: impl Into<String>) -> Error {
    Error::new(code, message)
}

/// The name/value pairs of a startup message, as PostgreSQL's
/// ProcessStartupPacket reads them: pairs of strings, then one NUL that
/// must be the last byte.
fn startup_parameters(body: &[u8]) -> Result<BTreeMap<String, String>, Error> {
    let layout =
        || protocol_violation("invalid startup packet layout: expected terminator as last byte");
    let mut params = BTreeMap::new();
    let mut at = 0;
    while at < body.len() {
        if body[at] == 0 {
            break;
        }
        let name_end = body[at..].iter().position(|&b| b == 0).ok_or_else(layout)? + at;
        let value_at = name_end + 1;
        if value_at >= body.len() {
            break;
        }
        let value_end = body[value_at..]
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(layout)?
            + value_at;
        let name = String::from_utf8_lossy(&body[at..name_end]).into_owned();
        let value = String::from_utf8_lossy(&body[value_at..value_end]).into_owned();
        params.insert(name, value);
        at = value_end + 1;
    }
    if body.is_empty() || at != body.len() - 1 {
        return Err(layout());
    }
    Ok(params)
}

/// Runs the startup phase on a fresh connection.
pub(crate) async fn run<R, W>(
    reader: &mut FrameReader<R>,
    out: &mut Out<W>,
    handler: &Startup,
    registry: &Registry,
    peer: SocketAddr,
) -> Started
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    match startup(reader, out, handler, registry, peer).await {
        Ok(started) => started,
        Err(Some(e)) => {
            let _ = out.fatal(&e).await;
            Started::Closed
        }
        Err(None) => Started::Closed,
    }
}

/// `Err(Some(e))`: FATAL e, then close. `Err(None)`: close without reply.
async fn startup<R, W>(
    reader: &mut FrameReader<R>,
    out: &mut Out<W>,
    handler: &Startup,
    registry: &Registry,
    peer: SocketAddr,
) -> Result<Started, Option<Error>>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut ssl_done = false;
    let mut gss_done = false;
    let (version, mut body) = loop {
        let mut body = reader.startup_packet().await.map_err(|_| None)?;
        let code = body.int32().map_err(|_| None)?;
        match code {
            CANCEL_REQUEST_CODE => {
                if body.remaining() == 8 {
                    let pid = body.int32().map_err(|_| None)?;
                    let key = body.rest();
                    registry.cancel(pid, &key);
                }
                return Ok(Started::Closed);
            }
            SSL_REQUEST_CODE if !ssl_done => ssl_done = true,
            GSSENC_REQUEST_CODE if !gss_done => gss_done = true,
            _ => break (code, body),
        }
        // Neither TLS nor GSS encryption: refuse and wait for the next
        // packet. Bytes that came along with the request were sent before
        // the answer: PostgreSQL treats them as an attack.
        out.raw(b"N");
        out.flush().await.map_err(|_| None)?;
        if reader.has_buffered() {
            return Err(Some(protocol_violation(
                "received unencrypted data after SSL request",
            )));
        }
    };
    let (major, minor) = ((version >> 16) as u16, (version & 0xffff) as u16);
    if major != 3 {
        return Err(Some(fatal(
            SqlState::FEATURE_NOT_SUPPORTED,
            format!("unsupported frontend protocol {major}.{minor}: server supports 3.0 to 3.0"),
        )));
    }
    let mut params = startup_parameters(&body.rest()).map_err(Some)?;
    if params.get("user").is_none_or(|u| u.is_empty()) {
        return Err(Some(fatal(
            SqlState::INVALID_AUTHORIZATION_SPECIFICATION,
            "no PostgreSQL user name specified in startup packet",
        )));
    }
    // Protocol options (`_pq_.name`) are none we know; 3.1+ is answered
    // with the newest version we speak, 3.0.
    let options: Vec<String> = params
        .keys()
        .filter(|k| k.starts_with("_pq_."))
        .cloned()
        .collect();
    if minor > 0 || !options.is_empty() {
        for o in &options {
            params.remove(o);
        }
        out.send(PgWireBackendMessage::NegotiateProtocolVersion(
            NegotiateProtocolVersion::new(0x0003_0000, options),
        ))
        .await
        .map_err(|_| None)?;
    }
    authenticate(reader, out, handler, params, peer).await
}

/// Runs the configured password exchange with pgwire's handlers.
async fn authenticate<R, W>(
    reader: &mut FrameReader<R>,
    out: &mut Out<W>,
    handler: &Startup,
    params: BTreeMap<String, String>,
    peer: SocketAddr,
) -> Result<Started, Option<Error>>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut client = AuthClient {
        info: DefaultClient::new(peer, false),
        sent: Vec::new(),
    };
    client.set_protocol_version(ProtocolVersion::PROTOCOL3_0);
    client.set_state(PgWireConnectionState::AuthenticationInProgress);
    let mut startup = StartupMessage::new();
    startup.parameters = params;
    let mut message = PgWireFrontendMessage::Startup(startup);
    let mut exchanges = 0usize;
    loop {
        let step = handler.on_startup(&mut client, message).await;
        for m in client.sent.drain(..) {
            out.send(m).await.map_err(|_| None)?;
        }
        if let Err(e) = step {
            let info: pgwire::error::ErrorInfo = e.into();
            let code = match info.code.as_str() {
                c if c == SqlState::INVALID_PASSWORD.0 => SqlState::INVALID_PASSWORD,
                c if c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION.0 => {
                    SqlState::INVALID_AUTHORIZATION_SPECIFICATION
                }
                _ => SqlState::PROTOCOL_VIOLATION,
            };
            let message = match code {
                SqlState::INVALID_PASSWORD => format!(
                    "password authentication failed for user \"{}\"",
                    client.metadata().get("user").map_or("", |u| u.as_str())
                ),
                _ => info.message,
            };
            return Err(Some(fatal(code, message)));
        }
        out.flush().await.map_err(|_| None)?;
        if matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Ok(Started::Session(client.metadata().clone()));
        }
        message = password_message(reader, handler, exchanges).await?;
        exchanges += 1;
    }
}

/// Reads the client's next password message, typed by what the
/// configured method expects at this step.
async fn password_message<R: AsyncRead + Unpin>(
    reader: &mut FrameReader<R>,
    handler: &Startup,
    exchanges: usize,
) -> Result<PgWireFrontendMessage, Option<Error>> {
    let ty = reader.message_type().await.map_err(|_| None)?;
    if ty != b'p' {
        let what = match handler {
            Startup::Scram(_) => "SASL",
            _ => "password",
        };
        return Err(Some(protocol_violation(format!(
            "expected {what} response, got message type {ty}"
        ))));
    }
    let mut body: Body = match reader.message_body(AUTH_MESSAGE_LIMIT).await {
        Ok(b) => b,
        Err(FrameError::Closed | FrameError::BadLength) => return Err(None),
    };
    let typed = match handler {
        Startup::Scram(_) if exchanges == 0 => {
            let mechanism = body.cstr().map_err(Some)?;
            let len = body.int32().map_err(Some)?;
            let data = if len == -1 {
                None
            } else {
                Some(body.bytes(len).map_err(Some)?)
            };
            body.end().map_err(Some)?;
            PasswordMessageFamily::SASLInitialResponse(SASLInitialResponse::new(mechanism, data))
        }
        Startup::Scram(_) => PasswordMessageFamily::SASLResponse(SASLResponse::new(body.rest())),
        _ => {
            let password = body.cstr().map_err(Some)?;
            body.end().map_err(Some)?;
            PasswordMessageFamily::Password(Password::new(password))
        }
    };
    Ok(PgWireFrontendMessage::PasswordMessageFamily(typed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn startup_parameters_follow_postgres_layout_rules() {
        let p = startup_parameters(b"user\0me\0database\0db\0\0").unwrap();
        assert_eq!(p["user"], "me");
        assert_eq!(p["database"], "db");
        for bad in [
            &b"user\0me\0"[..],
            b"user\0\0",
            b"",
            b"user\0me\0\0junk",
            b"user",
        ] {
            let e = startup_parameters(bad).unwrap_err();
            assert_eq!(e.code, SqlState::PROTOCOL_VIOLATION, "{bad:?}");
        }
        // Only the terminator: no parameters at all.
        assert!(startup_parameters(b"\0").unwrap().is_empty());
    }
}
