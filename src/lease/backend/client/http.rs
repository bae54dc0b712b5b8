//! The HTTP/1.1 client of the registries that speak it (etcd's gateway,
//! Kubernetes' API), and no more: a kept connection, plain or over TLS, one
//! request at a time on it, and its answer read with every size the peer
//! claims bounded, so that a peer that is not the registry's server (a
//! proxy's error page, another server at the port, a broken member) costs a
//! clear error, never an allocation it asked for or a hang past the call's
//! timeout. One error type for both, which each registry says in its terms
//! (`errors.rs`).

use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};
use tokio::net::TcpStream;

/// The largest body read: an answer of flakegen's own ranges is a few
/// kilobytes, and the largest (a listing's page of 1,000 records) under a
/// megabyte.
pub(crate) const MAX_BODY: usize = 8 << 20;

/// The longest status or header line, and the most header lines.
const MAX_LINE: usize = 8 << 10;
const MAX_HEADERS: usize = 100;

/// What a peer answered.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
    /// The `Date` header: the server's clock, to the second.
    pub(crate) date: Option<String>,
}

/// What went wrong on one call to a registry over HTTP.
#[derive(Debug)]
pub(crate) enum Error {
    /// The connection: refused, reset, closed mid-answer.
    Io(io::Error),
    /// The TLS handshake.
    Tls(io::Error),
    /// An answer that is not the registry's server's: another server at
    /// the port, a proxy's error page, a body over the limits.
    Protocol(String),
    /// The connection was closed while idle (the server restarted, or
    /// closed it): nothing was sent on it, so a new one may send the
    /// request.
    Stale,
    /// The server's own error: its code (etcd's, gRPC's) and its message.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    Status { code: i64, message: String },
    /// No server of the registry's answered while a call waited.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    Unanswered,
    /// The credential could not be read (Kubernetes' token file).
    #[cfg_attr(not(feature = "kubernetes"), allow(dead_code))]
    Credential(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Io(e) | Error::Tls(e) => e.fmt(f),
            Error::Protocol(what) | Error::Credential(what) => f.write_str(what),
            Error::Status { message, .. } => f.write_str(message),
            Error::Stale => f.write_str("the server closed the connection while it was idle"),
            Error::Unanswered => f.write_str("no server answers"),
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

trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// One kept connection to one server.
pub(crate) struct Connection {
    stream: BufReader<Box<dyn Stream>>,
    /// `host:port`, for the `Host` header.
    host: String,
}

impl Connection {
    /// Connects to `endpoint` (`host:port`, an IPv6 host in brackets),
    /// over TLS with `tls`, verifying the server's certificate for that
    /// host (an IP address against the certificate's IP names).
    pub(crate) async fn open(
        endpoint: &str,
        tls: Option<&Arc<rustls::ClientConfig>>,
    ) -> Result<Connection, Error> {
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
        Ok(Connection {
            stream: BufReader::new(stream),
            host: endpoint.to_owned(),
        })
    }

    /// The server's `host:port`.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn endpoint(&self) -> &str {
        &self.host
    }

    /// Sends `method` to `path` with `headers` and a JSON `body` (none when
    /// empty), and reads the answer; [`Error::Stale`], sending nothing, on a
    /// connection the server closed while it sat idle.
    pub(crate) async fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Answer, Error> {
        // A server that went away left the connection at its end: seen
        // before anything is sent, as one look that does not wait.
        if let Ok(Ok(buffered)) = tokio::time::timeout(Duration::ZERO, self.stream.fill_buf()).await
        {
            if buffered.is_empty() {
                return Err(Error::Stale);
            }
        }
        request(&mut self.stream, method, &self.host, path, headers, body).await
    }
}

/// Sends `method` to `path` with `headers` and a JSON `body` (none when
/// empty), and reads the answer.
async fn request<S>(
    stream: &mut S,
    method: &str,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Answer, Error>
where
    S: AsyncBufRead + AsyncWrite + Unpin,
{
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body);
    stream.write_all(&bytes).await?;
    stream.flush().await?;
    read_answer(stream).await
}

/// One answer: its status, then its body by its length or its chunks.
pub(crate) async fn read_answer<S: AsyncBufRead + Unpin>(stream: &mut S) -> Result<Answer, Error> {
    let status_line = line(stream).await?;
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|rest| rest.get(2..5))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| {
            Error::Protocol(format!(
                "not an HTTP server at this port: it answered {:?}",
                shorten(&status_line)
            ))
        })?;
    let mut length = None;
    let mut chunked = false;
    let mut date = None;
    for _ in 0..=MAX_HEADERS {
        let header = line(stream).await?;
        if header.is_empty() {
            let body = if chunked {
                chunks(stream).await?
            } else {
                let length = length.ok_or_else(|| {
                    Error::Protocol("an answer with neither a length nor chunks".into())
                })?;
                exactly(stream, length).await?
            };
            return Ok(Answer { status, body, date });
        }
        let Some((name, value)) = header.split_once(':') else {
            return Err(Error::Protocol(format!(
                "a header line {:?}",
                shorten(&header)
            )));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(size(value.parse::<usize>().ok(), value)?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        } else if name.eq_ignore_ascii_case("date") {
            date = Some(value.to_owned());
        }
    }
    Err(Error::Protocol(format!(
        "more than {MAX_HEADERS} header lines"
    )))
}

