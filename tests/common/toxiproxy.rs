//! Network faults from toxiproxy (`scripts/services.sh start toxiproxy`):
//! proxies a test makes in front of a registry's server, through the API at
//! `FLAKEGEN_TEST_TOXIPROXY_URL`, each on a port of its own and deleted
//! when dropped, with the faults ("toxics") the test adds to them.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// toxiproxy's API, as the test servers export it.
fn api() -> String {
    let url = std::env::var("FLAKEGEN_TEST_TOXIPROXY_URL").unwrap_or_else(|_| {
        panic!(
            "FLAKEGEN_TEST_TOXIPROXY_URL is not set: start the test servers with \
             `eval \"$(scripts/services.sh start)\"`"
        )
    });
    url.trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned()
}

/// One call to the API: its status and its body, within 10 s.
fn call(method: &str, path: &str, body: Option<&Value>) -> (u16, String) {
    let address = api();
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut stream = TcpStream::connect(&address)
        .unwrap_or_else(|e| panic!("toxiproxy's API at {address} does not answer: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .unwrap_or_else(|e| panic!("toxiproxy's API: {method} {path}: {e}"));
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("toxiproxy's API: {method} {path}: {answer}"));
    let body = answer
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

/// A proxy of toxiproxy's in front of one server, deleted when dropped.
pub struct Proxy {
    name: String,
    port: u16,
}

impl Proxy {
    /// A new proxy to `upstream` (`host:port`), on a free port of 127.0.0.1.
    pub fn new(upstream: &str) -> Proxy {
        static MADE: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let name = format!(
            "flakegen-{}-{nanos}-{}",
            std::process::id(),
            MADE.fetch_add(1, Ordering::Relaxed)
        );
        let (status, body) = call(
            "POST",
            "/proxies",
            Some(&json!({"name": name, "listen": "127.0.0.1:0", "upstream": upstream})),
        );
        assert_eq!(
            status, 201,
            "toxiproxy refused a proxy to {upstream}: {body}"
        );
        let made: Value = serde_json::from_str(&body).unwrap();
        let port = made["listen"]
            .as_str()
            .and_then(|l| l.rsplit_once(':'))
            .and_then(|(_, p)| p.parse().ok())
            .unwrap_or_else(|| panic!("toxiproxy's proxy has no port: {body}"));
        Proxy { name, port }
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Adds a toxic of `kind` with `attributes` on both directions, or on
    /// the one named (`upstream`: client to server; `downstream`: back).
    pub fn add(&self, kind: &str, stream: Option<&str>, attributes: Value) {
        let streams = match stream {
            Some(one) => vec![one],
            None => vec!["upstream", "downstream"],
        };
        for stream in streams {
            let (status, body) = call(
                "POST",
                &format!("/proxies/{}/toxics", self.name),
                Some(&json!({
                    "name": format!("{kind}-{stream}"),
                    "type": kind,
                    "stream": stream,
                    "toxicity": 1.0,
                    "attributes": attributes,
                })),
            );
            assert_eq!(status, 200, "toxiproxy refused a {kind} toxic: {body}");
        }
    }

    /// Every chunk, either way, arrives `one_way` later, give or take up to
    /// `jitter` (uniformly): a registry a round trip of twice that away.
    pub fn latency(&self, one_way: Duration, jitter: Duration) {
        self.add(
            "latency",
            None,
            json!({"latency": one_way.as_millis() as u64, "jitter": jitter.as_millis() as u64}),
        );
    }

    /// Removes the toxic `kind`, from whichever direction it was added on.
    pub fn remove(&self, kind: &str) {
        for stream in ["upstream", "downstream"] {
            let (status, body) = call(
                "DELETE",
                &format!("/proxies/{}/toxics/{kind}-{stream}", self.name),
                None,
            );
            assert!(matches!(status, 200 | 204 | 404), "toxiproxy: {body}");
        }
    }

    /// Every connection open now is closed by the proxy, as a peer or a
    /// middlebox that restarted closes it, and new ones go through: a
    /// client's next request on its old connection fails, and it must
    /// connect again. A connection of its own, opened before, proves the
    /// cut (its server's end is gone).
    pub fn cut_connections(&self) {
        let witness = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        // Disabling a proxy closes every connection it holds.
        for enabled in [false, true] {
            let (status, body) = call(
                "POST",
                &format!("/proxies/{}", self.name),
                Some(&json!({"enabled": enabled})),
            );
            assert_eq!(status, 200, "toxiproxy: {body}");
        }
        witness
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        // A MySQL server's greeting may come first; then the end.
        let mut bytes = [0u8; 256];
        loop {
            match (&witness).read(&mut bytes) {
                Ok(0) => return,
                Ok(_) => continue,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    panic!("toxiproxy did not cut a connection open across the cut")
                }
                // Reset: cut too.
                Err(_) => return,
            }
        }
    }

    /// For `during`, every connection is reset (TCP RST) as soon as data
    /// crosses it, old or new; then connections go through again.
    pub fn reset_for(&self, during: Duration) {
        self.add("reset_peer", Some("upstream"), json!({"timeout": 0}));
        std::thread::sleep(during);
        self.remove("reset_peer");
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = call("DELETE", &format!("/proxies/{}", self.name), None);
    }
}

/// `url` through new proxies, one per host it names (each member of an etcd
/// cluster), each with `one_way` ± `jitter` of latency either way.
pub fn at_distance(url: &str, one_way: Duration, jitter: Duration) -> (String, Vec<Proxy>) {
    through_each_host(url, |host| {
        let proxy = Proxy::new(host);
        if !one_way.is_zero() {
            proxy.latency(one_way, jitter);
        }
        (proxy.port(), proxy)
    })
}

/// `url` with each host it names (`host:port`, comma-separated) replaced by
/// `127.0.0.1` and the port `through` returns for it, and what `through`
/// made for each.
pub fn through_each_host<T>(
    url: &str,
    mut through: impl FnMut(&str) -> (u16, T),
) -> (String, Vec<T>) {
    let (scheme, rest) = url.split_once("://").unwrap();
    // A URL without credentials (Kubernetes': its token is in a file).
    let (userinfo, rest) = match rest.rsplit_once('@') {
        Some((userinfo, rest)) => (format!("{userinfo}@"), rest),
        None => (String::new(), rest),
    };
    let (hosts, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (ports, made): (Vec<String>, Vec<T>) = hosts
        .split(',')
        .map(|host| {
            let (port, made) = through(host);
            (format!("127.0.0.1:{port}"), made)
        })
        .unzip();
    (
        format!("{scheme}://{userinfo}{}/{path}", ports.join(",")),
        made,
    )
}
