//! What speaks at an address: for the error a client gets when the URL's
//! port is another server's (a Redis URL at MariaDB's port, TLS at a plain
//! port), which its own client reports as a hang or a parse error.
//!
//! Only on a failure's path, on the lease's thread, and briefly.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// A protocol a server answers in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Speaks {
    Mysql,
    Postgres,
    Redis,
    Tls,
    /// HTTP: etcd's client port, among others.
    Http,
}

impl Speaks {
    /// Its name, as an operator knows it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Speaks::Mysql => "MySQL/MariaDB",
            Speaks::Postgres => "PostgreSQL",
            Speaks::Redis => "Redis",
            Speaks::Tls => "TLS",
            Speaks::Http => "HTTP",
        }
    }
}

/// How long a probe may take, in all.
pub(crate) const PROBE_TIME: Duration = Duration::from_millis(300);

/// What the server at `address` (`host:port`) speaks, if it answers within
/// [`PROBE_TIME`]: MySQL greets first; the others answer a line that is a
/// Redis command, an impossible PostgreSQL start-up packet, and no TLS
/// record, each in their own way.
#[cfg(test)]
pub(crate) fn speaks(address: &str) -> Option<Speaks> {
    speaks_within(address, PROBE_TIME)
}

/// PostgreSQL's SSLRequest: answered with one byte, `S` or `N`.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 4, 210, 22, 47];

/// As [`speaks`], within `within`. Each question is asked once, on two
/// connections at once, so that a server far away is known after one
/// round trip (a probe that asked in turn would need three).
pub(crate) fn speaks_within(address: &str, within: Duration) -> Option<Speaks> {
    let deadline = Instant::now() + within;
    let target = address.to_socket_addrs().ok()?.next()?;
    // PostgreSQL closes on a line it cannot read without a word, and
    // answers an SSLRequest on another connection: asked beside the line.
    // A thread that cannot be had leaves that question unasked.
    let ssl = std::thread::Builder::new()
        .name("flakegen-probe".into())
        .spawn(move || {
            let mut stream = TcpStream::connect_timeout(&target, within).ok()?;
            stream.write_all(&SSL_REQUEST).ok()?;
            stream.set_read_timeout(left(deadline)).ok()?;
            let mut answer = [0u8; 1];
            (stream.read(&mut answer).ok()? == 1).then_some(answer[0])
        })
        .ok();
    let reply = line_reply(target, deadline);
    match reply {
        // Closed without a word: PostgreSQL, if it answered the SSLRequest.
        Some(None) => match ssl?.join().ok()?? {
            b'S' | b'N' => Some(Speaks::Postgres),
            _ => None,
        },
        Some(Some((reply, n))) => known_by(reply.get(..n)?),
        None => None,
    }
}

/// What is left until `deadline`, if anything.
fn left(deadline: Instant) -> Option<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
}

/// The first bytes the server sends on a connection where the client says
/// `PING` at once (a MySQL server greets before it reads), `Some(None)` if
/// it closed without a word, `None` if it said nothing by `deadline`.
fn line_reply(target: std::net::SocketAddr, deadline: Instant) -> Option<Option<([u8; 8], usize)>> {
    let mut stream = TcpStream::connect_timeout(&target, left(deadline)?).ok()?;
    stream.write_all(b"PING\r\n").ok()?;
    stream.set_read_timeout(left(deadline)).ok()?;
    let mut reply = [0u8; 8];
    match stream.read(&mut reply).ok()? {
        0 => Some(None),
        n => Some(Some((reply, n))),
    }
}

/// The server, known by the first bytes it sent.
fn known_by(reply: &[u8]) -> Option<Speaks> {
    match reply {
        // A MySQL server's greeting: a packet of sequence number 0 whose
        // payload starts with the protocol version, 10. Checked first: its
        // length's first byte may be any of the bytes below.
        [_, _, 0, 0, 10, ..] => Some(Speaks::Mysql),
        // Redis answers a command: +PONG, or an error (-NOAUTH ...).
        [b'+' | b'-', ..] => Some(Speaks::Redis),
        // PostgreSQL refuses a start-up packet of that length: 'E'.
        [b'E', ..] => Some(Speaks::Postgres),
        // A TLS server answers bytes that are no record with an alert.
        [0x15, 0x03, ..] => Some(Speaks::Tls),
        // An HTTP server (etcd's client port) refuses the line as a request.
        [b'H', b'T', b'T', b'P', ..] => Some(Speaks::Http),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::thread;

    /// A server on a free port that answers each connection as `answer`
    /// does (a probe opens two at once).
    fn server(answer: fn(TcpStream)) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        thread::spawn(move || {
            for stream in listener.incoming().take(2).flatten() {
                thread::spawn(move || answer(stream));
            }
        });
        address
    }

    #[test]
    fn each_server_is_known_by_its_answer() {
        let mysql = server(|mut s| {
            let _ = s.write_all(&[50, 0, 0, 0, 10, b'5']);
            thread::sleep(Duration::from_millis(500));
        });
        assert_eq!(speaks(&mysql), Some(Speaks::Mysql));
        let redis = server(|mut s| {
            let mut line = [0u8; 6];
            let _ = s.read_exact(&mut line);
            let _ = s.write_all(b"-NOAUTH Authentication required.\r\n");
        });
        assert_eq!(speaks(&redis), Some(Speaks::Redis));
        let postgres = server(|mut s| {
            let mut line = [0u8; 6];
            let _ = s.read_exact(&mut line);
            let _ = s.write_all(b"EFATAL");
        });
        assert_eq!(speaks(&postgres), Some(Speaks::Postgres));
        // A real PostgreSQL closes on the line without a word, and answers
        // an SSLRequest with one byte.
        let real = server(|mut s| {
            let mut request = [0u8; 6];
            if s.read_exact(&mut request).is_ok() && request != *b"PING\r\n" {
                let mut rest = [0u8; 2];
                let _ = s.read_exact(&mut rest);
                if [&request[..], &rest[..]].concat() == SSL_REQUEST {
                    let _ = s.write_all(b"N");
                }
            }
        });
        assert_eq!(speaks(&real), Some(Speaks::Postgres));
        let tls = server(|mut s| {
            let mut line = [0u8; 6];
            let _ = s.read_exact(&mut line);
            let _ = s.write_all(&[0x15, 0x03, 0x03, 0, 2, 2, 70]);
        });
        assert_eq!(speaks(&tls), Some(Speaks::Tls));
        let http = server(|mut s| {
            let mut line = [0u8; 6];
            let _ = s.read_exact(&mut line);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        });
        assert_eq!(speaks(&http), Some(Speaks::Http));
        // Nothing said: not known, within the probe's time.
        let silent = server(|_s| thread::sleep(Duration::from_secs(1)));
        let started = Instant::now();
        assert_eq!(speaks(&silent), None);
        // Bounded: a hang would never return.
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
