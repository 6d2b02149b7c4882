#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Replays the saved fuzz corpus through the same harnesses as the cargo-fuzz targets, so that
//! every input a fuzzer kept (and every crash it once found, once saved there) is checked on
//! stable Rust in every test run.

use std::path::PathBuf;

fn corpus_dir(target: &str) -> PathBuf {
    PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_owned()),
    )
    .join("../../fuzz/corpus")
    .join(target)
}

#[test]
fn every_target_has_a_saved_corpus_and_it_replays_cleanly() {
    for (name, harness) in fuzz_harness::TARGETS {
        let dir = corpus_dir(name);
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("corpus {} missing: {e}", dir.display()));
        let mut n = 0;
        for entry in entries {
            let path = entry.expect("corpus entry").path();
            let data = std::fs::read(&path).expect("corpus file");
            harness(&data);
            n += 1;
        }
        assert!(n > 0, "corpus of {name} is empty");
        eprintln!("{name}: replayed {n} inputs");
    }
}

#[test]
fn fuzz_targets_match_the_harness_list() {
    let dir = PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_owned()),
    )
    .join("../../fuzz/fuzz_targets");
    for (name, _) in fuzz_harness::TARGETS {
        assert!(
            dir.join(format!("{name}.rs")).exists(),
            "no fuzz target for {name}"
        );
    }
}

/// Cheap stand-in for fuzzing on stable: mutations of the saved corpus from a fixed seed.
#[test]
fn mutated_corpus_never_panics() {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (name, harness) in fuzz_harness::TARGETS {
        let seeds: Vec<Vec<u8>> = std::fs::read_dir(corpus_dir(name))
            .expect("corpus")
            .map(|e| std::fs::read(e.expect("entry").path()).expect("file"))
            .collect();
        for seed in &seeds {
            for _ in 0..300 {
                let mut d = seed.clone();
                let flips = 1 + next() % 4;
                for _ in 0..flips {
                    if d.is_empty() {
                        break;
                    }
                    let i = (next() as usize) % d.len();
                    match next() % 3 {
                        0 => d[i] ^= 1 << (next() % 8),
                        1 => d[i] = next() as u8,
                        _ => d.truncate(i),
                    }
                }
                harness(&d);
            }
        }
    }
}

/// The seeds saved for the UPF's refusals reach the branches they were written for: a
/// session of another association, requests from no association, association requests for
/// another peer's Node ID, presence rules and transport addresses, the session limit.
#[test]
fn upf_seeds_reach_their_branches() {
    let stats = |name: &str| {
        let data = std::fs::read(corpus_dir("upf_node").join(name)).expect("seed");
        fuzz_harness::upf_node_stats(&data)
    };
    let s = stats("cross_association_requests");
    assert_eq!(s.session_requests_foreign, 2, "{s:?}");
    assert_eq!(s.causes_sent.get(&65), Some(&2), "{s:?}");
    let s = stats("stranger_and_foreign_association_requests");
    assert_eq!(s.session_requests_unassociated, 3, "{s:?}");
    assert_eq!(s.association_requests_foreign, 3, "{s:?}");
    let s = stats("conditional_ies_missing");
    assert_eq!(s.causes_sent.get(&67), Some(&4), "{s:?}");
    let s = stats("outer_header_creation_addresses");
    assert_eq!(s.causes_sent.get(&69), Some(&5), "{s:?}");
    let s = stats("session_limit");
    assert_eq!(s.sessions_refused_limit, 2, "{s:?}");
}

/// The SMF's N4 seeds reach what they are named for.
#[test]
fn smf_seeds_reach_their_branches() {
    let stats = |name: &str| {
        let data = std::fs::read(corpus_dir("smf_n4").join(name)).expect("seed");
        fuzz_harness::smf_n4_stats(&data)
    };
    let s = stats("all_delivered");
    assert_eq!((s.created, s.activated, s.released), (3, 3, 3), "{s:?}");
    let s = stats("establishment_without_node_id");
    assert_eq!((s.pfcp_unparsed, s.abandoned_deleted), (1, 1), "{s:?}");
    let s = stats("establishment_without_created_pdr");
    assert_eq!((s.pfcp_unparsed, s.abandoned_deleted), (0, 1), "{s:?}");
    let s = stats("establishment_late");
    assert_eq!(
        (s.created, s.rejected, s.abandoned_deleted),
        (2, 1, 1),
        "{s:?}"
    );
    let s = stats("establishment_lost");
    assert_eq!(
        (s.created, s.rejected, s.abandoned_deleted),
        (2, 1, 0),
        "{s:?}"
    );
    let s = stats("modification_without_cause");
    assert_eq!((s.pfcp_unparsed, s.activated), (1, 2), "{s:?}");
    // Shorter than its header says: nothing in it can be trusted, the request runs out.
    let s = stats("modification_truncated");
    assert_eq!(
        (s.stray_pfcp, s.pfcp_unparsed, s.activated),
        (1, 0, 2),
        "{s:?}"
    );
    let s = stats("deletion_twice_and_undo_lost");
    assert_eq!((s.stray_pfcp, s.abandoned_delete_failed), (1, 1), "{s:?}");
}

/// The overload messages are in the seeds of every target that reads them, so that the
/// fuzzers start from their valid encodings: OVERLOAD START and STOP (TS 38.413 §9.2.6.7-8)
/// for the NGAP decoder, the peek and the AMF's N2 side, REGISTRATION REJECT #22 with
/// T3346 (TS 24.501 §8.2.9) for the NAS decoder.
#[test]
fn the_corpus_seeds_the_overload_messages() {
    use proto::nas::{NasMessage, RegistrationReject, TimerValue};
    use proto::ngap::{OverloadAction, OverloadStart, OverloadStop};
    let start = OverloadStart {
        response: Some(OverloadAction::RejectRrcSignalling),
        traffic_load_reduction: Some(50),
    }
    .encode()
    .unwrap();
    let stop = OverloadStop.encode().unwrap();
    let reject: NasMessage = RegistrationReject::congestion(TimerValue::Seconds(30)).into();
    let reject = reject.encode().unwrap();
    let has = |target: &str, seed: &[u8]| {
        std::fs::read_dir(corpus_dir(target))
            .expect("corpus")
            .any(|e| std::fs::read(e.expect("entry").path()).expect("file") == seed)
    };
    for target in ["ngap_decode", "ngap_peek", "amf_n2"] {
        assert!(has(target, &start), "{target}: no OVERLOAD START seed");
        assert!(has(target, &stop), "{target}: no OVERLOAD STOP seed");
    }
    assert!(
        has("nas_decode", &reject),
        "nas_decode: no REGISTRATION REJECT #22 with T3346 seed"
    );
}
