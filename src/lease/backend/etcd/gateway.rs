//! etcd's v3 API through the gateway every member serves beside gRPC: JSON
//! over HTTP/1.1 on the client port (`POST /v3/kv/txn`). A small client of
//! its own, so that the `etcd` feature needs no gRPC stack, no protobuf
//! compiler at build time, and no more than the other registries: tokio's
//! sockets, rustls, and `serde_json`.
//!
//! The gateway speaks protobuf's JSON mapping: 64-bit integers are strings,
//! bytes are base64, and a field at its zero value is left out (`"succeeded"`
//! is absent when a transaction's compares failed).

use std::io;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// What went wrong on one call.
#[derive(Debug)]
pub(super) enum Error {
    /// The connection: refused, reset, closed.
    Io(io::Error),
    /// The TLS handshake.
    Tls(io::Error),
    /// An answer that is not the gateway's: another server at the port.
    Protocol(String),
    /// The server's own error: a gRPC status code and its message.
    Status { code: i64, message: String },
    /// The connection was closed while idle (the member restarted):
    /// nothing was sent on it, so a new one may send the request.
    Stale,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Io(e) | Error::Tls(e) => e.fmt(f),
            Error::Protocol(what) => f.write_str(what),
            Error::Status { message, .. } => f.write_str(message),
            Error::Stale => f.write_str("the member closed the connection while it was idle"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) | Error::Tls(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

/// gRPC's codes that the registry tells apart.
pub(super) mod code {
    pub(in super::super) const INVALID_ARGUMENT: i64 = 3;
    pub(in super::super) const PERMISSION_DENIED: i64 = 7;
    pub(in super::super) const FAILED_PRECONDITION: i64 = 9;
    pub(in super::super) const UNAVAILABLE: i64 = 14;
    pub(in super::super) const UNAUTHENTICATED: i64 = 16;
}

trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// One connection to one member, authenticated if the URL had credentials.
pub(super) struct Gateway {
    stream: BufReader<Box<dyn Stream>>,
    /// `host:port`, for the `Host` header.
    host: String,
    /// The auth token, once authenticated.
    token: Option<String>,
}

impl Gateway {
    /// Connects to `endpoint` (`host:port`), over TLS with `tls`.
    pub(super) async fn connect(
        endpoint: &str,
        tls: Option<&Arc<rustls::ClientConfig>>,
    ) -> Result<Gateway, Error> {
        let tcp = TcpStream::connect(endpoint).await?;
        tcp.set_nodelay(true)?;
        let stream: Box<dyn Stream> = match tls {
            None => Box::new(tcp),
            Some(config) => {
                let host = endpoint.rsplit_once(':').map_or(endpoint, |(h, _)| h);
                let name = rustls::pki_types::ServerName::try_from(
                    host.trim_start_matches('[')
                        .trim_end_matches(']')
                        .to_owned(),
                )
                .map_err(|e| Error::Tls(io::Error::new(io::ErrorKind::InvalidInput, e)))?;
                let connector = tokio_rustls::TlsConnector::from(Arc::clone(config));
                Box::new(connector.connect(name, tcp).await.map_err(Error::Tls)?)
            }
        };
        Ok(Gateway {
            stream: BufReader::new(stream),
            host: endpoint.to_owned(),
            token: None,
        })
    }

    /// Authenticates as `user`: every later call carries the token.
    pub(super) async fn authenticate(&mut self, user: &str, password: &str) -> Result<(), Error> {
        let reply = self
            .call(
                "/v3/auth/authenticate",
                &json!({"name": user, "password": password}),
            )
            .await?;
        let token = reply["token"]
            .as_str()
            .ok_or_else(|| Error::Protocol("authenticate: no token in the answer".into()))?;
        self.token = Some(token.to_owned());
        Ok(())
    }

    /// Posts `body` to `path` and returns the answer: the server's error as
    /// [`Error::Status`].
    pub(super) async fn call(&mut self, path: &str, body: &Value) -> Result<Value, Error> {
        // A member that went away left the connection at its end: seen
        // before anything is sent, as one look that does not wait.
        let idle = std::time::Duration::ZERO;
        if let Ok(Ok(buffered)) = tokio::time::timeout(idle, self.stream.fill_buf()).await {
            if buffered.is_empty() {
                return Err(Error::Stale);
            }
        }
        let body = body.to_string();
        let mut request = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n",
            self.host,
            body.len()
        );
        if let Some(token) = &self.token {
            request.push_str(&format!("Authorization: {token}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(&body);
        let stream = self.stream.get_mut();
        stream.write_all(request.as_bytes()).await?;
        stream.flush().await?;
        let answer = self.read_answer().await?;
        let value: Value = serde_json::from_slice(&answer).map_err(|e| {
            Error::Protocol(format!(
                "not etcd's JSON gateway at this port ({e}): {}",
                String::from_utf8_lossy(&answer[..answer.len().min(80)])
            ))
        })?;
        if value.get("header").is_none() {
            if let Some(code) = value.get("code").and_then(Value::as_i64) {
                let message = value["message"]
                    .as_str()
                    .or_else(|| value["error"].as_str())
                    .unwrap_or("an error without a message")
                    .to_owned();
                return Err(Error::Status { code, message });
            }
        }
        Ok(value)
    }

    /// One HTTP answer's body, by its length or its chunks.
    async fn read_answer(&mut self) -> Result<Vec<u8>, Error> {
        let mut line = String::new();
        self.read_line(&mut line).await?;
        if !line.starts_with("HTTP/1.") {
            return Err(Error::Protocol(format!(
                "not an HTTP server at this port: it answered {:?}",
                line.trim_end()
            )));
        }
        let mut length = None;
        let mut chunked = false;
        loop {
            line.clear();
            self.read_line(&mut line).await?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let value = value.trim();
                if name.eq_ignore_ascii_case("content-length") {
                    length =
                        Some(value.parse::<usize>().map_err(|_| {
                            Error::Protocol(format!("a Content-Length of {value:?}"))
                        })?);
                } else if name.eq_ignore_ascii_case("transfer-encoding") {
                    chunked = value.eq_ignore_ascii_case("chunked");
                }
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                self.read_line(&mut line).await?;
                let size = line.trim_end().split(';').next().unwrap_or("");
                let size = usize::from_str_radix(size, 16)
                    .map_err(|_| Error::Protocol(format!("a chunk size of {size:?}")))?;
                if size == 0 {
                    // The trailer, if any, ends with an empty line.
                    loop {
                        line.clear();
                        self.read_line(&mut line).await?;
                        if line.trim_end().is_empty() {
                            return Ok(body);
                        }
                    }
                }
                let start = body.len();
                body.resize(start + size, 0);
                self.stream.read_exact(&mut body[start..]).await?;
                line.clear();
                self.read_line(&mut line).await?;
            }
        }
        let length = length
            .ok_or_else(|| Error::Protocol("an answer with neither a length nor chunks".into()))?;
        body.resize(length, 0);
        self.stream.read_exact(&mut body).await?;
        Ok(body)
    }

    async fn read_line(&mut self, line: &mut String) -> Result<(), Error> {
        if self.stream.read_line(line).await? == 0 {
            return Err(Error::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            )));
        }
        Ok(())
    }
}

/// A 64-bit integer of an answer: a string of digits, a number, or absent
/// (zero, which protobuf's JSON leaves out).
pub(super) fn number(value: &Value) -> Option<u64> {
    match value {
        Value::Null => Some(0),
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Bytes as protobuf's JSON has them: base64, padded.
pub(super) fn base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The bytes of a base64 string; `None` if it is not one.
pub(super) fn unbase64(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut bits = 0u32;
    let mut held = 0;
    for c in text.bytes() {
        let value = ALPHABET.iter().position(|&a| a == c)? as u32;
        bits = bits << 6 | value;
        held += 6;
        if held >= 8 {
            held -= 8;
            out.push((bits >> held) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_every_length() {
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"/flakegen/ready"), "L2ZsYWtlZ2VuL3JlYWR5");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"a"), "YQ==");
        for n in 0..20u8 {
            let bytes: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37)).collect();
            assert_eq!(unbase64(&base64(&bytes)).unwrap(), bytes);
        }
        assert_eq!(unbase64("not base64!"), None);
    }

    #[test]
    fn numbers_come_as_strings_or_not_at_all() {
        assert_eq!(number(&json!("42")), Some(42));
        assert_eq!(number(&json!(7)), Some(7));
        assert_eq!(number(&Value::Null), Some(0));
        assert_eq!(number(&json!("x")), None);
    }
}
