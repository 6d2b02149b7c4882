//! `STEER5G_<SECTION>_<KEY>`: every key of the configuration file, overridable by an
//! environment variable, between the file and the flags (DESIGN.md's Conventions). The
//! variable names the section and the key in capitals (`STEER5G_LIMITS_AMF_MAX_UE_CONTEXTS`
//! is `[limits] amf_max_ue_contexts`); its value is read as the key's type: an integer, a
//! boolean (`true`/`false`), a string, or, for a list of scalars, a comma-separated list.
//! Lists of tables (`amf.slices`) stay in the file or their own flags.
//!
//! Generic over the schema: the layer reads the keys from the configuration as TOML, so a
//! key added to any section is overridable with no code here.

use serde::Deserialize as _;
use toml::Value;

use crate::{Config, ConfigError};

/// The prefix of every variable.
pub const PREFIX: &str = "STEER5G_";

/// Why a variable's value is refused, naming the variable (never quoting a secret: no
/// configuration key holds one).
fn refused(var: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Env {
        var: var.to_owned(),
        message: message.into(),
    }
}

/// The value `text` as the type of `like`.
fn typed(var: &str, like: &Value, text: &str) -> Result<Value, ConfigError> {
    Ok(match like {
        Value::Integer(_) => Value::Integer(
            text.trim()
                .parse()
                .map_err(|_| refused(var, format!("{text:?} is not an integer")))?,
        ),
        Value::Boolean(_) => Value::Boolean(match text.trim() {
            "true" | "1" => true,
            "false" | "0" => false,
            _ => return Err(refused(var, format!("{text:?} is not true or false"))),
        }),
        Value::Float(_) => Value::Float(
            text.trim()
                .parse()
                .map_err(|_| refused(var, format!("{text:?} is not a number")))?,
        ),
        Value::Array(items) => {
            let like = match items.first() {
                Some(Value::Table(_)) => {
                    return Err(refused(
                        var,
                        "a list of tables is set in the configuration file, not a variable",
                    ))
                }
                Some(v) => v.clone(),
                // An empty list gives no type: its items are taken as strings.
                None => Value::String(String::new()),
            };
            let items = text
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| typed(var, &like, s))
                .collect::<Result<Vec<_>, _>>()?;
            Value::Array(items)
        }
        Value::Table(_) => {
            return Err(refused(var, "names a table, not a key"));
        }
        _ => Value::String(text.to_owned()),
    })
}

impl Config {
    /// Applies every `STEER5G_<SECTION>_<KEY>` among `vars` that names a key of the
    /// configuration, then checks the result. Variables of the prefix that name no key
    /// (`STEER5G_DATA_DIR`, `STEER5G_WORKERS`: flags' variables) are left to their flags.
    /// Returns the variables applied, in order.
    pub fn apply_env(
        &mut self,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Vec<String>, ConfigError> {
        let mut root = Value::try_from(&*self).map_err(|e| ConfigError::Invalid {
            field: "config",
            message: e.to_string(),
        })?;
        let mut applied = Vec::new();
        let mut vars: Vec<(String, String)> = vars
            .into_iter()
            .filter(|(k, _)| k.starts_with(PREFIX))
            .collect();
        // Deterministic whatever the environment's order.
        vars.sort();
        for (var, text) in vars {
            let rest = var[PREFIX.len()..].to_ascii_lowercase();
            let Some((section, key)) = rest.split_once('_') else {
                continue;
            };
            let Some(Value::Table(t)) = root.get_mut(section) else {
                continue;
            };
            if let Some(like) = t.get(key) {
                let v = typed(&var, like, &text)?;
                t.insert(key.to_owned(), v);
                applied.push(var);
                continue;
            }
            // A key without a value by default (an optional path) is not in the TOML form:
            // taken as a string if the section has such a key; otherwise the variable is a
            // flag's (`STEER5G_N2_TRANSPORT`), not the file's, and is left alone.
            t.insert(key.to_owned(), Value::String(text));
            let unknown = Config::deserialize(root.clone())
                .err()
                .is_some_and(|e| e.message().contains("unknown field"));
            if unknown {
                if let Some(Value::Table(t)) = root.get_mut(section) {
                    t.remove(key);
                }
            } else {
                applied.push(var);
            }
        }
        if applied.is_empty() {
            return Ok(applied);
        }
        let cfg: Config = root.try_into().map_err(|e: toml::de::Error| {
            let named = applied.join(", ");
            refused(&named, e.message().to_owned())
        })?;
        cfg.validate()
            .map_err(|e| refused(&applied.join(", "), e.to_string()))?;
        *self = cfg;
        Ok(applied)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn vars(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn every_kind_of_key_is_overridden_by_its_variable() {
        let mut c = Config::default();
        let applied = c
            .apply_env(vars(&[
                ("STEER5G_LIMITS_AMF_MAX_UE_CONTEXTS", "77"),
                ("STEER5G_OVERLOAD_ENABLED", "false"),
                ("STEER5G_PLMN_MCC", "999"),
                ("STEER5G_AMF_TACS", "1, 7"),
                ("STEER5G_AMF_NAS_INTEGRITY", "nia1"),
                ("STEER5G_DATA_DIR", "/elsewhere"),
                ("STEER5G_WORKERS", "4"),
                ("OTHER_LIMITS_X", "1"),
            ]))
            .unwrap();
        assert_eq!(applied.len(), 5, "{applied:?}");
        assert_eq!(c.limits.amf_max_ue_contexts, 77);
        assert!(!c.overload.enabled);
        assert_eq!(c.plmn.mcc, "999");
        assert_eq!(c.amf.tacs, vec![1, 7]);
        assert_eq!(c.amf.nas_integrity, vec!["nia1".to_owned()]);
    }

    #[test]
    fn an_optional_key_is_set_and_a_flags_variable_left_alone() {
        let mut c = Config::default();
        let applied = c
            .apply_env(vars(&[
                ("STEER5G_RAN_HN_PUBLIC_KEY", "/etc/steer5g/hn-public.toml"),
                ("STEER5G_N2_TRANSPORT", "raw"),
                // Flags' variables whose first word is now a section of the file.
                ("STEER5G_SCTP_PORT", "38413"),
                ("STEER5G_SMF_ARGS", "--workers 2"),
                ("STEER5G_UPF_ARGS", "--datapath tun"),
            ]))
            .unwrap();
        assert_eq!(applied, vec!["STEER5G_RAN_HN_PUBLIC_KEY".to_owned()]);
        assert_eq!(
            c.ran.hn_public_key.as_deref(),
            Some(std::path::Path::new("/etc/steer5g/hn-public.toml"))
        );
    }

    #[test]
    fn a_bad_value_names_its_variable_and_changes_nothing() {
        let mut c = Config::default();
        for (var, value) in [
            ("STEER5G_LIMITS_AMF_MAX_UE_CONTEXTS", "many"),
            ("STEER5G_OVERLOAD_ENABLED", "yes"),
            ("STEER5G_PLMN_MCC", "12x"),
            ("STEER5G_AMF_SLICES", "1"),
            ("STEER5G_AMF_SET_ID", "4096"),
        ] {
            let e = c.apply_env(vars(&[(var, value)])).unwrap_err().to_string();
            assert!(e.contains(var), "{e}");
        }
        assert_eq!(c, Config::default());
    }
}
