//! A TCP proxy that injects faults, per direction, switchable while connections are open:
//! pass, delay every chunk by `d`, stall (hold the bytes, keep the connection), blackhole
//! (swallow the bytes), reset every connection, or let one chunk reach the proxy and reset its
//! connection instead of forwarding it (a reply lost after the server applied the request).
//!
//! ```
//! use std::time::Duration;
//! use lock_harness::shared::proxy::{Direction, Fault, FaultProxy};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> std::io::Result<()> {
//! // An echo server, and the proxy in front of it.
//! let echo = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let upstream = echo.local_addr()?;
//! tokio::spawn(async move {
//!     let (mut socket, _) = echo.accept().await.unwrap();
//!     let mut buf = [0; 64];
//!     while let Ok(n @ 1..) = socket.read(&mut buf).await {
//!         socket.write_all(&buf[..n]).await.unwrap();
//!     }
//! });
//! let proxy = FaultProxy::start(upstream).await?;
//! let mut client = tokio::net::TcpStream::connect(proxy.addr()).await?;
//! client.write_all(b"ping").await?;
//! let mut reply = [0; 4];
//! client.read_exact(&mut reply).await?;
//! assert_eq!(&reply, b"ping");
//!
//! proxy.set(Direction::Both, Fault::Stall);
//! client.write_all(b"held").await?;
//! assert!(tokio::time::timeout(Duration::from_millis(50), client.read_exact(&mut reply)).await.is_err());
//! proxy.set(Direction::Both, Fault::Pass); // held bytes flow on
//! # Ok(()) }
//! ```

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{sleep_until, Instant};

/// What happens to the bytes flowing one way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Forward at once.
    Pass,
    /// Forward each chunk this long after it arrived (order kept).
    Delay(Duration),
    /// Hold the bytes and keep the connection: they flow on when the fault changes.
    Stall,
    /// Read and drop the bytes: the connection looks alive and nothing arrives.
    Blackhole,
    /// Close every connection at once with a TCP reset; new connections are reset too.
    Reset,
    /// Once: the next chunk arriving this way (or the bytes a [`Stall`](Self::Stall) held) is
    /// dropped and its connection reset (both sides); then the direction is back to
    /// [`Pass`](Self::Pass). Set on
    /// [`ToClient`](Direction::ToClient), the request reaches the server and is applied, and
    /// its reply never arrives.
    LoseNextAndReset,
}

/// Which way a fault applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Client to server (requests).
    ToServer,
    /// Server to client (replies, pushes).
    ToClient,
    /// Both ways.
    Both,
}

/// A running proxy; dropping it stops accepting and ends every connection.
pub struct FaultProxy {
    addr: SocketAddr,
    to_server: Arc<watch::Sender<Fault>>,
    to_client: Arc<watch::Sender<Fault>>,
    connections: Arc<AtomicU64>,
    resets: Arc<AtomicU64>,
    accept: JoinHandle<()>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl FaultProxy {
    /// Listens on a free loopback port and forwards every connection to `upstream`.
    pub async fn start(upstream: SocketAddr) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let to_server = Arc::new(watch::channel(Fault::Pass).0);
        let to_client = Arc::new(watch::channel(Fault::Pass).0);
        let connections = Arc::new(AtomicU64::new(0));
        let resets = Arc::new(AtomicU64::new(0));
        let accept = tokio::spawn(accept_loop(
            listener,
            upstream,
            Faults {
                to_server: to_server.clone(),
                to_client: to_client.clone(),
                resets: resets.clone(),
            },
            connections.clone(),
        ));
        Ok(Self {
            addr,
            to_server,
            to_client,
            connections,
            resets,
            accept,
        })
    }

    /// Where clients connect.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Sets the fault of `direction` (for open connections too).
    pub fn set(&self, direction: Direction, fault: Fault) {
        if direction != Direction::ToClient {
            self.to_server.send_replace(fault);
        }
        if direction != Direction::ToServer {
            self.to_client.send_replace(fault);
        }
    }

    /// The fault each way now: `(to server, to client)`.
    #[must_use]
    pub fn faults(&self) -> (Fault, Fault) {
        (*self.to_server.borrow(), *self.to_client.borrow())
    }

    /// Connections accepted so far.
    #[must_use]
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// Connections reset so far (by [`Fault::Reset`] or [`Fault::LoseNextAndReset`]).
    #[must_use]
    pub fn resets(&self) -> u64 {
        self.resets.load(Ordering::Relaxed)
    }
}

/// The faults of both directions, shared by every connection, and the reset count.
#[derive(Clone)]
struct Faults {
    to_server: Arc<watch::Sender<Fault>>,
    to_client: Arc<watch::Sender<Fault>>,
    resets: Arc<AtomicU64>,
}

