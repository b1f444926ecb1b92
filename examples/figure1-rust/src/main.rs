//! Figure 1 of the paper with Rust `std::net`, same shape as `examples/figure1`
//! (C).  One binary, several roles selected by the first argument:
//!
//! * `figure1-rust run` starts `server-x DIR`, `server-y DIR`, `client-a DIR`
//!   and `client-b DIR` (this same executable) with their stdout in files of
//!   a fresh temp dir, waits for all four and prints the files in a fixed
//!   order (client_a, client_b, server_x sorted, server_y).
//! * `server-x DIR` accepts 2 connections; for each one it spawns
//!   `serve-x-conn <fd> <k>` which inherits the accepted socket (std has no
//!   fork: FD_CLOEXEC is cleared on it first), and drops its own copy right
//!   after spawning.
//! * `server-y DIR` accepts 1 connection and serves it itself.
//! * `client-a DIR` talks to both servers and reports who replied first
//!   (std has no select/poll: non-blocking reads tried in rounds, 1 ms apart).
//! * `client-b DIR` talks to server_x.
//!
//! Everything is single-threaded.  `DDBX_JITTER=N` makes every process sleep
//! a random 0..N ms at the points that make the races.

use std::env;
use std::fs;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::raw::c_int;
use std::os::unix::io::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use std::process::{self, Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

extern "C" {
    fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
}

const F_GETFD: c_int = 1;
const F_SETFD: c_int = 2;
const FD_CLOEXEC: c_int = 1;

type Res<T> = Result<T, String>;

fn err<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// Random sleeps controlled by DDBX_JITTER (maximum in milliseconds).
struct Jitter {
    max_us: u64,
    state: u64,
}

impl Jitter {
    fn new() -> Jitter {
        let max_ms = env::var("DDBX_JITTER")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos() as u64 ^ d.as_secs())
            .unwrap_or(0);
        let seed = nanos ^ ((process::id() as u64) << 32) ^ 0x9e37_79b9_7f4a_7c15;
        Jitter {
            max_us: max_ms * 1000,
            state: if seed == 0 { 1 } else { seed },
        }
    }

    fn next(&mut self) -> u64 {
        // xorshift64
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        x
    }

    fn sleep(&mut self) {
        if self.max_us > 0 {
            let us = self.next() % (self.max_us + 1);
            std::thread::sleep(Duration::from_micros(us));
        }
    }
}

fn port_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.port"))
}

/// Publish a listening port atomically: temp file, then rename.
fn write_port_file(dir: &Path, name: &str, port: u16) -> Res<()> {
    let tmp = dir.join(format!("{name}.port.tmp"));
    fs::write(&tmp, format!("{port}\n")).map_err(err("write port file"))?;
    fs::rename(&tmp, port_path(dir, name)).map_err(err("rename port file"))
}

/// Wait up to ~10 s for a server's port file.
fn read_port_file(dir: &Path, name: &str) -> Res<u16> {
    let path = port_path(dir, name);
    for _ in 0..1000 {
        match fs::read_to_string(&path) {
            Ok(text) => return text.trim().parse::<u16>().map_err(err("bad port file")),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) => return Err(format!("read port file: {e}")),
        }
    }
    Err(format!("timed out waiting for {}", path.display()))
}

fn connect(port: u16) -> Res<TcpStream> {
    TcpStream::connect(("127.0.0.1", port)).map_err(err("connect"))
}

fn listen() -> Res<(TcpListener, u16)> {
    let l = TcpListener::bind(("127.0.0.1", 0)).map_err(err("bind"))?;
    let port = l.local_addr().map_err(err("local_addr"))?.port();
    Ok((l, port))
}

/// Read (into `buf`, which may already hold a prefix) until it contains a
/// '\n'; returns the line without the '\n'.  EOF before that is an error.
fn read_line(s: &mut TcpStream, buf: &mut Vec<u8>) -> Res<String> {
    loop {
        if let Some(i) = buf.iter().position(|&b| b == b'\n') {
            return Ok(String::from_utf8_lossy(&buf[..i]).into_owned());
        }
        let mut tmp = [0u8; 4096];
        match s.read(&mut tmp) {
            Ok(0) => return Err("unexpected EOF".into()),
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read: {e}")),
        }
    }
}

