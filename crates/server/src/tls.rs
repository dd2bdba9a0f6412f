//! TLS for client connections (`ndpdb serve --tls-cert FILE --tls-key
//! FILE`), negotiated as PostgreSQL does it: the client asks with an
//! SSLRequest before its startup packet.
//!
//! ```text
//!  first packets, read unbuffered, 8 bytes at a time:
//!    SSLRequest     ─► 'S', TLS handshake (rustls) ─► startup over TLS
//!    GSSENCRequest  ─► 'N' (once), next packet
//!    anything else  ─► the bytes read are put back ─► startup in the clear
//!                      (startup.rs; an SSLRequest it sees then is 'N')
//!  handshake fails  ─► close (nothing sensible can be sent)
//! ```
//!
//! Without a certificate configured, the server never gets here and
//! startup.rs refuses every SSLRequest with 'N', as a PostgreSQL server
//! with `ssl = off` does. The packets are read exactly (no buffering), so
//! bytes a client sent after its SSLRequest without waiting for the
//! answer go into the handshake and end it.

use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The TLS library (rustls, with the ring provider pgwire builds).
pub use pgwire::tokio::tokio_rustls::rustls;
use pgwire::tokio::tokio_rustls::server::TlsStream;
use pgwire::tokio::tokio_rustls::TlsAcceptor;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

use crate::startup::{GSSENC_REQUEST_CODE, SSL_REQUEST_CODE};

/// The server's TLS settings from a PEM certificate chain and a PEM
/// private key (PKCS#8, PKCS#1 or SEC1), checked to belong together.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, String> {
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let cert_pem = read(cert)?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: not a PEM certificate: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("{}: no certificate in the file", cert.display()));
    }
    let key_der = PrivateKeyDer::from_pem_slice(&read(key)?)
        .map_err(|e| format!("{}: not a PEM private key: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| format!("the certificate and key do not go together: {e}"))?;
    Ok(Arc::new(config))
}

/// How a connection goes on after its first packets.
pub(crate) enum Negotiated<IO> {
    Tls(Box<TlsStream<IO>>),
    /// In the clear, with the bytes read so far put back.
    Plain(Rewound<IO>),
    /// The client left or the handshake failed.
    Closed,
}

/// Reads the first packets of a connection and answers an SSLRequest
/// with a TLS handshake.
pub(crate) async fn negotiate<IO>(mut io: IO, acceptor: &TlsAcceptor) -> Negotiated<IO>
where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    let mut gss_refused = false;
    loop {
        let mut packet = [0u8; 8];
        if io.read_exact(&mut packet[..4]).await.is_err() {
            return Negotiated::Closed;
        }
        if i32::from_be_bytes([packet[0], packet[1], packet[2], packet[3]]) != 8 {
            return Negotiated::Plain(Rewound::new(packet[..4].to_vec(), io));
        }
        if io.read_exact(&mut packet[4..]).await.is_err() {
            return Negotiated::Closed;
        }
        match i32::from_be_bytes([packet[4], packet[5], packet[6], packet[7]]) {
            SSL_REQUEST_CODE => {
                if io.write_all(b"S").await.is_err() || io.flush().await.is_err() {
                    return Negotiated::Closed;
                }
                return match acceptor.accept(io).await {
                    Ok(stream) => Negotiated::Tls(Box::new(stream)),
                    Err(_) => Negotiated::Closed,
                };
            }
            GSSENC_REQUEST_CODE if !gss_refused => {
                gss_refused = true;
                if io.write_all(b"N").await.is_err() || io.flush().await.is_err() {
                    return Negotiated::Closed;
                }
            }
            _ => return Negotiated::Plain(Rewound::new(packet.to_vec(), io)),
        }
    }
}

/// A stream whose first bytes were already read: they are read again.
pub(crate) struct Rewound<IO> {
    head: Vec<u8>,
    at: usize,
    io: IO,
}

impl<IO> Rewound<IO> {
    fn new(head: Vec<u8>, io: IO) -> Rewound<IO> {
        Rewound { head, at: 0, io }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Rewound<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.at < this.head.len() {
            let n = (this.head.len() - this.at).min(buf.remaining());
            buf.put_slice(&this.head[this.at..this.at + n]);
            this.at += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Rewound<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_startup_packet_is_read_again_in_full() {
        let (mut client, server) = tokio::io::duplex(64);
        client
            .write_all(&[0, 0, 0, 9, 0, 3, 0, 0, 7])
            .await
            .unwrap();
        // Any acceptor: this packet is not an SSLRequest.
        let acceptor = TlsAcceptor::from(test_config());
        let Negotiated::Plain(mut rewound) = negotiate(server, &acceptor).await else {
            panic!("expected the clear path");
        };
        let mut got = [0u8; 9];
        rewound.read_exact(&mut got).await.unwrap();
        assert_eq!(got, [0, 0, 0, 9, 0, 3, 0, 0, 7]);
    }

    fn test_config() -> Arc<rustls::ServerConfig> {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (c, k) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
        std::fs::write(&c, cert.pem()).unwrap();
        std::fs::write(&k, key.serialize_pem()).unwrap();
        server_config(&c, &k).unwrap()
    }
}
