//! Made-up subscribers for demos and load tests: consecutive SUPIs, random K and OPc.

use rand::RngCore;

use crate::subscriber::{validate_supi, FieldError, OpOrOpc, Subscriber};

/// `count` subscribers with consecutive SUPIs from `start` (same number of digits), random K
/// and OPc from `rng`, and the defaults otherwise. Fails if `start` is not a SUPI or the
/// range would need more digits than `start` has.
pub fn generate(
    start: &str,
    count: u64,
    rng: &mut dyn RngCore,
) -> Result<Vec<Subscriber>, FieldError> {
    validate_supi(start)?;
    let digits = start.strip_prefix("imsi-").unwrap_or_default();
    let width = digits.len();
    let first: u64 = digits
        .parse()
        .map_err(|_| FieldError::Supi(start.to_string()))?;
    // width <= 15, so 10^width fits in u64.
    let limit = 10u64.pow(u32::try_from(width).unwrap_or(15));
    let end = first.checked_add(count).filter(|e| *e <= limit);
    if end.is_none() {
        return Err(FieldError::Supi(format!("{start} + {count}")));
    }
    let mut out = Vec::with_capacity(usize::try_from(count).unwrap_or(0).min(1 << 24));
    for i in 0..count {
        let n = first + i;
        let mut k = [0u8; 16];
        let mut opc = [0u8; 16];
        rng.fill_bytes(&mut k);
        rng.fill_bytes(&mut opc);
        let supi = format!("imsi-{n:0width$}");
        out.push(Subscriber::new(&supi, k, OpOrOpc::Opc(opc))?);
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_and_bounded() {
        let mut rng = rand::thread_rng();
        let subs = generate("imsi-001010000000009", 3, &mut rng).unwrap();
        let supis: Vec<_> = subs.iter().map(|s| s.supi.as_str()).collect();
        assert_eq!(
            supis,
            [
                "imsi-001010000000009",
                "imsi-001010000000010",
                "imsi-001010000000011"
            ]
        );
        assert_ne!(subs[0].k, subs[1].k);
        assert!(generate("imsi-99998", 2, &mut rng).is_ok());
        assert!(generate("imsi-99998", 3, &mut rng).is_err());
        assert!(generate("imsi-1", 1, &mut rng).is_err());
    }
}
