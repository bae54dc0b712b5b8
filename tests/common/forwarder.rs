//! A TCP forwarder: the address clients follow a failover through, as a
//! virtual IP or a proxy moves to the new primary in production.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

/// `url` through forwarders, one per host it names (each member of an etcd
/// cluster). A registry at a distance is toxiproxy's (`toxiproxy.rs`).
pub fn forwarded(url: &str) -> (String, Vec<Forwarder>) {
    super::toxiproxy::through_each_host(url, |host| {
        let forwarder = Forwarder::new(host.to_socket_addrs().unwrap().next().unwrap());
        (forwarder.port(), forwarder)
    })
}

/// Forwards connections on a port of its own to a target it can move.
pub struct Forwarder {
    port: u16,
    shared: Arc<Shared>,
}

struct Shared {
    target: Mutex<SocketAddr>,
    /// Both ends of every connection forwarded, to cut at a switch, and
    /// each connection's switch to go dead without a word.
    open: Mutex<Vec<(TcpStream, Arc<AtomicBool>)>>,
    /// New connections wait until then before they reach the target.
    hold_until: Mutex<Option<std::time::Instant>>,
    /// Connections forwarded, and round trips answered on them: each time
    /// the server speaks after the client spoke, however many chunks
    /// either sent (pipelined requests answered together count once).
    connections: AtomicU64,
    round_trips: AtomicU64,
    stop: AtomicBool,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Forwarder {
    /// A forwarder to `target`, listening on a free port of 127.0.0.1.
    pub fn new(target: SocketAddr) -> Forwarder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            target: Mutex::new(target),
            open: Mutex::new(Vec::new()),
            hold_until: Mutex::new(None),
            connections: AtomicU64::new(0),
            round_trips: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        thread::spawn(move || {
            for client in listener.incoming() {
                if accepting.stop.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(client) = client else { continue };
                let shared = Arc::clone(&accepting);
                thread::spawn(move || forward(client, &shared));
            }
        });
        Forwarder { port, shared }
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Moves to `target`: new connections go there, and every connection
    /// open now is cut, as one to a server that went away is.
    pub fn switch(&self, target: SocketAddr) {
        *lock(&self.shared.target) = target;
        self.cut();
    }

    /// Cuts every connection open now, as a server's restart or a
    /// middlebox's reset does: new ones go through.
    pub fn cut(&self) {
        for (stream, _) in lock(&self.shared.open).drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    /// Connections forwarded so far, and round trips answered on them:
    /// each time the server spoke after the client had (a request, or a
    /// batch of pipelined ones, answered). The TCP handshake is not one of
    /// them; a server's greeting before the client spoke is not either.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.shared.connections.load(Ordering::SeqCst),
            self.shared.round_trips.load(Ordering::SeqCst),
        )
    }

    /// Every connection open now stops carrying bytes, either way, and is
    /// not closed: a peer that vanished without a word (a host gone, a NAT
    /// entry expired). New connections are held until `hold` has passed,
    /// then go through.
    pub fn go_dead(&self, hold: Duration) {
        *lock(&self.shared.hold_until) = Some(std::time::Instant::now() + hold);
        for (_, dead) in lock(&self.shared.open).iter() {
            dead.store(true, Ordering::Relaxed);
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        // Wakes the accepting thread, which then sees `stop`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        for (stream, _) in lock(&self.shared.open).drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

/// Pipes `client` to the target and back until either side closes.
fn forward(client: TcpStream, shared: &Shared) {
    let hold = *lock(&shared.hold_until);
    if let Some(left) =
        hold.and_then(|until| until.checked_duration_since(std::time::Instant::now()))
    {
        thread::sleep(left);
    }
    let target = *lock(&shared.target);
    let Ok(server) = TcpStream::connect_timeout(&target, Duration::from_secs(1)) else {
        // Refused, as the server's own address would refuse it.
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    shared.connections.fetch_add(1, Ordering::SeqCst);
    let dead = Arc::new(AtomicBool::new(false));
    {
        let mut open = lock(&shared.open);
        // Connections that ended are of no use to a switch.
        open.retain(|(s, _)| s.peer_addr().is_ok());
        for stream in [&client, &server] {
            if let Ok(clone) = stream.try_clone() {
                open.push((clone, Arc::clone(&dead)));
            }
        }
    }
    let (Ok(client_in), Ok(server_out)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let upstream_dead = Arc::clone(&dead);
    // Whether the client spoke since the server last did.
    let asked = Arc::new(AtomicBool::new(false));
    let asking = Arc::clone(&asked);
    let upstream = thread::spawn(move || {
        pipe(client_in, server_out, &upstream_dead, &|| {
            asking.store(true, Ordering::SeqCst)
        })
    });
    pipe(server, client, &dead, &|| {
        if asked.swap(false, Ordering::SeqCst) {
            shared.round_trips.fetch_add(1, Ordering::SeqCst);
        }
    });
    let _ = upstream.join();
}

/// Copies `from` to `to` until either closes; once `dead`, what is read
/// goes nowhere. `read` is told of each chunk as it is read.
fn pipe(mut from: TcpStream, mut to: TcpStream, dead: &AtomicBool, read: &dyn Fn()) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(_) if dead.load(Ordering::Relaxed) => {}
            Ok(n) => {
                read();
                if to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Both);
    let _ = from.shutdown(Shutdown::Both);
}