fn send(s: &mut TcpStream, text: &str) -> Res<()> {
    s.write_all(text.as_bytes()).map_err(err("write"))
}

fn dir_arg(args: &[String]) -> Res<PathBuf> {
    match args {
        [d] => Ok(PathBuf::from(d)),
        _ => Err("expected exactly one argument: DIR".into()),
    }
}

// ---- roles ----

fn server_x(args: &[String]) -> Res<()> {
    let dir = dir_arg(args)?;
    let (listener, port) = listen()?;
    write_port_file(&dir, "server_x", port)?;
    let exe = env::current_exe().map_err(err("current_exe"))?;
    let mut kids: Vec<Child> = Vec::new();
    for k in 1..=2 {
        let (stream, _) = listener.accept().map_err(err("accept"))?;
        let fd = stream.as_raw_fd();
        // Let the handler process inherit the socket.
        let flags = unsafe { fcntl(fd, F_GETFD) };
        if flags < 0 || unsafe { fcntl(fd, F_SETFD, flags & !FD_CLOEXEC) } < 0 {
            return Err(format!("fcntl: {}", io::Error::last_os_error()));
        }
        let child = Command::new(&exe)
            .arg("serve-x-conn")
            .arg(fd.to_string())
            .arg(k.to_string())
            .spawn()
            .map_err(err("spawn serve-x-conn"))?;
        drop(stream); // the paper requires it: only the child uses the connection
        kids.push(child);
    }
    drop(listener);
    for mut c in kids {
        let st = c.wait().map_err(err("wait"))?;
        if !st.success() {
            return Err(format!("serve-x-conn failed: {st}"));
        }
    }
    Ok(())
}

fn serve_x_conn(args: &[String]) -> Res<()> {
    let (fd, k) = match args {
        [fd, k] => (
            fd.parse::<c_int>().map_err(err("bad fd"))?,
            k.parse::<u32>().map_err(err("bad k"))?,
        ),
        _ => return Err("expected: serve-x-conn FD K".into()),
    };
    let mut jit = Jitter::new();
    // SAFETY: the fd is the accepted socket inherited from server-x, owned
    // by nothing else in this process.
    let mut s = unsafe { TcpStream::from_raw_fd(fd) };
    let name = read_line(&mut s, &mut Vec::new())?;
    println!("server_x child {k}: serving {name}");
    jit.sleep();
    send(&mut s, &format!("server_x child {k} serves {name}\n"))
}

fn server_y(args: &[String]) -> Res<()> {
    let dir = dir_arg(args)?;
    let mut jit = Jitter::new();
    let (listener, port) = listen()?;
    write_port_file(&dir, "server_y", port)?;
    let (mut s, _) = listener.accept().map_err(err("accept"))?;
    drop(listener);
    let name = read_line(&mut s, &mut Vec::new())?;
    println!("server_y: serving {name}");
    jit.sleep();
    send(&mut s, &format!("server_y serves {name}\n"))
}

