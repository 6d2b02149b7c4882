//! The Kubernetes manifests of `contrib/k8s` (PostgreSQL and N `core` instances sharing it;
//! they cannot run here): `yamllint` passes, and what they tell `steer5g` is what `steer5g`
//! takes: every subcommand and flag (asked of this build's `--help`), every `STEER5G_*` or
//! PostgreSQL environment variable (documented in docs/CONFIGURATION.md), the configuration
//! file of the ConfigMap (parsed and validated), the ports against that configuration and the
//! flags, every Service port against a container port, the store URL against the PostgreSQL
//! Service, and every Secret, ConfigMap and volume a pod mounts against what is defined.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_yaml_ng::Value;

fn dir() -> PathBuf {
    Path::new(
        &std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_owned()),
    )
    .join("../../contrib/k8s")
}

/// Every document of every manifest, with its file's name.
fn documents() -> Vec<(String, Value)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    let mut docs = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        for d in serde_yaml_ng::Deserializer::from_str(&text) {
            let v = <Value as serde::Deserialize>::deserialize(d)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            if !v.is_null() {
                docs.push((name.clone(), v));
            }
        }
    }
    docs
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

fn kind<'a>(docs: &'a [(String, Value)], k: &str) -> Vec<&'a Value> {
    docs.iter()
        .filter(|(_, d)| s(&d["kind"]) == k)
        .map(|(_, d)| d)
        .collect()
}

/// Pod specs of the workloads (StatefulSets, Jobs), by workload name.
fn pods(docs: &[(String, Value)]) -> BTreeMap<String, &Value> {
    docs.iter()
        .filter(|(_, d)| matches!(s(&d["kind"]), "StatefulSet" | "Job" | "Deployment"))
        .map(|(_, d)| {
            (
                s(&d["metadata"]["name"]).to_owned(),
                &d["spec"]["template"]["spec"],
            )
        })
        .collect()
}

