//! The embedded backend: one redb file under the data directory.
//!
//! Layout: table `subscribers` maps the SUPI (`&str`) to the record encoded by
//! [`Subscriber::encode_value`]; table `meta` holds `schema` = 1 so that a later release can
//! tell which layout it opens. Every write transaction commits with redb's default
//! `Durability::Immediate`: when a call returns, the data is on disk (this is what makes the
//! SQN high-water mark safe across a crash).

use std::path::Path;

use redb::{Database, ReadableTable, ReadableTableMetadata, TableDefinition};

use crate::backend::{check, claim_above, modified, StoreError, SubscriberStore};
use crate::sqn::{Claim, PersistRequest, SQN_MAX};
use crate::subscriber::Subscriber;

const SUBSCRIBERS: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("subscribers");
const META: TableDefinition<'static, &str, u64> = TableDefinition::new("meta");
const SCHEMA: u64 = 1;

/// File name of the store inside the data directory.
pub const STORE_FILE: &str = "subscribers.redb";

/// Subscribers in a redb database file.
#[derive(Debug)]
pub struct RedbStore {
    db: Database,
}

fn backend<E: std::fmt::Display>(e: E) -> StoreError {
    StoreError::Backend(e.to_string())
}

impl RedbStore {
    /// Opens the store at `path`, creating it if absent. Fails with [`StoreError::Busy`] if
    /// another process has it open.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        create_private(path)?;
        let db = Database::create(path).map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => {
                StoreError::Busy(path.display().to_string())
            }
            other => backend(other),
        })?;
        let txn = db.begin_write().map_err(backend)?;
        {
            let mut meta = txn.open_table(META).map_err(backend)?;
            let schema = meta.get("schema").map_err(backend)?.map(|v| v.value());
            match schema {
                None => {
                    meta.insert("schema", SCHEMA).map_err(backend)?;
                }
                Some(SCHEMA) => {}
                Some(other) => {
                    return Err(StoreError::Backend(format!(
                        "{}: schema {other}, this build reads schema {SCHEMA}",
                        path.display()
                    )))
                }
            }
            txn.open_table(SUBSCRIBERS).map_err(backend)?;
        }
        txn.commit().map_err(backend)?;
        Ok(RedbStore { db })
    }

    /// Opens (or creates) the store file inside `data_dir`.
    pub fn open_in(data_dir: &Path) -> Result<Self, StoreError> {
        Self::open(&data_dir.join(STORE_FILE))
    }

    /// Reads the stored SQN, applies `f` (old → (answer, new)), writes it back, all in one
    /// transaction.
    fn update_sqn<T>(
        &self,
        supi: &str,
        f: impl FnOnce(u64) -> Result<(T, u64), StoreError>,
    ) -> Result<T, StoreError> {
        let txn = self.db.begin_write().map_err(backend)?;
        let result = {
            let mut t = txn.open_table(SUBSCRIBERS).map_err(backend)?;
            let mut sub = match t.get(supi).map_err(backend)? {
                Some(v) => decode(supi, v.value())?,
                None => return Err(StoreError::NotFound(supi.to_string())),
            };
            let before = sub.sqn;
            let (answer, after) = f(before)?;
            if after != before {
                sub.sqn = after;
                t.insert(supi, sub.encode_value().as_slice())
                    .map_err(backend)?;
            }
            answer
        };
        txn.commit().map_err(backend)?;
        Ok(result)
    }
}

/// Creates the file empty with mode 0600 if it does not exist: it holds K and OPc, so it must
/// never exist readable by others, not even for the moment between creation and a chmod.
/// redb initialises an empty file as a new database.
fn create_private(path: &Path) -> Result<(), StoreError> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        opts.mode(0o600);
    }
    match opts.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(StoreError::Backend(format!("{}: {e}", path.display()))),
    }
}

fn decode(supi: &str, bytes: &[u8]) -> Result<Subscriber, StoreError> {
    Subscriber::decode_value(supi, bytes).map_err(|source| StoreError::Corrupt {
        supi: supi.to_string(),
        source,
    })
}

impl SubscriberStore for RedbStore {
    fn get(&self, supi: &str) -> Result<Option<Subscriber>, StoreError> {
        let txn = self.db.begin_read().map_err(backend)?;
        let t = txn.open_table(SUBSCRIBERS).map_err(backend)?;
        let v = t.get(supi).map_err(backend)?;
        v.map(|v| decode(supi, v.value())).transpose()
    }

    fn insert(&self, sub: &Subscriber) -> Result<(), StoreError> {
        check(sub)?;
        let txn = self.db.begin_write().map_err(backend)?;
        {
            let mut t = txn.open_table(SUBSCRIBERS).map_err(backend)?;
            if t.get(sub.supi.as_str()).map_err(backend)?.is_some() {
                return Err(StoreError::AlreadyExists(sub.supi.clone()));
            }
            t.insert(sub.supi.as_str(), sub.encode_value().as_slice())
                .map_err(backend)?;
        }
        txn.commit().map_err(backend)
    }

