//! SHA-256 of every line, its two lanes and the 256-bucket sketch, on threads over row ranges.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rayon::prelude::*;
use rayon::ThreadPool;
use sha2::{Digest, Sha256};

use crate::error::{KernelError, Result};
use crate::line::Rows;

pub const BUCKETS: usize = 256;

/// Per bucket (the first byte of a line's SHA-256): rows, and lane A and lane B sums modulo
/// 2**64 (lane A = digest bytes 0..8, lane B = bytes 8..16, big-endian).
#[derive(Clone)]
pub struct Buckets {
    pub counts: [u64; BUCKETS],
    pub lane_a: [u64; BUCKETS],
    pub lane_b: [u64; BUCKETS],
}

impl Default for Buckets {
    fn default() -> Self {
        Buckets {
            counts: [0; BUCKETS],
            lane_a: [0; BUCKETS],
            lane_b: [0; BUCKETS],
        }
    }
}

impl Buckets {
    #[inline]
    pub fn add(&mut self, digest: &[u8; 32]) {
        let bucket = digest[0] as usize;
        let a = u64::from_be_bytes(digest[0..8].try_into().expect("8 bytes"));
        let b = u64::from_be_bytes(digest[8..16].try_into().expect("8 bytes"));
        self.counts[bucket] += 1;
        self.lane_a[bucket] = self.lane_a[bucket].wrapping_add(a);
        self.lane_b[bucket] = self.lane_b[bucket].wrapping_add(b);
    }

    pub fn merge(mut self, other: Buckets) -> Buckets {
        for i in 0..BUCKETS {
            self.counts[i] += other.counts[i];
            self.lane_a[i] = self.lane_a[i].wrapping_add(other.lane_a[i]);
            self.lane_b[i] = self.lane_b[i].wrapping_add(other.lane_b[i]);
        }
        self
    }

    /// Counts, lane A sums, lane B sums: 768 little-endian u64 (a (3, 256) array).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        [&self.counts, &self.lane_a, &self.lane_b]
            .iter()
            .flat_map(|row| row.iter().flat_map(|v| v.to_le_bytes()))
            .collect()
    }
}

/// A range of rows of one batch, the unit one thread hashes at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    pub batch: usize,
    pub start: usize,
    pub end: usize,
}

/// Cuts batches of `lengths` rows into tasks of about `per_task` rows (never across batches).
pub fn tasks(lengths: &[usize], per_task: usize) -> Vec<Task> {
    let per_task = per_task.max(1);
    let mut out = Vec::new();
    for (batch, &rows) in lengths.iter().enumerate() {
        let mut start = 0;
        while start < rows {
            let end = (start + per_task).min(rows);
            out.push(Task { batch, start, end });
            start = end;
        }
    }
    out
}

/// Rows per task: enough tasks to keep every thread busy to the end, few enough to stay cheap.
pub fn rows_per_task(total: usize, threads: usize) -> usize {
    (total / (threads * 8).max(1)).clamp(4096, 65_536)
}

#[inline]
fn digest_of(line: &[u8]) -> [u8; 32] {
    Sha256::digest(line).into()
}

fn bucket_task(
    rows: &Rows<'_>,
    task: Task,
    buckets: &mut Buckets,
    line: &mut Vec<u8>,
) -> Result<()> {
    for i in task.start..task.end {
        rows.write(i, line)?;
        buckets.add(&digest_of(line));
    }
    Ok(())
}

fn digest_task(rows: &Rows<'_>, task: Task, out: &mut [u8], line: &mut Vec<u8>) -> Result<()> {
    for (i, slot) in (task.start..task.end).zip(out.chunks_exact_mut(32)) {
        rows.write(i, line)?;
        slot.copy_from_slice(&digest_of(line));
    }
    Ok(())
}

