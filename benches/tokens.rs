//! Exact token counting throughput (MB/s): ctxbench's counters against tiktoken-rs (and plain
//! bpe-openai) on the same text in the same run, single core and all cores.
//!
//! Corpus: the raw text of the bundled `datasets/` files (sorted by path, at most 512 KiB from
//! each, 4 MiB in all), cut at line ends into ~64 KiB chunks. Every implementation counts the same
//! chunks; the counts are checked equal before anything is timed.
//!
//! Non-ASCII and code corpora (`benches/common/corpora.rs`, generated, 512 KiB each): CJK prose,
//! emoji-dense chat and minified JavaScript, in groups `count/<encoding>/<corpus>` with
//! ctxbench (warm and cold piece cache) and tiktoken-rs on one core; counts checked equal first.
//! These groups are timed on **thread CPU time** (`benches/common/cpu_time.rs`), so their ratios
//! hold on a loaded machine; their "MiB/s" are per CPU-second.
//!
//! Run: `cargo bench --bench tokens` (add `-- o200k` to run one encoding, `-- cjk` one corpus).

use criterion::measurement::Measurement;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use ctxbench::tokens::bpe::{clear_piece_cache, BpeCounter, Encoding};
use rayon::prelude::*;
use std::hint::black_box;
use std::path::{Path, PathBuf};

const PER_FILE: usize = 512 * 1024;
const TOTAL: usize = 4 * 1024 * 1024;
const CHUNK: usize = 64 * 1024;
/// Size of each generated corpus.
const GENERATED: usize = 512 * 1024;

#[path = "common/corpora.rs"]
mod corpora;
#[path = "common/cpu_time.rs"]
mod cpu_time;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Largest `n <= max` that is a char boundary of `s`.
fn floor_boundary(s: &str, max: usize) -> usize {
    let mut n = max.min(s.len());
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    n
}

fn corpus() -> Vec<String> {
    let mut paths = Vec::new();
    files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets"),
        &mut paths,
    );
    let mut text = String::new();
    for p in paths {
        let Ok(s) = std::fs::read_to_string(&p) else {
            continue; // not UTF-8: not part of the text corpus
        };
        let take = floor_boundary(&s, PER_FILE.min(TOTAL - text.len()));
        text.push_str(&s[..take]);
        text.push('\n');
        if text.len() >= TOTAL {
            break;
        }
    }
    chunked(&text)
}

/// Cut into ~64 KiB chunks at line ends (a line longer than a chunk stays whole).
fn chunked(text: &str) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let cut = floor_boundary(rest, CHUNK);
        let end = if cut == rest.len() {
            cut
        } else {
            rest[..cut]
                .rfind('\n')
                .map(|i| i + 1)
                .or_else(|| rest[cut..].find('\n').map(|i| cut + i + 1))
                .unwrap_or(rest.len())
        };
        chunks.push(rest[..end].to_string());
        rest = &rest[end..];
    }
    chunks
}

/// `full`: also plain bpe-openai and the all-cores cases (the main corpus); the generated corpora
/// get the one-core comparison only, to keep the bench's run time down.
fn bench_encoding<M: Measurement>(
    c: &mut Criterion<M>,
    chunks: &[String],
    enc: Encoding,
    corpus: &str,
    full: bool,
) {
    let ours = BpeCounter::new(enc);
    let (tiktoken, plain) = match enc {
        Encoding::O200k => (
            tiktoken_rs::o200k_base_singleton(),
            bpe_openai::o200k_base(),
        ),
        Encoding::Cl100k => (
            tiktoken_rs::cl100k_base_singleton(),
            bpe_openai::cl100k_base(),
        ),
    };
    let bytes: usize = chunks.iter().map(|s| s.len()).sum();
    // Equal counts first: a fast wrong counter is worth nothing.
    for chunk in chunks {
        let want = tiktoken.count_ordinary(chunk) as u64;
        assert_eq!(
            ours.count(chunk),
            want,
            "{corpus}: count differs from tiktoken-rs"
        );
        assert_eq!(plain.count(chunk) as u64, want);
    }

    let mut g = c.benchmark_group(if corpus.is_empty() {
        format!("count/{}", enc.name())
    } else {
        format!("count/{}/{corpus}", enc.name())
    });
    g.throughput(Throughput::Bytes(bytes as u64));
    g.sample_size(10);
    g.bench_function("ctxbench/1-core", |b| {
        b.iter(|| chunks.iter().map(|s| ours.count(black_box(s))).sum::<u64>())
    });
    g.bench_function("ctxbench/1-core-cold-cache", |b| {
        b.iter_batched(
            clear_piece_cache,
            |_| chunks.iter().map(|s| ours.count(black_box(s))).sum::<u64>(),
            BatchSize::PerIteration,
        )
    });
    g.bench_function("tiktoken-rs/1-core", |b| {
        b.iter(|| {
            chunks
                .iter()
                .map(|s| tiktoken.count_ordinary(black_box(s)))
                .sum::<usize>()
        })
    });
    if !full {
        g.finish();
        return;
    }
    g.bench_function("bpe-openai/1-core", |b| {
        b.iter(|| {
            chunks
                .iter()
                .map(|s| plain.count(black_box(s.as_str())))
                .sum::<usize>()
        })
    });
    g.bench_function("ctxbench/all-cores", |b| {
        b.iter(|| {
            chunks
                .par_iter()
                .map(|s| ours.count(black_box(s)))
                .sum::<u64>()
        })
    });
    g.bench_function("tiktoken-rs/all-cores", |b| {
        b.iter(|| {
            chunks
                .par_iter()
                .map(|s| tiktoken.count_ordinary(black_box(s)))
                .sum::<usize>()
        })
    });
    g.finish();
}

/// The bundled-datasets corpus (wall time: it also has all-cores cases).
fn bench_datasets(c: &mut Criterion) {
    let chunks = corpus();
    for enc in [Encoding::O200k, Encoding::Cl100k] {
        bench_encoding(c, &chunks, enc, "", true);
    }
}

/// The generated non-ASCII and code corpora, one core, on thread CPU time.
fn bench_generated(c: &mut Criterion<cpu_time::ThreadCpuTime>) {
    let generated: Vec<(&str, Vec<String>)> = corpora::all(GENERATED)
        .into_iter()
        .map(|(name, text)| (name, chunked(&text)))
        .collect();
    for enc in [Encoding::O200k, Encoding::Cl100k] {
        for (name, chunks) in &generated {
            bench_encoding(c, chunks, enc, name, false);
        }
    }
}

criterion_group! {
    name = tokens;
    // Plots need a system font that CI machines lack (criterion's plotters backend panics).
    config = Criterion::default().without_plots();
    targets = bench_datasets
}
criterion_group! {
    name = tokens_generated;
    config = Criterion::default().without_plots().with_measurement(cpu_time::ThreadCpuTime);
    targets = bench_generated
}
criterion_main!(tokens, tokens_generated);