fn client_a(args: &[String]) -> Res<()> {
    let dir = dir_arg(args)?;
    let mut jit = Jitter::new();
    let names = ["server_x", "server_y"];
    let mut streams = Vec::new();
    for name in names {
        let port = read_port_file(&dir, name)?;
        jit.sleep();
        streams.push(connect(port)?);
    }
    for s in streams.iter_mut() {
        jit.sleep();
        send(s, "client_a\n")?;
    }
    // Wait for the first byte of either reply: non-blocking read attempts on
    // both, in rounds 1 ms apart (server_x is tried first in each round).
    for s in &streams {
        s.set_nonblocking(true).map_err(err("set_nonblocking"))?;
    }
    let mut bufs = [Vec::new(), Vec::new()];
    let deadline = Instant::now() + Duration::from_secs(10);
    let first = 'wait: loop {
        for (i, s) in streams.iter_mut().enumerate() {
            let mut tmp = [0u8; 4096];
            match s.read(&mut tmp) {
                Ok(0) => return Err(format!("{}: unexpected EOF", names[i])),
                Ok(n) => {
                    bufs[i].extend_from_slice(&tmp[..n]);
                    break 'wait i;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("read: {e}")),
            }
        }
        if Instant::now() > deadline {
            return Err("no reply within 10 s".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    for s in &streams {
        s.set_nonblocking(false).map_err(err("set_nonblocking"))?;
    }
    println!("client_a: first reply from {}", names[first]);
    for i in [first, 1 - first] {
        let reply = read_line(&mut streams[i], &mut bufs[i])?;
        println!("client_a: {} says: {reply}", names[i]);
    }
    Ok(())
}

fn client_b(args: &[String]) -> Res<()> {
    let dir = dir_arg(args)?;
    let mut jit = Jitter::new();
    let port = read_port_file(&dir, "server_x")?;
    jit.sleep();
    let mut s = connect(port)?;
    jit.sleep();
    send(&mut s, "client_b\n")?;
    let reply = read_line(&mut s, &mut Vec::new())?;
    println!("client_b: server_x says: {reply}");
    Ok(())
}

fn make_temp_dir() -> Res<PathBuf> {
    let base = env::temp_dir();
    let mut jit = Jitter::new();
    for _ in 0..100 {
        let d = base.join(format!(
            "figure1-rust.{}.{:x}",
            process::id(),
            jit.next() & 0xffff_ffff
        ));
        match fs::create_dir(&d) {
            Ok(()) => return Ok(d),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("create temp dir: {e}")),
        }
    }
    Err("could not create a temp dir".into())
}

fn run_all(dir: &Path) -> Res<bool> {
    let exe = env::current_exe().map_err(err("current_exe"))?;
    let roles = ["server-x", "server-y", "client-a", "client-b"];
    let mut kids = Vec::new();
    for role in roles {
        let out = fs::File::create(dir.join(format!("{}.out", role.replace('-', "_"))))
            .map_err(err("create output file"))?;
        let child = Command::new(&exe)
            .arg(role)
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(out)
            .spawn()
            .map_err(err("spawn"))?;
        kids.push((role, child));
    }
    let mut ok = true;
    for (role, mut c) in kids {
        let st = c.wait().map_err(err("wait"))?;
        if !st.success() {
            eprintln!("figure1-rust: {role} failed: {st}");
            ok = false;
        }
    }
    let mut out = String::new();
    for name in ["client_a", "client_b", "server_x", "server_y"] {
        let text =
            fs::read_to_string(dir.join(format!("{name}.out"))).map_err(err("read output file"))?;
        let mut lines: Vec<&str> = text.lines().collect();
        if name == "server_x" {
            // Two processes write this file; their line order is timing,
            // not a race outcome: sort by child number.
            lines.sort();
        }
        for l in lines {
            out.push_str(l);
            out.push('\n');
        }
    }
    io::stdout()
        .write_all(out.as_bytes())
        .map_err(err("write stdout"))?;
    Ok(ok)
}

fn run(args: &[String]) -> Res<()> {
    if !args.is_empty() {
        return Err("run takes no arguments".into());
    }
    let dir = make_temp_dir()?;
    let res = run_all(&dir);
    let _ = fs::remove_dir_all(&dir);
    match res {
        Ok(true) => Ok(()),
        Ok(false) => Err("some process failed".into()),
        Err(e) => Err(e),
    }
}

fn main() {
    let args: Vec<String> = env::args().collect();
    let rest = if args.len() > 2 { &args[2..] } else { &[][..] };
    let res = match args.get(1).map(String::as_str) {
        Some("run") => run(rest),
        Some("server-x") => server_x(rest),
        Some("serve-x-conn") => serve_x_conn(rest),
        Some("server-y") => server_y(rest),
        Some("client-a") => client_a(rest),
        Some("client-b") => client_b(rest),
        _ => Err("usage: figure1-rust run | server-x DIR | server-y DIR | client-a DIR | client-b DIR | serve-x-conn FD K".into()),
    };
    if let Err(e) = res {
        let role = args.get(1).map(String::as_str).unwrap_or("figure1-rust");
        eprintln!("figure1-rust {role} [pid {}]: {e}", process::id());
        process::exit(1);
    }
}