/// The buckets of every row of every batch, on `threads` threads.
pub fn bucket_rows(batches: &[Rows<'_>], threads: usize) -> Result<Buckets> {
    let lengths: Vec<usize> = batches.iter().map(Rows::len).collect();
    let total: usize = lengths.iter().sum();
    let work = tasks(&lengths, rows_per_task(total, threads));
    if threads <= 1 || work.len() <= 1 {
        let mut buckets = Buckets::default();
        let mut line = Vec::with_capacity(256);
        for task in work {
            bucket_task(&batches[task.batch], task, &mut buckets, &mut line)?;
        }
        return Ok(buckets);
    }
    pool(threads).install(|| {
        work.par_iter()
            .try_fold(
                || (Buckets::default(), Vec::with_capacity(256)),
                |(mut buckets, mut line), task| {
                    bucket_task(&batches[task.batch], *task, &mut buckets, &mut line)?;
                    Ok::<_, KernelError>((buckets, line))
                },
            )
            .map(|part| part.map(|(buckets, _)| buckets))
            .try_reduce(Buckets::default, |x, y| Ok(x.merge(y)))
    })
}

/// Every row's SHA-256 in row order (32 bytes each, end to end), on `threads` threads.
pub fn digest_rows(batches: &[Rows<'_>], threads: usize) -> Result<Vec<u8>> {
    let lengths: Vec<usize> = batches.iter().map(Rows::len).collect();
    let total: usize = lengths.iter().sum();
    let work = tasks(&lengths, rows_per_task(total, threads));
    let mut out = vec![0u8; total * 32];
    let mut slots: Vec<(Task, &mut [u8])> = Vec::with_capacity(work.len());
    let mut rest = out.as_mut_slice();
    for task in work {
        let (slot, tail) = rest.split_at_mut((task.end - task.start) * 32);
        slots.push((task, slot));
        rest = tail;
    }
    let run = |(task, slot): (Task, &mut [u8]), line: &mut Vec<u8>| {
        digest_task(&batches[task.batch], task, slot, line)
    };
    if threads <= 1 || slots.len() <= 1 {
        let mut line = Vec::with_capacity(256);
        for slot in slots {
            run(slot, &mut line)?;
        }
    } else {
        pool(threads).install(|| {
            slots
                .into_par_iter()
                .try_for_each_init(|| Vec::with_capacity(256), |line, slot| run(slot, line))
        })?;
    }
    Ok(out)
}

/// A kept pool: the process that built it, its thread count, the pool.
type KeptPool = (u32, usize, Arc<ThreadPool>);

/// A pool of `threads` threads, kept for the process (a fork gets pools of its own).
pub(crate) fn pool(threads: usize) -> Arc<ThreadPool> {
    static POOLS: OnceLock<Mutex<Vec<KeptPool>>> = OnceLock::new();
    let pid = std::process::id();
    // A panic while the lock was held (a pool that would not start) poisons it; the list is
    // whole between its statements, so it is read past the poison rather than panicking again.
    let mut pools = POOLS
        .get_or_init(|| Mutex::new(Vec::new()))
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    // A forked child inherits the list but not the threads: its pools are rebuilt.
    pools.retain(|(owner, _, _)| *owner == pid);
    if let Some((_, _, pool)) = pools.iter().find(|(_, size, _)| *size == threads) {
        return Arc::clone(pool);
    }
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("ubunye-rows-{i}"))
            .build()
            .expect("the hash threads start"),
    );
    pools.push((pid, threads, Arc::clone(&pool)));
    pool
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_cover_every_row_once() {
        let cut = tasks(&[5, 0, 3], 2);
        let rows: usize = cut.iter().map(|t| t.end - t.start).sum();
        assert_eq!(rows, 8);
        assert_eq!(
            cut[0],
            Task {
                batch: 0,
                start: 0,
                end: 2
            }
        );
        assert_eq!(
            cut.last().copied(),
            Some(Task {
                batch: 2,
                start: 2,
                end: 3
            })
        );
    }

    #[test]
    fn lanes_are_big_endian_and_wrap() {
        let mut buckets = Buckets::default();
        let mut digest = [0xFFu8; 32];
        digest[0] = 7;
        buckets.add(&digest);
        buckets.add(&digest);
        assert_eq!(buckets.counts[7], 2);
        assert_eq!(buckets.lane_a[7], 0x07FF_FFFF_FFFF_FFFFu64.wrapping_mul(2));
        assert_eq!(buckets.lane_b[7], u64::MAX.wrapping_mul(2));
    }

    #[test]
    fn sha256_of_the_empty_object() {
        // sha256("{}") = 44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a
        assert_eq!(digest_of(b"{}")[..4], [0x44, 0x13, 0x6f, 0xa3]);
    }
}
