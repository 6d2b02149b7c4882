//! Running code inside a named network namespace (`/run/netns/NAME`, as `ip netns add`
//! makes them) without `ip netns exec`: a scoped thread enters the namespace with
//! `setns(2)`, which moves only that thread, runs the closure and ends. Sockets, TUN devices
//! and BPF links created there keep belonging to that namespace after the thread is gone,
//! so the caller can use them from any thread.

use std::fs::File;
use std::io;
use std::path::PathBuf;

use nix::sched::{setns, CloneFlags};

/// The file `ip netns add NAME` bind-mounts for namespace `name`.
pub fn path(name: &str) -> PathBuf {
    PathBuf::from("/run/netns").join(name)
}

/// Runs `f` on a thread that has entered network namespace `name` (`None`: the caller's
/// namespace, on the same kind of thread) and returns its result.
pub fn run_in<T, F>(name: Option<&str>, f: F) -> io::Result<T>
where
    T: Send,
    F: FnOnce() -> T + Send,
{
    let file = match name {
        Some(n) => {
            if n.is_empty() || n.contains('/') {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("namespace name {n:?}"),
                ));
            }
            Some(File::open(path(n))?)
        }
        None => None,
    };
    std::thread::scope(|s| {
        s.spawn(move || {
            if let Some(file) = &file {
                setns(file, CloneFlags::CLONE_NEWNET).map_err(io::Error::from)?;
            }
            Ok(f())
        })
        .join()
        .map_err(|_| io::Error::other("thread in the namespace panicked"))?
    })
}

/// Spawns a long-lived thread inside namespace `name` (for a packet loop whose sockets and
/// devices must be created there). Fails, without running `f`, when the namespace cannot be
/// entered; the thread's result is `None` only in that case.
pub fn spawn_in<T, F>(
    name: Option<&str>,
    thread_name: &str,
    f: F,
) -> io::Result<std::thread::JoinHandle<Option<T>>>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let file = match name {
        Some(n) => Some(File::open(path(n))?),
        None => None,
    };
    let (tx, rx) = std::sync::mpsc::channel::<io::Result<()>>();
    let handle = std::thread::Builder::new()
        .name(thread_name.to_owned())
        .spawn(move || {
            if let Some(file) = &file {
                if let Err(e) = setns(file, CloneFlags::CLONE_NEWNET) {
                    let _ = tx.send(Err(io::Error::from(e)));
                    // The closure must not run in the wrong namespace.
                    return None;
                }
            }
            let _ = tx.send(Ok(()));
            Some(f())
        })?;
    match rx.recv() {
        Ok(Ok(())) => Ok(handle),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(io::Error::other("namespace thread ended early")),
    }
}
