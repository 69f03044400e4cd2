//! The line writer per column type against SHA-256 of the same bytes, on one thread.
//!
//! Run: `cargo bench --bench line_writer` in `rows/` (`-- --rows N --repeats K`). For each
//! column type it times writing every row's line of a one-column table and SHA-256 of those
//! lines (prebuilt), alternating, medians, and prints ns per row and their ratio; then the same
//! for the seven-column flat table of `bench/hash_bench.py`, and the kernel's one pass (write
//! and hash) against the hash alone: the floor figure. `--only PREFIX` times only the column
//! types whose name starts with it, and `--write-only` only writes the flat table's lines (both
//! for a profiler).

use std::hint::black_box;
use std::sync::Arc;

use _kernel::lanes::{bucket_rows, Buckets};
use _kernel::line::{column_names, Rows};
use arrow_array::builder::{Int64Builder, ListBuilder};
use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array,
    RecordBatch, StringArray, StructArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Fields};
use sha2::{Digest, Sha256};

/// SplitMix64: a fixed, dependency-free stream of test values.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `low..high`.
    fn between(&mut self, low: i64, high: i64) -> i64 {
        low + (self.next() % (high - low) as u64) as i64
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const WORDS: [&str; 8] = [
    "Mokoena, Thabo",
    "Ndlovu",
    "naïve café",
    "Zoë",
    "say \"hi\"",
    "C:\\temp",
    "Smith",
    "李",
];

/// Amounts as the Python bench draws them: two decimals, a wide spread, 30 % negative, 5 % NaN.
fn amounts(random: &mut Random, rows: usize) -> Vec<f64> {
    (0..rows)
        .map(|_| {
            if random.unit() < 0.05 {
                return f64::NAN;
            }
            let sign = if random.unit() < 0.3 { -1.0 } else { 1.0 };
            let magnitude = (4.0 + 2.0 * (random.unit() * 6.0 - 3.0)).exp();
            (sign * magnitude * 100.0).round() / 100.0
        })
        .collect()
}

fn customers(random: &mut Random, rows: usize) -> StringArray {
    (0..rows)
        .map(|_| {
            let word = WORDS[(random.next() % WORDS.len() as u64) as usize];
            Some(format!("{word} #{}", random.between(0, 10_000_000)))
        })
        .collect()
}

fn nested(random: &mut Random, rows: usize) -> (ArrayRef, ArrayRef) {
    let mut lists = ListBuilder::new(Int64Builder::new());
    for _ in 0..rows {
        for _ in 0..random.between(0, 5) {
            lists.values().append_value(random.between(-1000, 1000));
        }
        lists.append(true);
    }
    let x: ArrayRef = Arc::new(Float64Array::from(
        (0..rows)
            .map(|_| random.unit() * 200.0 - 100.0)
            .collect::<Vec<_>>(),
    ));
    let label: ArrayRef = Arc::new(
        (0..rows)
            .map(|i| (i % 5 != 0).then(|| WORDS[i % WORDS.len()]))
            .collect::<StringArray>(),
    );
    let fields = Fields::from(vec![
        Field::new("x", DataType::Float64, true),
        Field::new("label", DataType::Utf8, true),
    ]);
    let point = StructArray::try_new(fields, vec![x, label], None).expect("a struct");
    (Arc::new(lists.finish()), Arc::new(point))
}

/// Each column type the bench times, by name, `rows` values each.
fn columns(rows: usize) -> Vec<(&'static str, ArrayRef)> {
    let mut random = Random(20_261_129);
    let (lists, point) = nested(&mut random, rows);
    let decimals = Decimal128Array::from(
        (0..rows)
            .map(|_| random.between(-1_000_000_000, 1_000_000_000) as i128)
            .collect::<Vec<_>>(),
    )
    .with_precision_and_scale(12, 2)
    .expect("a decimal type");
    vec![
        (
            "int64",
            Arc::new(Int64Array::from_iter_values(0..rows as i64)),
        ),
        (
            "float64 (5% NaN)",
            Arc::new(Float64Array::from(amounts(&mut random, rows))),
        ),
        (
            "int32",
            Arc::new(Int32Array::from_iter_values(
                (0..rows).map(|_| random.between(-1000, 100_000) as i32),
            )),
        ),
        ("text (escapes)", Arc::new(customers(&mut random, rows))),
        (
            "bool",
            Arc::new(BooleanArray::from(
                (0..rows).map(|_| random.unit() < 0.7).collect::<Vec<_>>(),
            )),
        ),
        (
            "timestamp UTC",
            Arc::new(
                TimestampMicrosecondArray::from_iter_values(
                    (0..rows).map(|_| random.between(1_400_000_000_000_000, 1_800_000_000_000_000)),
                )
                .with_timezone("UTC"),
            ),
        ),
        (
            "date",
            Arc::new(Date32Array::from_iter_values(
                (0..rows).map(|_| random.between(10_000, 21_000) as i32),
            )),
        ),
        ("decimal(12,2)", Arc::new(decimals)),
        ("list<int64>", lists),
        ("struct<f64,str>", point),
    ]
}

/// The flat table of `bench/hash_bench.py`: its seven columns, sorted by name.
fn flat(all: &[(&'static str, ArrayRef)]) -> RecordBatch {
    let pick = |name: &str| {
        all.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, a)| Arc::clone(a))
            .expect("a column")
    };
    RecordBatch::try_from_iter(vec![
        ("active", pick("bool")),
        ("amount", pick("float64 (5% NaN)")),
        ("created_at", pick("timestamp UTC")),
        ("customer", pick("text (escapes)")),
        ("day", pick("date")),
        ("id", pick("int64")),
        ("quantity", pick("int32")),
    ])
    .expect("the flat table")
}

fn rows_of(batch: &RecordBatch) -> Rows<'_> {
    let names = column_names(batch);
    Rows::table(batch, &names, &vec![false; names.len()]).expect("a table the kernel writes")
}

