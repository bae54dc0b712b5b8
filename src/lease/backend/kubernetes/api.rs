//! Kubernetes' API over the shared HTTP client (`client/http.rs`), as
//! `etcd/gateway.rs` is etcd's: one connection to the API server (HTTP/1.1
//! over TLS, JSON in and out), what it answers, and the bearer token every
//! request carries.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::super::client::http;

/// What went wrong on one request, before the registry says it: the HTTP
/// client's error, whose `Credential` is the token file's.
pub(super) use super::super::client::http::Error;

/// What the API server answered: its status, its JSON (`Null` for a body
/// that is none), and its clock.
#[derive(Debug)]
pub(super) struct Reply {
    pub(super) status: u16,
    pub(super) body: Value,
    /// The `Date` header: the only clock of the server's a client sees
    /// (`flakegen leases check` compares it with this host's).
    #[cfg_attr(not(feature = "inspect"), allow(dead_code))]
    pub(super) date: Option<String>,
}

impl Reply {
    /// The server's message, for an error.
    pub(super) fn message(&self) -> String {
        self.body["message"]
            .as_str()
            .map_or_else(|| format!("HTTP {}", self.status), str::to_owned)
    }
}

/// One connection to the API server.
pub(super) struct Api {
    connection: http::Connection,
}

impl Api {
    /// Connects to `endpoint` (`host:port`, an IPv6 host in brackets) over
    /// TLS, verifying the server's certificate for that host (an IP address
    /// against the certificate's IP names).
    pub(super) async fn connect(
        endpoint: &str,
        tls: &Arc<rustls::ClientConfig>,
    ) -> Result<Api, Error> {
        Ok(Api {
            connection: http::Connection::open(endpoint, Some(tls)).await?,
        })
    }

    /// Sends `method` to `path` with `token`, and a JSON `body` if any.
    pub(super) async fn call(
        &mut self,
        method: &str,
        path: &str,
        token: &str,
        body: Option<&Value>,
    ) -> Result<Reply, Error> {
        let authorization = format!("Bearer {token}");
        let headers = [
            ("Authorization", authorization.as_str()),
            ("Accept", "application/json"),
        ];
        let body = body.map(Value::to_string).unwrap_or_default();
        let answer = self
            .connection
            .request(method, path, &headers, body.as_bytes())
            .await?;
        let value = if answer.body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&answer.body).map_err(|_| {
                Error::Protocol(format!(
                    "not a Kubernetes API server at this port: HTTP {}, {}",
                    answer.status,
                    String::from_utf8_lossy(&answer.body[..answer.body.len().min(80)])
                ))
            })?
        };
        Ok(Reply {
            status: answer.status,
            body: value,
            date: answer.date,
        })
    }
}

/// How often a token file is read again: a pod's token is rotated by the
/// kubelet, which expects clients to reload it (client-go and kube-rs read
/// it again every minute).
const TOKEN_AGE: Duration = Duration::from_secs(60);

/// A bearer token read from a file, read again when a minute old, and at
/// once when the server refuses it (401). Never shown in a message.
pub(super) struct Token {
    file: PathBuf,
    read: Mutex<Option<(Arc<str>, Instant)>>,
}

impl Token {
    pub(super) fn new(file: PathBuf) -> Token {
        Token {
            file,
            read: Mutex::new(None),
        }
    }

    /// The token, read again if it is a minute old.
    pub(super) fn current(&self) -> Result<Arc<str>, Error> {
        let mut read = self.read.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((token, at)) = &*read {
            if at.elapsed() < TOKEN_AGE {
                return Ok(Arc::clone(token));
            }
        }
        let text = std::fs::read_to_string(&self.file).map_err(|e| {
            Error::Credential(format!(
                "cannot read the token file {} ({e})",
                self.file.display()
            ))
        })?;
        let token: Arc<str> = Arc::from(text.trim());
        if token.is_empty() {
            return Err(Error::Credential(format!(
                "the token file {} is empty",
                self.file.display()
            )));
        }
        *read = Some((Arc::clone(&token), Instant::now()));
        Ok(token)
    }

    /// Forgets the token, so that the next request reads the file again:
    /// after a 401, the file may hold a rotated one.
    pub(super) fn forget(&self) {
        *self.read.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}
