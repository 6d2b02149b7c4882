//! The UDR's subscriber store: who the subscribers are, their long-term secrets, their SQN,
//! and what they may use (slices, DNNs, AMBR); plus the home network's SUCI key file that
//! lives beside it in the data directory.
//!
//! # Shape
//!
//! [`SubscriberStore`] is the interface the UDM/UDR and the CLI use. It speaks only in
//! [`Subscriber`] records and SUPIs, with no engine type or transaction handle in sight.
//! [`RedbStore`] (embedded, the default) and `store_pg::PgStore` (PostgreSQL, shared by
//! several instances, in a crate of its own so that the sans-IO NFs link no runtime)
//! implement it; [`MemStore`] implements it in memory for tests.
//!
//! # Engine: redb
//!
//! The embedded default is [`RedbStore`], one [redb](https://www.redb.org) file
//! (`<data-dir>/subscribers.redb`). Why redb:
//! - pure Rust: no C toolchain or system library (unlike SQLite/RocksDB), so the single
//!   `steer5g` binary stays self-contained and builds as fast as the rest of the workspace;
//! - ACID with durable commits (copy-on-write B-trees, checksummed, crash-safe): the SQN
//!   high-water mark must survive a power cut, and a 100k-row import is one transaction that
//!   lands whole or not at all;
//! - a plain ordered key-value map, which is all the UDR needs here (lookups by SUPI, ordered
//!   pagination), with none of the compaction tuning an LSM (sled, fjall) asks for, and stable
//!   (sled's on-disk format is not);
//! - one writer at a time is no limit: the hot path reads (one read transaction per
//!   authentication, lock-free with respect to the writer), and SQN writes are batched off it
//!   ([`sqn`]).
//!
//! Version 2.6 is used because it builds with the workspace's rust-version.
//!
//! # SQN
//!
//! See [`sqn`]: one UDM shard owns each subscriber's SQN in memory ([`SqnShard`]) and keeps a
//! durable high-water mark ahead of what it hands out, so the SQN never goes backwards across a
//! restart.
//!
//! # Secrets
//!
//! K, OP/OPc and the home network private keys never appear in `Debug` output or in errors.

pub mod backend;
pub mod csv;
pub mod generate;
pub mod hn_keys;
pub mod hn_public;
pub mod record;
pub mod redb_store;
pub mod sqn;
pub mod subscriber;
pub mod udm_state;

pub use backend::{MemStore, StoreError, SubscriberStore};
pub use hn_keys::{HnKey, HnKeys, KeyFileError, Profile, HN_KEY_FILE};
pub use hn_public::{HnPublicKey, HnPublicKeys};
pub use record::SubscriberRecord;
pub use redb_store::{RedbStore, STORE_FILE};
pub use sqn::{SqnError, SqnShard};
pub use subscriber::{FieldError, OpOrOpc, Snssai, Subscriber};
pub use udm_state::{StateField, StateWrite, UdmState};
