//! Counter structs that add up: per-worker counters are summed for every report, and a sum
//! written field by field drifts from the struct as counters are added (a new counter summed
//! in one report and forgotten in another). [`summed_counters!`] declares the struct and its
//! `add` from one list of fields.

/// Declares a struct of counters, as written, and `add(&mut self, other: &Self)` adding every
/// field of `other` to `self`. Every field must be a number (`u64` here).
#[macro_export]
macro_rules! summed_counters {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$field_meta:meta])*
                $field_vis:vis $field:ident : $ty:ty,
            )*
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $(
                $(#[$field_meta])*
                $field_vis $field: $ty,
            )*
        }

        impl $name {
            /// Adds every counter of `other` to this one's.
            $vis fn add(&mut self, other: &$name) {
                $(self.$field += other.$field;)*
            }
        }
    };
}

#[cfg(test)]
mod tests {
    summed_counters! {
        #[derive(Debug, Default, PartialEq, Eq)]
        struct Pair {
            a: u64,
            /// Documented fields keep their docs.
            b: u64,
        }
    }

    #[test]
    fn add_sums_every_field() {
        let mut t = Pair { a: 1, b: 2 };
        t.add(&Pair { a: 10, b: 20 });
        assert_eq!(t, Pair { a: 11, b: 22 });
    }
}
