//! `steer5g bench store` at a tiny size (a debug build: the figures mean nothing, the plumbing
//! is what is checked): its own PostgreSQL server, one JSON object, every case ok, the
//! database's CPU measured in the PostgreSQL cases and not in the embedded one, the CSV and
//! SVG written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

#[test]
fn bench_store_smoke() {
    if !store_pg::server::available() {
        testkit::privilege::skip_missing_tool("PostgreSQL (postgresql-15)");
        return;
    }
    let out_dir = tempfile::tempdir().unwrap();
    let v = common::bench_json(
        &[
            "bench",
            "store",
            "--ues",
            "8",
            "--rounds",
            "2",
            "--warmup-ues",
            "2",
            "--concurrency",
            "4",
        ],
        out_dir.path(),
    );
    assert_eq!(v["scenario"], "store");
    let cases = v["cases"].as_array().unwrap();
    let labels: Vec<&str> = cases.iter().map(|c| c["case"].as_str().unwrap()).collect();
    assert_eq!(labels, ["embedded", "postgres", "postgres x2"]);
    for c in cases {
        assert_eq!(c["registrations"], 16, "{c}");
        assert_eq!(c["failed"], 0, "{c}");
        assert!(
            c["core_cpu_us_per_registration"].as_f64().unwrap() > 0.0,
            "{c}"
        );
        let db = c["db_cpu_us_per_registration"].as_f64().unwrap();
        if c["case"] == "embedded" {
            assert_eq!(db, 0.0, "{c}");
        } else {
            assert!(db > 0.0, "the database server's CPU was measured: {c}");
        }
    }
    assert!(v["postgres_over_embedded"].as_f64().unwrap() > 0.0);
    for f in ["store.json", "store.csv", "store.svg"] {
        let p = out_dir.path().join(f);
        assert!(std::fs::metadata(&p).unwrap().len() > 0, "{}", p.display());
    }
    let csv = std::fs::read_to_string(out_dir.path().join("store.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4, "{csv}");
}