async fn accept_loop(
    listener: TcpListener,
    upstream: SocketAddr,
    faults: Faults,
    connections: Arc<AtomicU64>,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        connections.fetch_add(1, Ordering::Relaxed);
        let faults = faults.clone();
        tokio::spawn(async move {
            let refused = [&faults.to_server, &faults.to_client]
                .iter()
                .any(|f| *f.borrow() == Fault::Reset);
            let server = if refused {
                None
            } else {
                TcpStream::connect(upstream).await.ok()
            };
            let Some(server) = server else {
                faults.resets.fetch_add(1, Ordering::Relaxed);
                reset(client);
                return;
            };
            // Small writes (one command, one reply) go out at once; a failure only costs latency.
            client.set_nodelay(true).ok();
            server.set_nodelay(true).ok();
            let (mut client_read, mut client_write) = client.into_split();
            let (mut server_read, mut server_write) = server.into_split();
            // Either pump ending (EOF, error, reset) ends the connection both ways.
            let end = tokio::select! {
                end = pump(&mut client_read, &mut server_write, &faults.to_server, &faults.to_client) => end,
                end = pump(&mut server_read, &mut client_write, &faults.to_client, &faults.to_server) => end,
            };
            if end == End::Reset {
                faults.resets.fetch_add(1, Ordering::Relaxed);
                for (read, write) in [(client_read, client_write), (server_read, server_write)] {
                    if let Ok(stream) = read.reunite(write) {
                        reset(stream);
                    }
                }
            }
        });
    }
}

/// How a pump ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// EOF or an error: the connection closes.
    Closed,
    /// A reset fault: both sides get a TCP reset.
    Reset,
}

/// Copies `from` to `to` under `fault`; `other` is the opposite direction's fault (a reset there
/// ends this pump too).
async fn pump(
    from: &mut OwnedReadHalf,
    to: &mut OwnedWriteHalf,
    fault_of: &watch::Sender<Fault>,
    other_of: &watch::Sender<Fault>,
) -> End {
    let (mut fault, mut other) = (fault_of.subscribe(), other_of.subscribe());
    let mut held: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut open = true;
    loop {
        let now_fault = *fault.borrow_and_update();
        if now_fault == Fault::Reset || *other.borrow_and_update() == Fault::Reset {
            return End::Reset;
        }
        // Bytes held by a stall, when the fault turns to a lost reply: lost, and reset.
        if now_fault == Fault::LoseNextAndReset && !held.is_empty() && take_one_shot(fault_of) {
            return End::Reset;
        }
        // Send what is due.
        while let Some((due, _)) = held.front() {
            let release = match now_fault {
                Fault::Pass | Fault::LoseNextAndReset => true,
                Fault::Delay(_) => *due <= Instant::now(),
                Fault::Stall | Fault::Blackhole | Fault::Reset => false,
            };
            if !release {
                break;
            }
            let (_, chunk) = held.pop_front().expect("front exists");
            if to.write_all(&chunk).await.is_err() {
                return End::Closed;
            }
        }
        if !open && held.is_empty() {
            // The peer may be gone already; the connection ends either way.
            to.shutdown().await.ok();
            return End::Closed;
        }
        let next_due = match now_fault {
            Fault::Delay(_) => held.front().map(|(due, _)| *due),
            _ => None,
        };
        let reading = open && now_fault != Fault::Stall;
        tokio::select! {
            read = from.read(&mut buf), if reading => match read {
                Ok(0) | Err(_) => open = false,
                Ok(n) => match now_fault {
                    Fault::Blackhole => {}
                    // Only the first connection to see a chunk takes the one-shot fault.
                    Fault::LoseNextAndReset if take_one_shot(fault_of) => {
                        return End::Reset;
                    }
                    Fault::Delay(d) => held.push_back((Instant::now() + d, buf[..n].to_vec())),
                    _ => held.push_back((Instant::now(), buf[..n].to_vec())),
                },
            },
            () = sleep_until(next_due.unwrap_or_else(Instant::now)), if next_due.is_some() => {}
            changed = fault.changed() => if changed.is_err() { return End::Closed },
            changed = other.changed() => if changed.is_err() { return End::Closed },
        }
    }
}

/// Takes the one-shot [`Fault::LoseNextAndReset`] (back to pass): true for the one connection
/// that got it first.
fn take_one_shot(fault: &watch::Sender<Fault>) -> bool {
    fault.send_if_modified(|f| {
        let mine = *f == Fault::LoseNextAndReset;
        if mine {
            *f = Fault::Pass;
        }
        mine
    })
}

/// Closes `stream` with a reset (linger 0) instead of an orderly FIN.
fn reset(stream: TcpStream) {
    // Without it the close is an orderly FIN, still a close.
    stream.set_zero_linger().ok();
    drop(stream);
}