/// A chunked body, every chunk's size bounded, and the whole.
async fn chunks<S: AsyncBufRead + Unpin>(stream: &mut S) -> Result<Vec<u8>, Error> {
    let mut body = Vec::new();
    loop {
        let header = line(stream).await?;
        let text = header.split(';').next().unwrap_or("").trim();
        let size = size(usize::from_str_radix(text, 16).ok(), text)?;
        if size == 0 {
            // The trailer, if any, ends with an empty line.
            for _ in 0..=MAX_HEADERS {
                if line(stream).await?.is_empty() {
                    return Ok(body);
                }
            }
            return Err(Error::Protocol(format!(
                "more than {MAX_HEADERS} trailer lines"
            )));
        }
        if body.len() + size > MAX_BODY {
            return Err(too_large(body.len() + size));
        }
        body.extend(exactly(stream, size).await?);
        if !line(stream).await?.is_empty() {
            return Err(Error::Protocol("a chunk longer than its size".into()));
        }
    }
}

/// A size the peer claims, within [`MAX_BODY`].
fn size(parsed: Option<usize>, text: &str) -> Result<usize, Error> {
    match parsed {
        Some(size) if size <= MAX_BODY => Ok(size),
        Some(size) => Err(too_large(size)),
        None => Err(Error::Protocol(format!("a size of {:?}", shorten(text)))),
    }
}

fn too_large(size: usize) -> Error {
    Error::Protocol(format!(
        "an answer of {size} bytes, more than the {MAX_BODY} a gateway call may take"
    ))
}

/// `length` bytes, read as they come: a peer that stops early is an error.
async fn exactly<S: AsyncBufRead + Unpin>(stream: &mut S, length: usize) -> Result<Vec<u8>, Error> {
    let mut body = Vec::with_capacity(length.min(64 << 10));
    let read = stream.take(length as u64).read_to_end(&mut body).await?;
    if read < length {
        return Err(Error::Io(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("the server closed the connection after {read} of {length} bytes"),
        )));
    }
    Ok(body)
}

/// One line, without its end, at most [`MAX_LINE`] long.
async fn line<S: AsyncBufRead + Unpin>(stream: &mut S) -> Result<String, Error> {
    let mut bytes = Vec::new();
    let read = (&mut *stream)
        .take(MAX_LINE as u64 + 1)
        .read_until(b'\n', &mut bytes)
        .await?;
    if read == 0 {
        return Err(Error::Io(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the server closed the connection",
        )));
    }
    if bytes.last() != Some(&b'\n') {
        return Err(if bytes.len() > MAX_LINE {
            Error::Protocol(format!("a line longer than {MAX_LINE} bytes"))
        } else {
            Error::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection mid-line",
            ))
        });
    }
    let text = String::from_utf8_lossy(&bytes);
    Ok(text.trim_end_matches(['\r', '\n']).to_owned())
}

