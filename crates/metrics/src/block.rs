//! Per-worker single-writer counter blocks.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters per line pair: 128 bytes, the unit adjacent-line prefetch moves, so two
/// workers' blocks never share one.
const PER_LINE: usize = 16;

#[derive(Debug, Default)]
#[repr(align(128))]
struct Line([AtomicU64; PER_LINE]);

/// One worker's counters: `width` values in whole 128-byte lines. Meant to be written by
/// one thread only; any thread may read it at any time.
#[derive(Debug)]
pub struct Block {
    lines: Box<[Line]>,
    width: usize,
}

impl Block {
    fn new(width: usize) -> Self {
        let lines = width.div_ceil(PER_LINE).max(1);
        Self {
            lines: (0..lines).map(|_| Line::default()).collect(),
            width,
        }
    }

    fn cell(&self, i: usize) -> Option<&AtomicU64> {
        if i >= self.width {
            return None;
        }
        self.lines.get(i / PER_LINE)?.0.get(i % PER_LINE)
    }

    /// How many values the block holds.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Sets value `i` (ignored past the width). Relaxed: a scrape needs each value to be
    /// one the writer stored, not a consistent cut across values.
    pub fn store(&self, i: usize, v: u64) {
        if let Some(c) = self.cell(i) {
            c.store(v, Ordering::Relaxed);
        }
    }

    /// Value `i` (0 past the width).
    pub fn load(&self, i: usize) -> u64 {
        self.cell(i).map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Stores `values` from index 0 on, in order; those past the width are dropped.
    pub fn publish(&self, values: impl IntoIterator<Item = u64>) {
        for (i, v) in values.into_iter().enumerate() {
            self.store(i, v);
        }
    }
}

/// The blocks of every worker of a process, all of the same width.
#[derive(Debug)]
pub struct Blocks {
    blocks: Box<[Block]>,
    width: usize,
}

impl Blocks {
    /// `workers` blocks of `width` values each, all zero.
    pub fn new(workers: usize, width: usize) -> Self {
        Self {
            blocks: (0..workers).map(|_| Block::new(width)).collect(),
            width,
        }
    }

    /// How many values each block holds.
    pub fn width(&self) -> usize {
        self.width
    }

    /// How many blocks (workers) there are.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Whether there are no blocks.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Worker `w`'s block.
    pub fn block(&self, w: usize) -> Option<&Block> {
        self.blocks.get(w)
    }

    /// Every block, in worker order.
    pub fn iter(&self) -> impl Iterator<Item = &Block> {
        self.blocks.iter()
    }

    /// Value `i` summed over the workers (wrapping, as counters do).
    pub fn sum(&self, i: usize) -> u64 {
        self.blocks
            .iter()
            .fold(0u64, |a, b| a.wrapping_add(b.load(i)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn blocks_do_not_share_cache_lines() {
        let b = Blocks::new(3, 17);
        assert_eq!(b.len(), 3);
        let addr = |w: usize, i: usize| b.block(w).unwrap().cell(i).unwrap() as *const _ as usize;
        for w in 0..3 {
            assert_eq!(addr(w, 0) % 128, 0);
        }
        // 17 values take two line pairs; the next block starts on a pair of its own.
        assert!(addr(1, 0) >= addr(0, 16) + 8 || addr(0, 0) >= addr(1, 16) + 8);
    }

    #[test]
    fn store_load_sum_and_out_of_range() {
        let b = Blocks::new(2, 3);
        b.block(0).unwrap().publish([1, 2, 3, 4]);
        b.block(1).unwrap().publish([10, 20]);
        assert_eq!(b.sum(0), 11);
        assert_eq!(b.sum(1), 22);
        assert_eq!(b.sum(2), 3);
        assert_eq!(b.sum(3), 0);
        b.block(1).unwrap().store(99, 5);
        assert_eq!(b.block(1).unwrap().load(99), 0);
        assert!(b.block(2).is_none());
    }
}
