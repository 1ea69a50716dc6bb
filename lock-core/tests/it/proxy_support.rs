//! A loopback TCP proxy in front of a server that a test can cut and restore: a network
//! partition between one client (a lock client, a replica) and its server, while the test's own
//! admin client still reaches the server directly.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinHandle};

/// Forwards every connection made to [`addr`](Self::addr) to the upstream server.
pub(crate) struct Proxy {
    /// `127.0.0.1:<port>` of the proxy.
    pub(crate) addr: String,
    open: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<AbortHandle>>>,
    accept: JoinHandle<()>,
}

impl Proxy {
    /// A proxy to `upstream` (`host:port`; of a connect string listing several servers, the
    /// first).
    pub(crate) async fn start(upstream: &str) -> Self {
        let upstream = upstream.split(',').next().unwrap().to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let open = Arc::new(AtomicBool::new(true));
        let connections = Arc::new(Mutex::new(Vec::new()));
        let accept = tokio::spawn({
            let (open, connections) = (open.clone(), connections.clone());
            async move {
                while let Ok((mut client, _)) = listener.accept().await {
                    if !open.load(Ordering::SeqCst) {
                        continue; // dropped: refused while cut
                    }
                    let upstream = upstream.clone();
                    let forward = tokio::spawn(async move {
                        if let Ok(mut server) = TcpStream::connect(&upstream).await {
                            tokio::io::copy_bidirectional(&mut client, &mut server)
                                .await
                                .ok();
                        }
                    });
                    connections.lock().unwrap().push(forward.abort_handle());
                }
            }
        });
        Self {
            addr,
            open,
            connections,
            accept,
        }
    }

    /// Closes every forwarded connection and refuses new ones until [`Self::restore`].
    pub(crate) fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        for connection in self.connections.lock().unwrap().drain(..) {
            connection.abort();
        }
    }

    /// Accepts connections again after [`Self::cut`].
    pub(crate) fn restore(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}
