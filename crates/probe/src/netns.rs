//! Resolving the filter's names: a network namespace given by name, path or inode, and an
//! interface name looked up inside that namespace.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::{procfs, Error};

/// A namespace as the user named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetnsSpec {
    /// An inode number: filterable, but interface names cannot be looked up in it.
    Inode(u32),
    /// A file that is the namespace: `/run/netns/NAME` or `/proc/PID/ns/net`.
    Path(PathBuf),
}

impl NetnsSpec {
    /// Digits are an inode, anything with a `/` a path, else a name under /run/netns.
    pub fn parse(s: &str) -> NetnsSpec {
        if let Ok(ino) = s.parse::<u32>() {
            NetnsSpec::Inode(ino)
        } else if s.contains('/') {
            NetnsSpec::Path(PathBuf::from(s))
        } else {
            NetnsSpec::Path(Path::new("/run/netns").join(s))
        }
    }

    /// Its inode.
    pub fn inode(&self) -> Result<u32, Error> {
        match self {
            NetnsSpec::Inode(i) => Ok(*i),
            NetnsSpec::Path(p) => procfs::netns_inode(p)
                .map_err(|e| Error::Filter(format!("network namespace {}: {e}", p.display()))),
        }
    }
}

/// The index of interface `name` inside the namespace at `netns` (this process's own when
/// `None`), looked up from a short-lived thread that joins it: setns moves only the calling
/// thread.
pub fn ifindex(netns: Option<&Path>, name: &str) -> Result<u32, Error> {
    let name = name.to_owned();
    let netns = netns.map(Path::to_path_buf);
    let lookup = move || -> Result<u32, Error> {
        if let Some(path) = &netns {
            let file = File::open(path)
                .map_err(|e| Error::Filter(format!("network namespace {}: {e}", path.display())))?;
            nix::sched::setns(file, nix::sched::CloneFlags::CLONE_NEWNET).map_err(|e| {
                Error::Filter(format!("joining network namespace {}: {e}", path.display()))
            })?;
        }
        nix::net::if_::if_nametoindex(name.as_str())
            .map_err(|e| Error::Filter(format!("interface {name}: {e}")))
    };
    std::thread::spawn(lookup)
        .join()
        .unwrap_or_else(|_| Err(Error::Filter("interface lookup thread panicked".to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        assert_eq!(
            NetnsSpec::parse("4026531840"),
            NetnsSpec::Inode(4_026_531_840)
        );
        assert_eq!(
            NetnsSpec::parse("/proc/1/ns/net"),
            NetnsSpec::Path("/proc/1/ns/net".into())
        );
        assert_eq!(
            NetnsSpec::parse("ran"),
            NetnsSpec::Path("/run/netns/ran".into())
        );
    }

    #[test]
    fn loopback_in_our_own_namespace() {
        assert_eq!(ifindex(None, "lo").expect("lo exists"), 1);
        assert!(ifindex(None, "no-such-if0").is_err());
        assert!(NetnsSpec::parse("/proc/self/ns/net").inode().is_ok());
        assert!(NetnsSpec::parse("/nonexistent/ns").inode().is_err());
    }
}
