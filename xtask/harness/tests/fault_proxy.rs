//! The chaos fault proxy against an echo server: each fault does what it says, and switching
//! back heals open connections.

use std::time::Duration;

use lock_harness::shared::proxy::{Direction, Fault, FaultProxy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{timeout, Instant};

async fn echo_server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0; 1024];
                while let Ok(n @ 1..) = socket.read(&mut buf).await {
                    if socket.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

async fn round_trip(client: &mut TcpStream, bytes: &[u8]) -> Vec<u8> {
    client.write_all(bytes).await.unwrap();
    let mut reply = vec![0; bytes.len()];
    client.read_exact(&mut reply).await.unwrap();
    reply
}

/// Asserts that `stream` is closed (its read ends or fails) within 5 s; `what` says what it
/// means when it is not.
async fn assert_closed(stream: &mut TcpStream, what: &str) {
    let mut buf = [0; 8];
    let read = timeout(Duration::from_secs(5), stream.read(&mut buf))
        .await
        .unwrap();
    assert!(matches!(read, Ok(0) | Err(_)), "{what}: {read:?}");
}

#[tokio::test]
async fn faults_switch_at_run_time() {
    timeout(Duration::from_secs(20), async {
        let proxy = FaultProxy::start(echo_server().await).await.unwrap();
        let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(round_trip(&mut client, b"pass").await, b"pass");

        // Delay: the reply comes, not before the delay.
        proxy.set(
            Direction::ToServer,
            Fault::Delay(Duration::from_millis(200)),
        );
        let sent = Instant::now();
        assert_eq!(round_trip(&mut client, b"slow").await, b"slow");
        assert!(sent.elapsed() >= Duration::from_millis(200));
        proxy.set(Direction::Both, Fault::Pass);

        // Stall: nothing arrives, the connection stays; healing delivers the held bytes.
        proxy.set(Direction::ToClient, Fault::Stall);
        client.write_all(b"held").await.unwrap();
        let mut reply = [0; 4];
        assert!(
            timeout(Duration::from_millis(200), client.read_exact(&mut reply))
                .await
                .is_err()
        );
        proxy.set(Direction::Both, Fault::Pass);
        let mut rest = [0; 4];
        timeout(Duration::from_secs(5), client.read_exact(&mut rest))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&rest, b"held");

        // Blackhole: the bytes are gone for good, the connection still open.
        proxy.set(Direction::ToServer, Fault::Blackhole);
        client.write_all(b"lost").await.unwrap();
        assert!(
            timeout(Duration::from_millis(200), client.read_exact(&mut reply))
                .await
                .is_err()
        );
        proxy.set(Direction::Both, Fault::Pass);
        assert_eq!(round_trip(&mut client, b"back").await, b"back");

        // Reset: the open connection is reset, new ones too, until healed.
        proxy.set(Direction::Both, Fault::Reset);
        assert_closed(&mut client, "the connection was not closed").await;
        let mut fresh = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_closed(&mut fresh, "the new connection was not closed").await;
        proxy.set(Direction::Both, Fault::Pass);
        let mut healed = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(round_trip(&mut healed, b"ok").await, b"ok");
        assert!(proxy.connections() >= 3);
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn a_lost_reply_resets_one_connection_once() {
    timeout(Duration::from_secs(20), async {
        // The server counts what it received: the request is applied even though its reply
        // is lost.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream = listener.local_addr().unwrap();
        let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let seen_tx = seen_tx.clone();
                tokio::spawn(async move {
                    let mut buf = [0; 1024];
                    while let Ok(n @ 1..) = socket.read(&mut buf).await {
                        seen_tx.send(buf[..n].to_vec()).ok();
                        if socket.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        let proxy = FaultProxy::start(upstream).await.unwrap();
        let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(round_trip(&mut client, b"warm").await, b"warm");
        assert_eq!(seen.recv().await.unwrap(), b"warm");

        proxy.set(Direction::ToClient, Fault::LoseNextAndReset);
        client.write_all(b"apply").await.unwrap();
        assert_eq!(
            seen.recv().await.unwrap(),
            b"apply",
            "the request reached the server"
        );
        assert_closed(&mut client, "the reply was not lost").await;
        assert_eq!(proxy.resets(), 1);
        assert_eq!(proxy.faults(), (Fault::Pass, Fault::Pass), "one-shot");
        let mut retry = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(round_trip(&mut retry, b"again").await, b"again");
    })
    .await
    .expect("bounded");
}
