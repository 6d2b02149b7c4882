//! Test harness: validates JSON bodies against the 3GPP OpenAPI 3.0 documents in
//! `../shared/openapi/` (relative to the workspace root).
//!
//! The YAML is read with serde_norway (libyaml's grammar, which accepts the 3GPP files as
//! published; yaml-rust2 refuses two of them) and turned into `serde_json::Value`s; the OpenAPI 3.0
//! schema dialect is rewritten into JSON Schema draft 4 where the two differ (`nullable`); and
//! `jsonschema` resolves `$ref`s within a document and across documents
//! (`TS29571_CommonData.yaml#/components/schemas/Supi`) in a registry that holds every
//! document reachable from the one under test, each under `file:///openapi/<name>`.
//! A missing directory is a test failure in CI and a one-line skip elsewhere ([`present`]).

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code, unreachable_pub)]

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Number, Value};
use serde_norway::Value as YamlValue;

/// Base URI under which the documents are served to the validator.
const BASE: &str = "file:///openapi/";

/// Where the documents are looked for: `STEER5G_OPENAPI_DIR` if set, else
/// `../shared/openapi` beside the workspace. They are not in the repository: the 3GPP files
/// are (c) the 3GPP Organizational Partners, published with TS 29.5xx Release 18 (December
/// 2023); fetch them from 3GPP's forge (`5G_APIs`, tag for Rel-18) into that folder.
pub fn openapi_location() -> PathBuf {
    match std::env::var_os("STEER5G_OPENAPI_DIR") {
        Some(d) => PathBuf::from(d),
        // The package directory as cargo gives it when running the test, not the one the
        // binary was compiled in: a build cache shared between checkouts reuses binaries
        // whose compile-time path is another checkout's.
        None => Path::new(
            &std::env::var("CARGO_MANIFEST_DIR")
                .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_owned()),
        )
        .join("../../../shared/openapi"),
    }
}

/// Whether the documents are there, for a test about to use them. Without them the test is
/// skipped with one line naming it and what is missing, except in CI (`CI` set), where a
/// missing folder fails the test: there these tests must not pass vacuously.
pub fn present(test: &str) -> bool {
    let dir = openapi_location();
    if dir.join("TS29571_CommonData.yaml").is_file() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        checked_dir(dir.clone());
    }
    // Straight to the process's stderr, past the test harness's capture, so that the skip
    // shows in a normal `cargo test` run.
    let _ = writeln!(
        std::io::stderr(),
        "skipped {test}: the 3GPP OpenAPI documents are not at {} (set STEER5G_OPENAPI_DIR)",
        dir.display()
    );
    false
}

/// The OpenAPI directory. Panics (fails the test) if it is absent: call [`present`] first.
pub fn openapi_dir() -> PathBuf {
    checked_dir(openapi_location())
}

/// `dir` if it holds the OpenAPI set; a panic naming it otherwise.
pub fn checked_dir(dir: PathBuf) -> PathBuf {
    assert!(
        dir.join("TS29571_CommonData.yaml").is_file(),
        "OpenAPI documents not found at {} (expected ../shared/openapi beside the workspace, \
         or STEER5G_OPENAPI_DIR)",
        dir.display()
    );
    dir
}

/// Loads one document as JSON, with the OpenAPI→JSON Schema rewrite applied and object
/// schemas closed (see [`close_objects`]).
pub fn load(file: &str) -> Value {
    let mut v = load_open(file);
    close_objects(&mut v, false);
    v
}

/// Loads one document as JSON with the OpenAPI→JSON Schema rewrite only: object schemas stay
/// open, as the spec has them, for judging what a peer may send.
pub fn load_open(file: &str) -> Value {
    let path = openapi_dir().join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let doc: serde_norway::Value =
        serde_norway::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    let mut v = yaml_to_json(&doc);
    openapi_to_json_schema(&mut v);
    v
}

/// Makes every object schema that lists `properties` refuse members it does not list
/// (`additionalProperties: false`), unless it says otherwise or sits in an `allOf` (where the
/// other branches may declare the rest).
///
/// The 3GPP schemas are open for forward compatibility, which would let a misspelt optional
/// member of ours pass unnoticed; closed, the tests catch it. This is stricter than the spec on
/// purpose and only for our own bodies.
fn close_objects(v: &mut Value, in_all_of: bool) {
    match v {
        Value::Array(a) => a.iter_mut().for_each(|c| close_objects(c, in_all_of)),
        Value::Object(m) => {
            let is_schema_with_props = matches!(m.get("properties"), Some(Value::Object(_)));
            if is_schema_with_props && !in_all_of && !m.contains_key("additionalProperties") {
                m.insert("additionalProperties".into(), Value::Bool(false));
            }
            for (k, c) in m.iter_mut() {
                match k.as_str() {
                    "allOf" => close_objects(c, true),
                    // The map of member schemas: each value is a fresh schema.
                    "properties" => {
                        if let Value::Object(props) = c {
                            props.values_mut().for_each(|p| close_objects(p, false));
                        }
                    }
                    _ => close_objects(c, false),
                }
            }
        }
        _ => {}
    }
}

