//! The Grafana dashboards in contrib/grafana, read the way a test checks them against a
//! `/metrics` page: which metric names their queries use.

use std::path::Path;

/// The metric names the PromQL queries (`targets[].expr`) of the dashboard at `path` read:
/// every identifier that is not a function (followed by `(`), a keyword, a label list
/// (`by (...)`) or inside a label matcher (`{...}`) or a string. Sorted, without repeats.
pub fn metric_names(path: &Path) -> crate::Result<Vec<String>> {
    let text = std::fs::read_to_string(path).map_err(|e| crate::Error::Io {
        what: format!("read {}", path.display()),
        source: e,
    })?;
    let d: serde_json::Value = serde_json::from_str(&text).map_err(|e| crate::Error::Parse {
        what: path.display().to_string(),
        detail: e.to_string(),
    })?;
    let mut names = Vec::new();
    let panels = d["panels"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    for t in panels
        .iter()
        .flat_map(|p| p["targets"].as_array().map(Vec::as_slice).unwrap_or(&[]))
    {
        if let Some(expr) = t["expr"].as_str() {
            names.extend(selectors(expr));
        }
    }
    names.sort();
    names.dedup();
    Ok(names)
}

/// PromQL words that are not metric names: keywords, and the aggregation operators, which
/// may stand before their `by (...)` rather than their `(`.
const KEYWORDS: [&str; 23] = [
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "sum",
    "min",
    "max",
    "avg",
    "count",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
    "group",
];

fn selectors(expr: &str) -> Vec<String> {
    let b = expr.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    // Skips from an opening `open` to past its `close` (string literals inside included).
    let skip = |mut i: usize, close: u8| {
        while i < b.len() && b[i] != close {
            if b[i] == b'"' {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            i += 1;
        }
        i + 1
    };
    while i < b.len() {
        match b[i] {
            // Label matchers, ranges and string literals name no metric.
            b'{' => i = skip(i + 1, b'}'),
            b'[' => i = skip(i + 1, b']'),
            b'"' => i = skip(i + 1, b'"'),
            // A number or a duration (`5m`).
            c if c.is_ascii_digit() => {
                while i < b.len() && b[i].is_ascii_alphanumeric() {
                    i += 1;
                }
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b':')
                {
                    i += 1;
                }
                let word = &expr[start..i];
                let mut j = i;
                while j < b.len() && b[j] == b' ' {
                    j += 1;
                }
                let next = b.get(j).copied();
                if matches!(word, "by" | "without" | "on" | "ignoring") && next == Some(b'(') {
                    // A label list.
                    i = skip(j + 1, b')');
                } else if next != Some(b'(') && !KEYWORDS.contains(&word) {
                    out.push(word.to_owned());
                }
            }
            _ => i += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::selectors;

    #[test]
    fn functions_and_by_labels_are_not_metrics() {
        assert_eq!(
            selectors("sum by (cause) (rate(fivegs_x_fail[1m])) / clamp_min(sum(up), 1)"),
            vec!["fivegs_x_fail", "up"]
        );
        assert_eq!(selectors("max(gnb{job=\"amf\"})"), vec!["gnb"]);
        assert_eq!(
            selectors("sum by (path, counter) (rate(x_total{counter=~\"(ul|dl)_forwarded\"}[1m]))"),
            vec!["x_total"]
        );
        assert_eq!(
            selectors("a / on (job) b unless c offset 5m"),
            vec!["a", "b", "c"]
        );
    }
}
