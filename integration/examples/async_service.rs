//! A tokio service that leases its worker id: the generator in axum's state,
//! a handler that issues IDs, and a graceful shutdown that gives the id back.
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo run -p flakegen-integration --example async_service -- "$FLAKEGEN_TEST_REDIS_URL"
//! curl localhost:3000/id        # in another terminal; Ctrl-C to stop
//! curl localhost:3000/metrics   # the lease's and the generator's, in Prometheus text
//! ```
//!
//! `--requests N` makes N requests to itself, prints one scrape of
//! `/metrics`, then shuts down as on Ctrl-C: the way CI runs it. `scripts/heal-drill.sh` runs it through a Redis
//! crash: it answers 503 while its lease heals, and 200 again after, with
//! no restart.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use clap::Parser;
use flakegen::lease::{self, Lease};
use flakegen::{AsyncIdGenerator, Builder, IdGenerator, Strategy};
use metrics_exporter_prometheus::PrometheusBuilder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

#[derive(Parser)]
struct Args {
    /// The lease registry: mysql://..., postgres://... or redis://...
    registry: String,
    /// The lease namespace.
    #[arg(long, default_value = "async-service")]
    namespace: String,
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:3000")]
    listen: SocketAddr,
    /// Make this many requests to itself, then shut down.
    #[arg(long)]
    requests: Option<u32>,
    /// The lease's TTL, in ms.
    #[arg(long = "ttl-ms", default_value_t = 10_000)]
    ttl_millis: u64,
    /// How far clocks may disagree with the registry's, in ms, for ids without a record.
    #[arg(long = "skew-ms", default_value_t = 2_000)]
    skew_millis: u64,
    /// How long a request may wait for an ID (its lease healing, the clock
    /// behind) before it is answered 503, in ms.
    #[arg(long = "max-wait-ms", default_value_t = 1_000)]
    max_wait_millis: u64,
}

/// The service's state: one generator, shared by every request.
type Ids = Arc<Box<dyn IdGenerator>>;

/// `GET /id`: one ID, in decimal.
async fn next_id(State(ids): State<Ids>) -> Result<String, (StatusCode, String)> {
    // Waits (the unit's IDs used up, the clock behind) are tokio sleeps.
    match ids.next_id_async().await {
        Ok(id) => Ok(id.to_string()),
        // At its fence while the lease renews or heals: say why, and let the
        // client retry.
        Err(e) => Err((StatusCode::SERVICE_UNAVAILABLE, e.to_string())),
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match serve(Args::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // Display, not Debug: flakegen's messages say what to do.
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn serve(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    // The lease says what it does (acquired, lost, leasing again, issuing
    // again, released) as tracing events: here, a line each on stderr.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(true)
        .init();
    // flakegen reports through the `metrics` facade; this recorder renders
    // what it is told as Prometheus text on GET /metrics.
    let metrics = PrometheusBuilder::new().install_recorder()?;
    let upkeep = metrics.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            upkeep.run_upkeep();
        }
    });
    let registry = lease::connect(&args.registry)?;
    let lease = Lease::new(registry, args.namespace)
        .ttl(Duration::from_millis(args.ttl_millis))
        .skew(Duration::from_millis(args.skew_millis));
    // Never blocks the runtime: the lease is acquired on its own thread.
    // A lease lost later (a registry restart) is leased again by that thread:
    // the handler answers 503 meanwhile, and 200 again after.
    let ids: Ids = Arc::new(
        Builder::new()
            .lease(lease)
            .max_wait(Duration::from_millis(args.max_wait_millis))
            .build_async(Strategy::Atomic)
            .await?,
    );
    println!("leased worker id {}", ids.worker());

    let app = Router::new()
        .route("/id", get(next_id))
        .route("/metrics", get(move || async move { metrics.render() }))
        .with_state(Arc::clone(&ids));
    let listener = TcpListener::bind(args.listen).await?;
    let address = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let shutdown = async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = stopped => {}
        }
    };
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
    });
    println!("listening on http://{address}/id");

    if let Some(requests) = args.requests {
        for _ in 0..requests {
            println!("GET /id -> {}", fetch(address, "/id").await?);
        }
        println!("GET /metrics ->\n{}", fetch(address, "/metrics").await?);
        let _ = stop.send(());
    }
    server.await??;

    // Every request is done: stop issuing, give the id back, and wait (a
    // bounded time) for the registry to confirm, so a restart takes it at once.
    match ids.shutdown().wait_async(Duration::from_secs(3)).await {
        Ok(()) => println!("released worker id {}", ids.worker()),
        Err(e) => eprintln!("the lease will expire on its own: {e}"),
    }
    Ok(())
}

/// One `GET` of `path` over HTTP/1.1, returning the body.
async fn fetch(address: SocketAddr, path: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(address).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    if !head.starts_with("HTTP/1.1 200") {
        return Err(std::io::Error::other(format!("{head}\n{body}")));
    }
    Ok(body.to_owned())
}