/// Writes every line into one reused buffer; returns the bytes written (kept from the optimiser).
fn write_all(rows: &Rows<'_>) -> usize {
    let mut line = Vec::with_capacity(256);
    let mut total = 0;
    for i in 0..rows.len() {
        rows.write(i, &mut line).expect("a line");
        total += black_box(&line).len();
    }
    total
}

fn hash_all(lines: &[Vec<u8>]) -> u64 {
    let mut buckets = Buckets::default();
    for line in lines {
        buckets.add(&Sha256::digest(line).into());
    }
    buckets.lane_a.iter().fold(0, |a, &b| a.wrapping_add(b))
}

fn lines_of(rows: &Rows<'_>) -> Vec<Vec<u8>> {
    let mut line = Vec::new();
    (0..rows.len())
        .map(|i| {
            rows.write(i, &mut line).expect("a line");
            line.clone()
        })
        .collect()
}

/// This thread's CPU time: unlike wall time, not stretched by other work on a shared machine.
fn thread_cpu_seconds() -> f64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "this thread's CPU clock reads");
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}

/// Median CPU seconds of each contender over `repeats` rounds, the order swapped each round.
fn medians(repeats: usize, contenders: &mut [&mut dyn FnMut()]) -> Vec<f64> {
    let mut seconds = vec![Vec::with_capacity(repeats); contenders.len()];
    for contender in contenders.iter_mut() {
        contender(); // warm-up: caches, page faults, the CPU's clock
    }
    for round in 0..repeats {
        let order: Vec<usize> = if round % 2 == 0 {
            (0..contenders.len()).collect()
        } else {
            (0..contenders.len()).rev().collect()
        };
        for k in order {
            let start = thread_cpu_seconds();
            contenders[k]();
            seconds[k].push(thread_cpu_seconds() - start);
        }
    }
    seconds
        .into_iter()
        .map(|mut s| {
            s.sort_by(f64::total_cmp);
            s[s.len() / 2]
        })
        .collect()
}