fn yaml_to_json(y: &YamlValue) -> Value {
    match y {
        YamlValue::Null => Value::Null,
        YamlValue::Bool(b) => Value::Bool(*b),
        YamlValue::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::Number(i.into())
            } else if let Some(u) = n.as_u64() {
                Value::Number(u.into())
            } else {
                n.as_f64()
                    .and_then(Number::from_f64)
                    .map_or(Value::Null, Value::Number)
            }
        }
        YamlValue::String(s) => Value::String(s.clone()),
        YamlValue::Sequence(a) => Value::Array(a.iter().map(yaml_to_json).collect()),
        YamlValue::Mapping(h) => {
            let mut m = Map::new();
            for (k, v) in h {
                // Response codes may be unquoted (`200:`): keys become strings as in JSON.
                let key = match k {
                    YamlValue::String(s) => s.clone(),
                    YamlValue::Number(n) => n.to_string(),
                    YamlValue::Bool(b) => b.to_string(),
                    other => panic!("unsupported YAML key {other:?}"),
                };
                m.insert(key, yaml_to_json(v));
            }
            Value::Object(m)
        }
        YamlValue::Tagged(t) => yaml_to_json(&t.value),
    }
}

/// Rewrites OpenAPI 3.0 schema objects into JSON Schema draft 4, in place, everywhere in the
/// document (schemas sit under components, paths, responses...):
///
/// - `nullable: true` (OpenAPI 3.0.3 §4.7.24.1) has no JSON Schema counterpart: with a `type`
///   it becomes `type: [t, "null"]` (and `null` joins an `enum`); without one (a `$ref`,
///   `allOf`, `anyOf`...) the schema becomes `anyOf: [schema, {type: null}]`.
///
/// Everything else the registration schemas use (`type`, `properties`, `required`,
/// `additionalProperties`, `items`, `minItems`, `pattern`, `minimum`/`maximum`, `enum`,
/// `oneOf`/`anyOf`/`allOf`, `$ref`, `format`) means the same in both; OpenAPI-only
/// annotations (`discriminator`, `readOnly`, `example`, ...) are unknown keywords to the
/// validator and ignored, as OpenAPI would for validation.
pub fn openapi_to_json_schema(v: &mut Value) {
    match v {
        Value::Array(a) => a.iter_mut().for_each(openapi_to_json_schema),
        Value::Object(m) => {
            for child in m.values_mut() {
                openapi_to_json_schema(child);
            }
            if m.get("nullable") == Some(&Value::Bool(true)) {
                m.remove("nullable");
                match m.get("type").cloned() {
                    Some(Value::String(t)) => {
                        m.insert("type".into(), serde_json::json!([t, "null"]));
                        if let Some(Value::Array(e)) = m.get_mut("enum") {
                            if !e.contains(&Value::Null) {
                                e.push(Value::Null);
                            }
                        }
                    }
                    _ => {
                        let inner = Value::Object(std::mem::take(m));
                        m.insert("anyOf".into(), serde_json::json!([inner, {"type": "null"}]));
                    }
                }
            } else if m.get("nullable") == Some(&Value::Bool(false)) {
                m.remove("nullable");
            }
        }
        _ => {}
    }
}

/// Every document holding a schema reachable from `file#pointer` through `$ref`s.
///
/// The walk goes schema by schema rather than file by file: the 3GPP set references widely,
/// and one file in it (TS32291, a tab in its indentation) is not even valid YAML, so only
/// documents our schemas really reach are loaded.
fn closure(file: &str, pointer: &str) -> Vec<String> {
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r.clone());
                }
                m.values().for_each(|c| refs(c, out));
            }
            Value::Array(a) => a.iter().for_each(|c| refs(c, out)),
            _ => {}
        }
    }
    let mut files = vec![file.to_owned()];
    let mut seen = vec![(file.to_owned(), pointer.to_owned())];
    let mut i = 0;
    while let Some((f, p)) = seen.get(i).cloned() {
        i += 1;
        let doc = cached(&f);
        let node = doc
            .pointer(&p)
            .unwrap_or_else(|| panic!("dangling reference {f}#{p}"));
        let mut found = Vec::new();
        refs(node, &mut found);
        for r in found {
            let (rf, rp) = r.split_once('#').unwrap_or((r.as_str(), ""));
            let rf = if rf.is_empty() {
                f.clone()
            } else {
                rf.to_owned()
            };
            assert!(
                !rf.contains('/') && rf.ends_with(".yaml"),
                "{f} references {r}, outside the OpenAPI set"
            );
            if !files.contains(&rf) {
                files.push(rf.clone());
            }
            let key = (rf, rp.to_owned());
            if !seen.contains(&key) {
                seen.push(key);
            }
        }
    }
    files
}

