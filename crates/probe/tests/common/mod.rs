//! What the probe's root tests share: running code inside a test namespace.

use std::fs::File;
use std::path::{Path, PathBuf};

use testkit::netns::{Pair, Side};

/// Runs `f` on a thread inside namespace `path`; sockets it opens stay in that namespace.
pub(crate) fn in_netns<T: Send + 'static>(
    path: &Path,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let file = File::open(&path).expect("namespace file");
        nix::sched::setns(file, nix::sched::CloneFlags::CLONE_NEWNET).expect("setns");
        f()
    })
    .join()
    .expect("namespace thread")
}

/// The namespace file of `side` of `pair`.
pub(crate) fn ns_path(pair: &Pair, side: Side) -> PathBuf {
    Path::new("/run/netns").join(pair.name(side))
}
