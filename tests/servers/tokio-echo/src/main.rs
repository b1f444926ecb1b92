//! `tokio-echo`: a line server on tokio's single-threaded runtime. Binds 127.0.0.1 on an
//! ephemeral port and prints the port on stdout. Each connection sends one line:
//!
//! * `dump`: the server answers with every line it got so far, in arrival order, on one line;
//! * nothing (a readiness probe that only connects): ignored;
//! * anything else: the server remembers it and answers `#N LINE`, N its arrival number.
//!
//! All connections are served concurrently by tasks on the one thread.

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{port}")?;
    stdout.flush()?;
    let seen: Rc<RefCell<Vec<String>>> = Rc::new(RefCell::new(Vec::new()));
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            loop {
                let (stream, _) = listener.accept().await?;
                let seen = Rc::clone(&seen);
                tokio::task::spawn_local(async move {
                    let (read, mut write) = stream.into_split();
                    let mut line = String::new();
                    if BufReader::new(read).read_line(&mut line).await.is_err() {
                        return;
                    }
                    let line = line.trim().to_string();
                    if line.is_empty() {
                        return; // a readiness probe (`ncat -z`): connected, sent nothing
                    }
                    let answer = if line == "dump" {
                        seen.borrow().join(" ")
                    } else {
                        let mut seen = seen.borrow_mut();
                        seen.push(line.clone());
                        format!("#{} {line}", seen.len())
                    };
                    let _ = write.write_all(format!("{answer}\n").as_bytes()).await;
                });
            }
        })
        .await
}
