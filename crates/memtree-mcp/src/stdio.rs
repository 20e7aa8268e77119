//! The process's stdin and stdout for the stdio transport, read and
//! written on the thread that serves the client.
//!
//! tokio's `stdin()` and `stdout()` hand every read and every write to a
//! thread of its blocking pool and wait for it to finish: two more thread
//! wake-ups on the path of each request, which cost most when the client
//! pauses between calls and every thread has gone to sleep. Here stdin,
//! when it is a pipe or a socket (as an MCP client starts a server), is set
//! non-blocking and polled by the runtime itself; anything else (a file, a
//! terminal) keeps tokio's reader. Stdout is written in place: a write
//! blocks while the client's pipe is full, which is the answers'
//! backpressure (the framing stops reading requests meanwhile).

use std::io;
use std::os::fd::AsFd as _;
use std::pin::Pin;
use std::task::{Context, Poll};

use rustix::fs::{FileType, OFlags};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Stdin and stdout for [`crate::framing::serve`]; call on the runtime
/// that will serve them.
pub fn pipes() -> (Input, Output) {
    (Input::open(), Output)
}

/// The client's requests.
pub enum Input {
    /// A pipe or a socket, polled by the runtime through a duplicate of
    /// stdin; the flags its open file had (it may be shared with other
    /// processes) are put back when it is dropped.
    Polled { stdin: Polled, flags: OFlags },
    /// Read on tokio's blocking pool.
    Pooled(tokio::io::Stdin),
}

/// What a pollable stdin is.
pub enum Polled {
    Pipe(tokio::net::unix::pipe::Receiver),
    Socket(tokio::net::UnixStream),
}

impl Input {
    fn open() -> Input {
        match Input::polled() {
            Ok(input) => input,
            Err(error) => {
                tracing::debug!(%error, "stdin is read on the blocking pool");
                Input::Pooled(tokio::io::stdin())
            }
        }
    }

    fn polled() -> io::Result<Input> {
        let stdin = io::stdin();
        let kind = FileType::from_raw_mode(rustix::fs::fstat(stdin.as_fd())?.st_mode);
        let flags = rustix::fs::fcntl_getfl(stdin.as_fd())?;
        let fd = stdin.as_fd().try_clone_to_owned()?;
        let polled = match kind {
            // Sets the open file non-blocking.
            FileType::Fifo => tokio::net::unix::pipe::Receiver::from_owned_fd(fd).map(Polled::Pipe),
            FileType::Socket => {
                let socket = std::os::unix::net::UnixStream::from(fd);
                socket
                    .set_nonblocking(true)
                    .and_then(|()| tokio::net::UnixStream::from_std(socket))
                    .map(Polled::Socket)
            }
            _ => Err(io::Error::other(format!("stdin is a {kind:?}, not a pipe or a socket"))),
        };
        match polled {
            Ok(stdin) => Ok(Input::Polled { stdin, flags }),
            Err(error) => {
                let _ = rustix::fs::fcntl_setfl(io::stdin().as_fd(), flags);
                Err(error)
            }
        }
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        if let Input::Polled { flags, .. } = self {
            let _ = rustix::fs::fcntl_setfl(io::stdin().as_fd(), *flags);
        }
    }
}

impl AsyncRead for Input {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Input::Pooled(stdin) => Pin::new(stdin).poll_read(cx, buf),
            Input::Polled { stdin: Polled::Pipe(pipe), .. } => Pin::new(pipe).poll_read(cx, buf),
            Input::Polled { stdin: Polled::Socket(socket), .. } => Pin::new(socket).poll_read(cx, buf),
        }
    }
}

/// The answers to the client.
pub struct Output;

impl AsyncWrite for Output {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let stdout = io::stdout();
        loop {
            match retried(|| rustix::io::write(stdout.as_fd(), buf)) {
                // Stdout shares its open file with a non-blocking stdin (one
                // socket for both): wait until the client makes room.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let mut out = [rustix::event::PollFd::new(&stdout, rustix::event::PollFlags::OUT)];
                    retried(|| rustix::event::poll(&mut out, None))?;
                }
                written => return Poll::Ready(written),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// `call` again while a signal interrupts it.
fn retried<T>(mut call: impl FnMut() -> rustix::io::Result<T>) -> io::Result<T> {
    loop {
        match call() {
            Err(rustix::io::Errno::INTR) => continue,
            done => return done.map_err(io::Error::from),
        }
    }
}
