//! The example file and the configuration guide name every key the schema has: a key added
//! without documentation fails here.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use steer5g_config::Config;

fn docs(name: &str) -> String {
    // The run's own manifest directory: a binary built in another checkout sharing the
    // build cache would otherwise read that checkout's files.
    let manifest =
        std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").into());
    let p = PathBuf::from(manifest).join("../../docs").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every `section.key` of the schema, the optional keys included.
fn keys() -> Vec<String> {
    let mut c = Config::default();
    // The optional keys, given a value so that they are serialised.
    c.ran.hn_public_key = Some("k".into());
    c.metrics.addr = Some("127.0.0.1:1".parse().unwrap());
    c.provisioning.addr = Some("127.0.0.1:1".parse().unwrap());
    c.provisioning.token_file = Some("t".into());
    c.log.filter = Some("info".into());
    let t: toml::Table = toml::from_str(&c.to_toml()).unwrap();
    let mut out = Vec::new();
    for (section, v) in t {
        for key in v.as_table().unwrap().keys() {
            out.push(format!("{section}.{key}"));
        }
    }
    out
}

#[test]
fn the_example_file_is_the_defaults_and_names_every_key() {
    let text = docs("steer5g.toml");
    assert_eq!(Config::from_toml(&text).unwrap(), Config::default());
    let mut section = String::new();
    let mut named = Vec::new();
    for line in text.lines() {
        let l = line.trim_start_matches('#').trim();
        if let Some(s) = l.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            section = s.to_owned();
        } else if let Some((k, _)) = l.split_once(" = ") {
            named.push(format!("{section}.{}", k.trim()));
        }
    }
    for k in keys() {
        assert!(named.contains(&k), "docs/steer5g.toml does not show {k}");
    }
}

#[test]
fn the_guide_explains_every_key() {
    let text = docs("CONFIGURATION.md");
    for k in keys() {
        let section = k.split('.').next().unwrap_or_default();
        assert!(
            text.contains(&format!("`{k}`")) || text.contains(&format!("`{section}.*`")),
            "docs/CONFIGURATION.md does not explain {k}"
        );
    }
}
