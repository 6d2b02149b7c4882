//! The Prometheus text exposition format, version 0.0.4
//! (<https://prometheus.io/docs/instrumenting/exposition_formats/>).

use std::fmt::Write as _;

/// A family's type, as its `# TYPE` line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up (resets when the process restarts); named `..._total`.
    Counter,
    /// Goes up and down: a level at scrape time.
    Gauge,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        }
    }
}

/// One named value with its help text, as a counter struct enumerates its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// The field name (a valid metric name fragment: `[a-z0-9_]`).
    pub name: &'static str,
    /// One line saying what it counts.
    pub help: &'static str,
    /// Counter or gauge.
    pub kind: Kind,
    /// The value.
    pub value: u64,
}

/// A page of metrics being written. Families must be written whole (header, then all their
/// samples), which the format requires; a family name used twice is written once and its
/// later samples are dropped, so that a mistake cannot make the page unparsable.
#[derive(Debug, Default)]
pub struct Exposition {
    out: String,
    current: Option<String>,
    done: Vec<String>,
}

/// A metric or label name as the format allows: `[a-zA-Z_:][a-zA-Z0-9_:]*` (colons are
/// refused in label names by the data model; we use none anywhere).
fn valid_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Help text: backslash and line feed escaped.
fn escape_help(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Label value: backslash, double quote and line feed escaped.
fn escape_label(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

impl Exposition {
    /// An empty page.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts family `name` with its `# HELP` and `# TYPE` lines. Returns false (and
    /// writes nothing, also for the samples that follow) for an invalid or repeated name.
    pub fn family(&mut self, name: &str, help: &str, kind: Kind) -> bool {
        if let Some(c) = self.current.take() {
            self.done.push(c);
        }
        if !valid_name(name) || self.done.iter().any(|d| d == name) {
            tracing::warn!(name, "metric family skipped: invalid or repeated name");
            return false;
        }
        let _ = write!(self.out, "# HELP {name} ");
        escape_help(help, &mut self.out);
        let _ = writeln!(self.out, "\n# TYPE {name} {}", kind.as_str());
        self.current = Some(name.to_owned());
        true
    }

    /// One sample of the current family, with `labels` (invalid label names are dropped).
    pub fn sample(&mut self, labels: &[(&str, &str)], value: u64) {
        let Some(name) = self.current.as_deref() else {
            return;
        };
        self.out.push_str(name);
        let mut first = true;
        for (k, v) in labels
            .iter()
            .filter(|(k, _)| valid_name(k) && !k.contains(':'))
        {
            self.out.push(if first { '{' } else { ',' });
            first = false;
            self.out.push_str(k);
            self.out.push_str("=\"");
            escape_label(v, &mut self.out);
            self.out.push('"');
        }
        if !first {
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }

    /// The page.
    pub fn finish(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_samples_and_escapes() {
        let mut e = Exposition::new();
        assert!(e.family(
            "steer5g_lock_acquisitions_total",
            "Locks taken.\nBy map",
            Kind::Counter
        ));
        e.sample(&[("nf", "amf"), ("map", "ue\"ctx\\")], 7);
        e.sample(&[], 0);
        assert!(e.family("steer5g_queue_depth", "Waiting.", Kind::Gauge));
        e.sample(&[("worker", "1"), ("bad-name", "x")], 3);
        let page = e.finish();
        assert_eq!(
            page,
            "# HELP steer5g_lock_acquisitions_total Locks taken.\\nBy map\n\
             # TYPE steer5g_lock_acquisitions_total counter\n\
             steer5g_lock_acquisitions_total{nf=\"amf\",map=\"ue\\\"ctx\\\\\"} 7\n\
             steer5g_lock_acquisitions_total 0\n\
             # HELP steer5g_queue_depth Waiting.\n\
             # TYPE steer5g_queue_depth gauge\n\
             steer5g_queue_depth{worker=\"1\"} 3\n"
        );
    }

    #[test]
    fn invalid_or_repeated_families_write_nothing() {
        let mut e = Exposition::new();
        assert!(!e.family("1bad", "x", Kind::Gauge));
        e.sample(&[], 1);
        assert!(e.family("a", "x", Kind::Gauge));
        e.sample(&[], 1);
        assert!(!e.family("a", "again", Kind::Gauge));
        e.sample(&[], 2);
        assert_eq!(e.finish(), "# HELP a x\n# TYPE a gauge\na 1\n");
    }
}