fn seq(v: &Value) -> Vec<Value> {
    v.as_sequence().cloned().unwrap_or_default()
}

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_steer5g"))
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?} --help");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn yamllint_passes() {
    let Ok(v) = Command::new("yamllint").arg("--version").output() else {
        testkit::privilege::skip_missing_tool("yamllint");
        return;
    };
    assert!(v.status.success());
    let out = Command::new("yamllint")
        .args([
            "--strict",
            "-d",
            "{extends: default, rules: {line-length: {max: 100}}}",
        ])
        .arg(dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The manifests define a Service `host` with port `port` (a URL a workload of `name` uses).
fn assert_service_port(docs: &[(String, Value)], name: &str, host: &str, port: &str) {
    let svc = kind(docs, "Service")
        .into_iter()
        .find(|v| s(&v["metadata"]["name"]) == host)
        .unwrap_or_else(|| panic!("{name}: no Service {host}"));
    assert!(
        seq(&svc["spec"]["ports"]).iter().any(|p| p["port"]
            .as_u64()
            .map(|n| n.to_string())
            .as_deref()
            == Some(port)),
        "{name}: Service {host} has no port {port}"
    );
}

#[test]
fn every_command_flag_and_variable_is_one_steer5g_takes() {
    let docs = documents();
    let configuration = std::fs::read_to_string(dir().join("../../docs/CONFIGURATION.md")).unwrap();
    let mut checked = 0;
    for (name, pod) in pods(&docs) {
        for c in seq(&pod["containers"]) {
            if seq(&c["command"]).first().map(s) != Some("steer5g") {
                continue;
            }
            checked += 1;
            let args: Vec<String> = seq(&c["args"]).iter().map(|a| s(a).to_owned()).collect();
            // The subcommand: the words before the first flag (`core`, `subscriber import`).
            let sub: Vec<&str> = args
                .iter()
                .take_while(|a| !a.starts_with('-'))
                .map(String::as_str)
                .take(2)
                .collect();
            let sub: Vec<&str> = if sub.first() == Some(&"subscriber") {
                sub
            } else {
                sub.into_iter().take(1).collect()
            };
            let text = help(&sub);
            for flag in args.iter().filter(|a| a.starts_with("--")) {
                assert!(
                    text.contains(&format!("{flag} ")) || text.contains(&format!("{flag}\n")),
                    "{name}: {flag} is not a flag of steer5g {}",
                    sub.join(" ")
                );
            }
            let env: Vec<String> = seq(&c["env"])
                .iter()
                .map(|e| s(&e["name"]).to_owned())
                .collect();
            for e in &env {
                let used_in_args = args.iter().any(|a| a.contains(&format!("$({e})")));
                assert!(
                    used_in_args || configuration.contains(&format!("`{e}`")),
                    "{name}: environment variable {e} is neither documented in \
                     docs/CONFIGURATION.md nor used in the arguments"
                );
            }
            for a in &args {
                if let Some(var) = a.strip_prefix("$(").and_then(|r| r.split(')').next()) {
                    assert!(env.iter().any(|e| e == var), "{name}: $({var}) is not set");
                }
            }
            // A store URL is PostgreSQL's, at the Service the manifests define, on its port.
            if let Some(url) = args.iter().skip_while(|a| *a != "--store").nth(1) {
                assert!(steer5g_config::services::is_store_url(url), "{name}: {url}");
                let host_port = url
                    .split_once('@')
                    .map_or("", |(_, r)| r.split('/').next().unwrap_or(""));
                let (host, port) = host_port.split_once(':').unwrap();
                assert_service_port(&docs, &name, host, port);
                assert!(
                    env.iter().any(|e| e == "PGPASSWORD"),
                    "{name}: no PGPASSWORD"
                );
            }
            // An NRF URL names the NRF's Service of the manifests, on its port.
            if let Some(url) = args.iter().skip_while(|a| *a != "--nrf").nth(1) {
                let (host, port) = url
                    .strip_prefix("http://")
                    .and_then(|r| r.split_once(':'))
                    .unwrap_or_else(|| panic!("{name}: --nrf {url}"));
                assert_service_port(&docs, &name, host, port);
                let nrf = pods(&docs)
                    .into_iter()
                    .find(|(_, p)| {
                        seq(&p["containers"])
                            .iter()
                            .any(|c| seq(&c["args"]).first().map(s) == Some("nrf"))
                    })
                    .unwrap_or_else(|| panic!("{name}: no NRF workload"));
                let nrf_args: Vec<String> = seq(&seq(&nrf.1["containers"])[0]["args"])
                    .iter()
                    .map(|a| s(a).to_owned())
                    .collect();
                let listen = nrf_args
                    .iter()
                    .skip_while(|a| *a != "--sbi-addr")
                    .nth(1)
                    .unwrap();
                assert!(
                    listen.ends_with(&format!(":{port}")),
                    "the NRF listens on {listen}"
                );
            }
        }
    }
    assert!(checked >= 3, "the NRF, the core and the import job");
}

#[test]
fn ports_configuration_and_volumes_agree() {
    let docs = documents();
    // The configuration file the cores read parses and validates.
    let maps = kind(&docs, "ConfigMap");
    let toml = maps
        .iter()
        .find_map(|m| m["data"]["steer5g.toml"].as_str())
        .expect("the ConfigMap holds steer5g.toml");
    let cfg = steer5g_config::Config::from_toml(toml).unwrap();
    cfg.validate().unwrap();
    let pods = pods(&docs);
    let core = pods["steer5g-core"];
    let c = &seq(&core["containers"])[0];
    let ports: BTreeMap<String, (u64, String)> = seq(&c["ports"])
        .iter()
        .map(|p| {
            (
                s(&p["name"]).to_owned(),
                (
                    p["containerPort"].as_u64().unwrap(),
                    s(&p["protocol"]).to_owned(),
                ),
            )
        })
        .collect();
    // N2 over UDP at the configuration's port, the metrics at --metrics-addr's.
    assert_eq!(cfg.n2.transports, [steer5g_config::Transport::Udp]);
    assert_eq!(
        ports["n2-udp"],
        (u64::from(cfg.n2.udp_port), "UDP".to_owned())
    );
    let args: Vec<String> = seq(&c["args"]).iter().map(|a| s(a).to_owned()).collect();
    let metrics = args
        .iter()
        .skip_while(|a| *a != "--metrics-addr")
        .nth(1)
        .unwrap();
    assert_eq!(
        metrics.rsplit(':').next().unwrap(),
        ports["metrics"].0.to_string()
    );
    // The configuration file is mounted where --config says.
    let config_arg = args.iter().skip_while(|a| *a != "--config").nth(1).unwrap();
    let mounts = seq(&c["volumeMounts"]);
    assert!(mounts
        .iter()
        .any(|m| config_arg.starts_with(s(&m["mountPath"])) && s(&m["name"]) == "config"));
    // The key file is mounted where the data directory (from the configuration) has it.
    let key_file = cfg.hn_key_file(&cfg.store.data_dir);
    assert!(
        mounts
            .iter()
            .any(|m| Path::new(s(&m["mountPath"])) == key_file),
        "{}",
        key_file.display()
    );

    // Every Service port targets a named port of a container its selector picks.
    for svc in kind(&docs, "Service") {
        let app = s(&svc["spec"]["selector"]["app.kubernetes.io/name"]);
        let (_, pod) = documents_pod(&docs, app);
        let names: Vec<String> = seq(&pod["containers"])
            .iter()
            .flat_map(|c| seq(&c["ports"]))
            .map(|p| s(&p["name"]).to_owned())
            .collect();
        for p in seq(&svc["spec"]["ports"]) {
            assert!(
                names.iter().any(|n| n == s(&p["targetPort"])),
                "Service {} targets {}",
                s(&svc["metadata"]["name"]),
                s(&p["targetPort"])
            );
        }
    }

    // Every volume a container mounts is one its pod defines; every ConfigMap a pod uses is
    // defined here or documented in the manifests' comments as the operator's to create.
    let text: String = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    for (name, pod) in &pods {
        // A pod's volumes, and its StatefulSet's claim templates.
        let claims = docs
            .iter()
            .find(|(_, d)| s(&d["metadata"]["name"]) == name && s(&d["kind"]) == "StatefulSet")
            .map(|(_, d)| seq(&d["spec"]["volumeClaimTemplates"]))
            .unwrap_or_default();
        let volumes: Vec<String> = seq(&pod["volumes"])
            .iter()
            .chain(claims.iter().map(|c| &c["metadata"]))
            .map(|v| s(&v["name"]).to_owned())
            .collect();
        for c in seq(&pod["containers"]) {
            for m in seq(&c["volumeMounts"]) {
                assert!(
                    volumes.iter().any(|v| v == s(&m["name"])),
                    "{name}: {:?}",
                    m
                );
            }
        }
        for v in seq(&pod["volumes"]) {
            for (what, key) in [
                ("configmap", &v["configMap"]["name"]),
                ("secret", &v["secret"]["secretName"]),
            ] {
                let Some(wanted) = key.as_str() else { continue };
                let defined = maps.iter().any(|m| s(&m["metadata"]["name"]) == wanted);
                assert!(
                    defined
                        || text.contains(&format!("create {what} generic {wanted}"))
                        || text.contains(&format!("create {what} {wanted}")),
                    "{name}: {what} {wanted} is neither defined nor documented"
                );
            }
        }
    }
}

/// The pod spec of the workload labelled `app`.
fn documents_pod<'a>(docs: &'a [(String, Value)], app: &str) -> (&'a str, &'a Value) {
    docs.iter()
        .find(|(_, d)| {
            matches!(s(&d["kind"]), "StatefulSet" | "Job" | "Deployment")
                && s(&d["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"]) == app
        })
        .map(|(f, d)| (f.as_str(), &d["spec"]["template"]["spec"]))
        .unwrap_or_else(|| panic!("no workload labelled {app}"))
}