    fn put_batch(&self, subs: &[Subscriber]) -> Result<(), StoreError> {
        for s in subs {
            check(s)?;
        }
        let txn = self.db.begin_write().map_err(backend)?;
        {
            let mut t = txn.open_table(SUBSCRIBERS).map_err(backend)?;
            for s in subs {
                // Compare-and-max on SQN: re-importing a CSV must not rewind a live
                // subscriber. Insert first and look at what it replaced: one B-tree descent
                // for the common case (new SUPI, or SQN not lower).
                let old = t
                    .insert(s.supi.as_str(), s.encode_value().as_slice())
                    .map_err(backend)?
                    .map(|v| decode(&s.supi, v.value()).map(|o| o.sqn))
                    .transpose()?;
                if let Some(old) = old.filter(|o| *o > s.sqn) {
                    let mut s = s.clone();
                    s.sqn = old;
                    t.insert(s.supi.as_str(), s.encode_value().as_slice())
                        .map_err(backend)?;
                }
            }
        }
        txn.commit().map_err(backend)
    }

    fn modify(
        &self,
        supi: &str,
        change: &mut dyn FnMut(&mut Subscriber) -> Result<(), StoreError>,
    ) -> Result<Subscriber, StoreError> {
        // One write transaction: redb has one writer at a time, so the SQN persister's
        // compare-and-max cannot slip between the read and the write.
        let txn = self.db.begin_write().map_err(backend)?;
        let sub = {
            let mut t = txn.open_table(SUBSCRIBERS).map_err(backend)?;
            let old = match t.get(supi).map_err(backend)? {
                Some(v) => decode(supi, v.value())?,
                None => return Err(StoreError::NotFound(supi.to_string())),
            };
            let sub = modified(old, change)?;
            t.insert(supi, sub.encode_value().as_slice())
                .map_err(backend)?;
            sub
        };
        txn.commit().map_err(backend)?;
        Ok(sub)
    }

    fn delete(&self, supi: &str) -> Result<bool, StoreError> {
        let txn = self.db.begin_write().map_err(backend)?;
        let existed = {
            let mut t = txn.open_table(SUBSCRIBERS).map_err(backend)?;
            let old = t.remove(supi).map_err(backend)?;
            old.is_some()
        };
        txn.commit().map_err(backend)?;
        Ok(existed)
    }

    fn list(&self, after: Option<&str>, limit: usize) -> Result<Vec<Subscriber>, StoreError> {
        let txn = self.db.begin_read().map_err(backend)?;
        let t = txn.open_table(SUBSCRIBERS).map_err(backend)?;
        let range = match after {
            Some(a) => t
                .range::<&str>((std::ops::Bound::Excluded(a), std::ops::Bound::Unbounded))
                .map_err(backend)?,
            None => t.range::<&str>(..).map_err(backend)?,
        };
        let mut out = Vec::with_capacity(limit.min(1024));
        for entry in range.take(limit) {
            let (k, v) = entry.map_err(backend)?;
            out.push(decode(k.value(), v.value())?);
        }
        Ok(out)
    }

    fn count(&self) -> Result<u64, StoreError> {
        let txn = self.db.begin_read().map_err(backend)?;
        let t = txn.open_table(SUBSCRIBERS).map_err(backend)?;
        t.len().map_err(backend)
    }

    fn sqn_persist(&self, supi: &str, sqn: u64) -> Result<u64, StoreError> {
        let want = sqn.min(SQN_MAX);
        self.update_sqn(supi, |old| {
            let after = old.max(want);
            Ok((after, after))
        })
    }

    fn sqn_claim(&self, supi: &str, floor: u64, count: u64) -> Result<Claim, StoreError> {
        self.update_sqn(supi, |old| {
            let claim = claim_above(supi, old, floor, count)?;
            Ok((claim, claim.end))
        })
    }

    fn sqn_claim_batch(&self, batch: &[&PersistRequest]) -> Vec<Result<Claim, StoreError>> {
        // One write transaction, one commit (one sync) for the whole batch: the per-entry
        // outcome is known before the commit, and if the commit fails every entry fails,
        // so no caller is ever told a SQN is claimed when it is not.
        let run = || -> Result<Vec<Result<Claim, StoreError>>, StoreError> {
            let txn = self.db.begin_write().map_err(backend)?;
            let mut out = Vec::with_capacity(batch.len());
            {
                let mut t = txn.open_table(SUBSCRIBERS).map_err(backend)?;
                for p in batch {
                    let supi = p.supi.as_str();
                    let found = t
                        .get(supi)
                        .map_err(backend)?
                        .map(|v| decode(supi, v.value()));
                    let mut sub = match found {
                        Some(Ok(sub)) => sub,
                        Some(Err(e)) => {
                            out.push(Err(e));
                            continue;
                        }
                        None => {
                            out.push(Err(StoreError::NotFound(supi.to_string())));
                            continue;
                        }
                    };
                    match claim_above(supi, sub.sqn, p.floor, p.count) {
                        Ok(claim) => {
                            sub.sqn = claim.end;
                            t.insert(supi, sub.encode_value().as_slice())
                                .map_err(backend)?;
                            out.push(Ok(claim));
                        }
                        Err(e) => out.push(Err(e)),
                    }
                }
            }
            txn.commit().map_err(backend)?;
            Ok(out)
        };
        match run() {
            Ok(out) => out,
            Err(e) => {
                let msg = e.to_string();
                batch
                    .iter()
                    .map(|_| Err(StoreError::Backend(msg.clone())))
                    .collect()
            }
        }
    }
}