fn cpu_description() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |key: &str| {
        info.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == key))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let model = field("model name").unwrap_or_else(|| "unknown CPU".to_string());
    let flags = field("flags").unwrap_or_default();
    let listed = flags.split_whitespace().any(|f| f == "sha_ni");
    format!(
        "{model}, {} SHA-NI (cpuinfo), SHA extensions used by the kernel: {}",
        if listed { "with" } else { "WITHOUT" },
        _kernel::sha_extensions()
    )
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_string())
}

fn argument(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|at| args.get(at + 1))
        .map(|v| v.parse().expect("a whole number"))
        .unwrap_or(default)
}

/// Median CPU seconds of writing every line of `rows`, of SHA-256 of `lines` (the same lines)
/// and, with `one_pass`, of the kernel writing and hashing them in one pass.
fn timings(rows: &Rows<'_>, lines: &[Vec<u8>], repeats: usize, one_pass: bool) -> Vec<f64> {
    let mut write = || {
        black_box(write_all(rows));
    };
    let mut hash = || {
        black_box(hash_all(lines));
    };
    let mut both = || {
        black_box(bucket_rows(std::slice::from_ref(rows), 1).expect("buckets"));
    };
    if one_pass {
        medians(repeats, &mut [&mut write, &mut hash, &mut both])
    } else {
        medians(repeats, &mut [&mut write, &mut hash])
    }
}

fn per_type(all: &[(&'static str, ArrayRef)], repeats: usize, only: Option<&str>) {
    println!(
        "{:<18} {:>11} {:>11} {:>11} {:>7}",
        "column", "bytes/value", "write ns", "SHA ns", "write/SHA"
    );
    for (name, array) in all {
        if only.is_some_and(|o| !name.starts_with(o)) {
            continue;
        }
        let batch = RecordBatch::try_from_iter(vec![("c", Arc::clone(array))]).expect("a batch");
        let rows = rows_of(&batch);
        let lines = lines_of(&rows);
        // A value's bytes: its line less `{"c":` and `}`.
        let bytes = lines.iter().map(Vec::len).sum::<usize>() as f64 / lines.len() as f64 - 6.0;
        let times = timings(&rows, &lines, repeats, false);
        let per = |s: f64| s * 1e9 / rows.len() as f64;
        println!(
            "{name:<18} {bytes:>11.1} {:>11.1} {:>11.1} {:>7.2}x",
            per(times[0]),
            per(times[1]),
            times[0] / times[1]
        );
    }
}

fn whole_table(batch: &RecordBatch, repeats: usize) {
    let rows = rows_of(batch);
    let lines = lines_of(&rows);
    let size = lines.iter().map(Vec::len).sum::<usize>() as f64 / lines.len() as f64;
    let times = timings(&rows, &lines, repeats, true);
    let per = |s: f64| s * 1e9 / rows.len() as f64;
    println!(
        "flat table, 7 columns, {size:.0} bytes a line: write {:.1} ns/row ({:.1} ns/value), \
         SHA-256 {:.1} ns/row: write/SHA {:.2}x; write and hash in one pass (the kernel, \
         bucket_rows) {:.1} ns/row = {:.2}x SHA-256 alone",
        per(times[0]),
        per(times[0]) / 7.0,
        per(times[1]),
        times[0] / times[1],
        per(times[2]),
        times[2] / times[1],
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rows = argument(&args, "--rows", 200_000);
    let repeats = argument(&args, "--repeats", 7);
    println!(
        "{}; load average {}; {rows} rows, {repeats} rounds, one thread, medians of CPU time",
        cpu_description(),
        load_average()
    );
    let all = columns(rows);
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|at| args.get(at + 1));
    if args.iter().any(|a| a == "--write-only") {
        // For a profiler (callgrind counts instructions, not seconds): only the writer runs.
        let batch = flat(&all);
        let rows = rows_of(&batch);
        let bytes: usize = (0..repeats).map(|_| write_all(&rows)).sum();
        println!("wrote the flat table's lines {repeats} times, {bytes} bytes");
        return;
    }
    per_type(&all, repeats, only.map(String::as_str));
    if only.is_none() {
        whole_table(&flat(&all), repeats);
    }
}
