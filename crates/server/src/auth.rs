//! Client authentication at startup (DESIGN.md §11): trust, md5 or
//! SCRAM-SHA-256, as configured for one user name and its password.
//!
//! ```text
//!  Startup ─► trust:  AuthenticationOk ─► ParameterStatus … ─► ReadyForQuery
//!          ─► md5:    AuthenticationMD5Password(salt) ◄─ md5(md5(pw+user)+salt)
//!          ─► SCRAM:  AuthenticationSASL ◄─► SCRAM-SHA-256 exchange
//!                     (the server keeps only the verifier: salt, 4,096
//!                     iterations, stored key, server key)
//! ```
//!
//! Every path hands out the connection's pid and cancel key through the
//! connection's `Registrar` (cancel.rs).

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::sink::Sink;
use pgwire::api::auth::md5pass::{hash_md5_password, Md5PasswordAuthStartupHandler};
use pgwire::api::auth::sasl::scram::{
    gen_salted_password, ScramAuth, ScramSecret, SCRAM_ITERATIONS,
};
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::{
    finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata, AuthSource,
    DefaultServerParameterProvider, LoginInfo, Password, StartupHandler,
};
use pgwire::api::{ClientInfo, PidSecretKeyGenerator};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use crate::cancel::Registrar;

/// How clients authenticate.
#[derive(Clone, Debug, Default)]
pub enum Auth {
    /// Every client is let in (the default, for local use).
    #[default]
    Trust,
    /// PostgreSQL's md5 challenge: one user name and its password.
    Md5 { user: String, password: String },
    /// SCRAM-SHA-256 (PostgreSQL's default since 14): one user and password.
    Scram { user: String, password: String },
}

/// What the server reports in ParameterStatus at startup.
pub(crate) fn server_parameters() -> DefaultServerParameterProvider {
    let mut p = DefaultServerParameterProvider::default();
    p.server_version = "15.0".into();
    p.date_style = "ISO, MDY".into();
    p.time_zone = "UTC".into();
    p
}

fn wrong_user(user: &str) -> PgWireError {
    PgWireError::InvalidPassword(user.to_owned())
}

/// The md5 password of the configured user.
#[derive(Debug)]
pub(crate) struct Md5Password {
    user: String,
    password: String,
}

#[async_trait]
impl AuthSource for Md5Password {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        let user = login.user().unwrap_or_default();
        if user != self.user {
            return Err(wrong_user(user));
        }
        let salt: [u8; 4] = rand::random();
        let hash = hash_md5_password(user, &self.password, &salt);
        Ok(Password::new(Some(salt.to_vec()), hash.into_bytes()))
    }
}

/// The SCRAM verifier of the configured user (the password is not kept).
pub(crate) struct ScramVerifier {
    user: String,
    salt: Vec<u8>,
    stored_key: Vec<u8>,
    server_key: Vec<u8>,
}

impl Debug for ScramVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramVerifier")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

impl ScramVerifier {
    fn new(user: &str, password: &str) -> ScramVerifier {
        let salt: [u8; 16] = rand::random();
        let salted = gen_salted_password(password, &salt, SCRAM_ITERATIONS);
        let (stored_key, server_key) = match ScramSecret::verifier_from_salted_password(
            salt.to_vec(),
            salted,
            SCRAM_ITERATIONS,
        ) {
            ScramSecret::Verifier {
                stored_key,
                server_key,
                ..
            } => (stored_key, server_key),
            ScramSecret::SaltedPassword { .. } => (Vec::new(), Vec::new()),
        };
        ScramVerifier {
            user: user.to_owned(),
            salt: salt.to_vec(),
            stored_key,
            server_key,
        }
    }
}

#[async_trait]
impl AuthSource for ScramVerifier {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        // Only the verifier exists; SCRAM asks for it below.
        Err(wrong_user(login.user().unwrap_or_default()))
    }

    async fn get_scram_secret(&self, login: &LoginInfo) -> PgWireResult<(ScramSecret, Option<()>)> {
        let user = login.user().unwrap_or_default();
        if user != self.user {
            return Err(wrong_user(user));
        }
        Ok((
            ScramSecret::Verifier {
                salt: self.salt.clone(),
                iterations: SCRAM_ITERATIONS,
                stored_key: self.stored_key.clone(),
                server_key: self.server_key.clone(),
            },
            None,
        ))
    }
}

/// The configured password check, shared by all connections.
pub(crate) enum Passwords {
    Trust,
    Md5(Arc<Md5Password>),
    Scram(Arc<ScramVerifier>),
}

impl Passwords {
    pub(crate) fn new(auth: &Auth) -> Passwords {
        match auth {
            Auth::Trust => Passwords::Trust,
            Auth::Md5 { user, password } => Passwords::Md5(Arc::new(Md5Password {
                user: user.clone(),
                password: password.clone(),
            })),
            Auth::Scram { user, password } => {
                Passwords::Scram(Arc::new(ScramVerifier::new(user, password)))
            }
        }
    }
}

/// One connection's startup handler.
pub(crate) enum Startup {
    Trust {
        params: Arc<DefaultServerParameterProvider>,
        pids: Arc<Registrar>,
    },
    Md5(Md5PasswordAuthStartupHandler<Md5Password, DefaultServerParameterProvider>),
    Scram(SASLAuthStartupHandler<DefaultServerParameterProvider>),
}

impl Startup {
    pub(crate) fn new(
        passwords: &Passwords,
        params: &Arc<DefaultServerParameterProvider>,
        pids: Arc<Registrar>,
    ) -> Startup {
        match passwords {
            Passwords::Trust => Startup::Trust {
                params: params.clone(),
                pids,
            },
            Passwords::Md5(p) => Startup::Md5(
                Md5PasswordAuthStartupHandler::new(p.clone(), params.clone())
                    .with_pid_secret_key_generator(pids),
            ),
            Passwords::Scram(v) => Startup::Scram(
                SASLAuthStartupHandler::new(params.clone())
                    .with_scram(ScramAuth::new(v.clone()))
                    .with_pid_secret_key_generator(pids),
            ),
        }
    }
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match self {
            Startup::Md5(h) => h.on_startup(client, message).await,
            Startup::Scram(h) => h.on_startup(client, message).await,
            Startup::Trust { params, pids } => {
                if let PgWireFrontendMessage::Startup(ref startup) = message {
                    protocol_negotiation(client, startup).await?;
                    save_startup_parameters_to_metadata(client, startup);
                    let (pid, key) = pids.generate(client);
                    client.set_pid_and_secret_key(pid, key);
                    finish_authentication(client, params.as_ref()).await?;
                }
                Ok(())
            }
        }
    }
}
