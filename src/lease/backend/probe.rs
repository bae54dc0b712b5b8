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

/// As [`speaks`], within `within`: a server a long round trip away answers
/// the probe only after a few of them.
pub(crate) fn speaks_within(address: &str, within: Duration) -> Option<Speaks> {
    let deadline = Instant::now() + within;
    let target = address.to_socket_addrs().ok()?.next()?;
    let mut stream = TcpStream::connect_timeout(&target, within).ok()?;
    let left = |deadline: Instant| {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    };
    // A MySQL server speaks first: a packet whose payload starts with the
    // protocol version, 10.
    stream.set_read_timeout(Some(within / 3)).ok()?;
    let mut greeting = [0u8; 5];
    if let Ok(n) = stream.read(&mut greeting) {
        if n == 5 && greeting[4] == 10 {
            return Some(Speaks::Mysql);
        }
    }
    stream.write_all(b"PING\r\n").ok()?;
    stream.set_read_timeout(left(deadline)).ok()?;
    let mut reply = [0u8; 8];
    let n = stream.read(&mut reply).ok()?;
    if n == 0 {
        // Closed without a word: PostgreSQL does so to a start-up packet
        // it cannot read. It answers an SSLRequest with one byte, S or N.
        let mut stream = TcpStream::connect_timeout(&target, left(deadline)?).ok()?;
        stream.write_all(&[0, 0, 0, 8, 4, 210, 22, 47]).ok()?;
        stream.set_read_timeout(left(deadline)).ok()?;
        let mut answer = [0u8; 1];
        return match stream.read(&mut answer).ok()? {
            1 if matches!(answer[0], b'S' | b'N') => Some(Speaks::Postgres),
            _ => None,
        };
    }
    match reply.get(..n)? {
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

    /// A server on a free port that answers as `answer` does.
    fn server(answer: fn(TcpStream)) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        thread::spawn(move || {
            if let Ok((stream, _)) = listener.accept() {
                answer(stream);
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
        // an SSLRequest on the next connection with one byte.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let real = listener.local_addr().unwrap().to_string();
        thread::spawn(move || {
            let (first, _) = listener.accept().unwrap();
            drop(first);
            let (mut second, _) = listener.accept().unwrap();
            let mut request = [0u8; 8];
            let _ = second.read_exact(&mut request);
            if request == [0, 0, 0, 8, 4, 210, 22, 47] {
                let _ = second.write_all(b"N");
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