/// The first 80 characters of `text`, for a message.
fn shorten(text: &str) -> &str {
    text.char_indices()
        .nth(80)
        .map_or(text, |(at, _)| &text[..at])
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncWriteExt, BufReader, duplex};

    /// Reads an answer from `bytes`, sent `piece` bytes at a time by a peer
    /// that then stops writing.
    fn answer(bytes: &[u8], piece: usize) -> Result<Answer, Error> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (client, mut server) = duplex(piece.max(1));
            let bytes = bytes.to_vec();
            let peer = tokio::spawn(async move {
                for part in bytes.chunks(piece.max(1)) {
                    if server.write_all(part).await.is_err() {
                        return;
                    }
                }
                // Dropping `server` closes the connection.
            });
            let answer = read_answer(&mut BufReader::new(client)).await;
            peer.abort();
            answer
        })
    }

    fn protocol(result: Result<Answer, Error>) -> String {
        match result {
            Err(Error::Protocol(what)) => what,
            other => panic!("expected a protocol error, got {other:?}"),
        }
    }

    fn closed(result: Result<Answer, Error>) -> String {
        match result {
            Err(Error::Io(e)) if e.kind() == io::ErrorKind::UnexpectedEof => e.to_string(),
            other => panic!("expected the connection closed, got {other:?}"),
        }
    }

    #[test]
    fn a_body_by_its_length_in_pieces_of_any_size() {
        let bytes = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nX: y\r\n\
            Date: Sun, 06 Dec 2026 05:27:26 GMT\r\n\r\n{\"header\":{}}";
        for piece in [1, 2, 7, 64, 4096] {
            let answer = answer(bytes, piece).unwrap();
            assert_eq!(
                (answer.status, &answer.body[..]),
                (200, &b"{\"header\":{}}"[..])
            );
            assert_eq!(
                answer.date.as_deref(),
                Some("Sun, 06 Dec 2026 05:27:26 GMT")
            );
        }
    }

    #[test]
    fn a_chunked_body_with_extensions_and_a_trailer() {
        let bytes = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
            5;x=y\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nTrailer: z\r\n\r\n";
        for piece in [1, 3, 4096] {
            let answer = answer(bytes, piece).unwrap();
            assert_eq!(answer.body, b"hello world");
        }
    }

    #[test]
    fn a_status_other_than_200_is_read_with_its_body() {
        let page = b"<html><body>502 Bad Gateway</body></html>";
        let mut bytes = format!(
            "HTTP/1.1 502 Bad Gateway\r\nContent-Length: {}\r\n\r\n",
            page.len()
        )
        .into_bytes();
        bytes.extend_from_slice(page);
        let answer = answer(&bytes, 16).unwrap();
        assert_eq!((answer.status, answer.body), (502, page.to_vec()));
    }

    #[test]
    fn a_length_beyond_the_limit_is_refused_before_it_is_read() {
        let bytes = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
            MAX_BODY + 1
        );
        assert!(protocol(answer(bytes.as_bytes(), 64)).contains("more than"));
        let bytes = format!(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
            MAX_BODY + 1
        );
        assert!(protocol(answer(bytes.as_bytes(), 64)).contains("more than"));
        let endless = [b"HTTP/1.1 200 OK\r\nX: ".as_slice(), &[b'a'; MAX_LINE + 10]].concat();
        assert!(protocol(answer(&endless, 4096)).contains("longer than"));
    }

    #[test]
    fn a_lying_length_or_a_peer_that_stops_mid_body_is_a_closed_connection() {
        let bytes = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"header\":";
        assert!(closed(answer(bytes, 4)).contains("after 10 of 100 bytes"));
        let bytes = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nshort";
        closed(answer(bytes, 4));
        closed(answer(b"HTTP/1.1 200 OK\r\nContent-Le", 4));
        closed(answer(b"", 4));
    }

    #[test]
    fn a_peer_that_is_not_http_is_said_so() {
        assert!(protocol(answer(b"-ERR unknown command\r\n", 64)).contains("not an HTTP server"));
        let bytes = b"HTTP/1.1 200 OK\r\n\r\n";
        assert!(protocol(answer(bytes, 64)).contains("neither a length nor chunks"));
        let bytes = b"HTTP/1.1 200 OK\r\nContent-Length: lots\r\n\r\n";
        assert!(protocol(answer(bytes, 64)).contains("a size of"));
    }
}
