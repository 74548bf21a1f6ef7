//! `runner::memory::prefault_heap`, which `ctxbench replay --fixture` calls with the trace's
//! size before reading it: the heap the decoded trace then fills must already be resident, so
//! filling it takes no page fault per 4 KiB page (each ~1 µs on a virtual machine: most of what
//! separates the whole process from the 50× goal, README Speed).
//!
//! Its own binary without the test harness (`harness = false` in Cargo.toml): the prefault works
//! on the main thread's heap, and the harness would run a test on another thread, in another
//! allocator arena. Measured as resident memory (`RssAnon`), not time. Linux with glibc only
//! (elsewhere the prefault is a no-op).

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn rss_anon() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("RssAnon:")).unwrap();
    let kb: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn main() {
    const MIB: usize = 1 << 20;
    let before = rss_anon();
    ctxbench::runner::memory::prefault_heap(24 * MIB);
    let prefaulted = rss_anon();
    assert!(
        prefaulted >= before + 20 * MIB,
        "prefault_heap(24 MiB) made {} KiB resident",
        (prefaulted - before) / 1024
    );
    // What a replay does next: many strings, some large, filling the heap.
    let strings: Vec<String> = (0..2_000)
        .map(|i| "x".repeat(if i % 100 == 0 { 200 * 1024 } else { 8 * 1024 }))
        .collect();
    let filled: usize = strings.iter().map(String::len).sum();
    assert!(filled > 15 * MIB);
    let after = rss_anon();
    // Already resident: filling 19 MiB adds little (without the prefault: all of it).
    assert!(
        after < prefaulted + 4 * MIB,
        "filling {} MiB after the prefault added {} KiB of resident memory",
        filled / MIB,
        (after - prefaulted) / 1024
    );
    // Small requests change nothing.
    ctxbench::runner::memory::prefault_heap(64 * 1024);
    println!(
        "prefault_heap: ok (resident +{} KiB, then +{} KiB to fill {} MiB)",
        (prefaulted - before) / 1024,
        (after - prefaulted) / 1024,
        filled / MIB
    );
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn main() {}