/// [`load`], memoised across the tests of one binary (CommonData alone is large).
pub fn cached(file: &str) -> Value {
    memo(file, false)
}

/// [`load_open`], memoised.
pub fn cached_open(file: &str) -> Value {
    memo(file, true)
}

fn memo(file: &str, open: bool) -> Value {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static DOCS: OnceLock<Mutex<HashMap<(String, bool), Value>>> = OnceLock::new();
    let docs = DOCS.get_or_init(Default::default);
    let key = (file.to_owned(), open);
    if let Some(v) = docs.lock().unwrap().get(&key) {
        return v.clone();
    }
    let v = if open { load_open(file) } else { load(file) };
    docs.lock().unwrap().insert(key, v.clone());
    v
}

/// A compiled validator for `pointer` (a JSON pointer such as
/// `/components/schemas/AuthenticationInfo`) in `file`.
pub struct SchemaValidator {
    what: String,
    validator: jsonschema::Validator,
}

impl SchemaValidator {
    /// Compiles the schema at `pointer` in `file`, object schemas closed.
    pub fn new(file: &str, pointer: &str) -> Self {
        Self::build(file, pointer, false)
    }

    /// Compiles the schema at `pointer` in `file` as the spec has it (object schemas open):
    /// the judge of what a peer may send.
    pub fn open(file: &str, pointer: &str) -> Self {
        Self::build(file, pointer, true)
    }

    /// [`SchemaValidator::open`] for a named schema under `components/schemas`.
    pub fn open_component(file: &str, name: &str) -> Self {
        Self::open(file, &format!("/components/schemas/{name}"))
    }

    fn build(file: &str, pointer: &str, open: bool) -> Self {
        let doc_of = |f: &str| if open { cached_open(f) } else { cached(f) };
        // Fail clearly if the pointer does not exist (a typo would otherwise surface as a
        // resolution error deep inside jsonschema).
        let doc = doc_of(file);
        assert!(
            doc.pointer(pointer).is_some(),
            "{file}#{pointer} does not exist"
        );
        // In a URI fragment the pointer is percent-encoded (RFC 6901 §6); path keys carry
        // `{var}` braces.
        let fragment = pointer.replace('{', "%7B").replace('}', "%7D");
        let root = serde_json::json!({ "$ref": format!("{BASE}{file}#{fragment}") });
        // Every reachable document goes into the registry up front: jsonschema resolves
        // references it meets while compiling only against what the registry holds.
        let registry = jsonschema::Registry::new()
            .draft(jsonschema::Draft::Draft4)
            .extend(
                closure(file, pointer)
                    .into_iter()
                    .map(|f| (format!("{BASE}{f}"), doc_of(&f))),
            )
            .and_then(|b| b.prepare())
            .unwrap_or_else(|e| panic!("registry for {file}: {e}"));
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft4)
            .with_registry(&registry)
            .build(&root)
            .unwrap_or_else(|e| panic!("compiling {file}#{pointer}: {e}"));
        SchemaValidator {
            what: format!("{file}#{pointer}"),
            validator,
        }
    }

    /// The named schema under `components/schemas`.
    pub fn component(file: &str, name: &str) -> Self {
        Self::new(file, &format!("/components/schemas/{name}"))
    }

    /// The JSON pointer of every validation error's instance.
    pub fn error_paths(&self, instance: &Value) -> Vec<String> {
        self.validator
            .iter_errors(instance)
            .map(|e| e.instance_path().to_string())
            .collect()
    }

    /// Every validation error, as text.
    pub fn errors(&self, instance: &Value) -> Vec<String> {
        self.validator
            .iter_errors(instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect()
    }

    /// Asserts that `instance` is valid, listing the errors otherwise.
    pub fn assert_valid(&self, instance: &Value) {
        let errs = self.errors(instance);
        assert!(
            errs.is_empty(),
            "{} rejects {}:\n  {}",
            self.what,
            instance,
            errs.join("\n  ")
        );
    }

    /// Asserts that `instance` is invalid.
    pub fn assert_invalid(&self, instance: &Value) {
        assert!(
            !self.errors(instance).is_empty(),
            "{} accepts {} but should not",
            self.what,
            instance
        );
    }
}

/// Escapes a path key for a JSON pointer (RFC 6901 §3).
pub fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
