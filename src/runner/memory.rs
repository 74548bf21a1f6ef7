//! The process's heap: giving the allocator's free pages back to the operating system once a
//! run's units are done.
//!
//! Units run on tokio's workers and rayon's threads, and glibc gives each thread group its own
//! arena: the pages those units freed stay resident in their arenas after the dispatch, and the
//! end-of-run passes (totals, then the reports' rows, one per unit) allocate on the main thread,
//! in another arena, so without this they stack on top of the run's high-water mark.

/// Return every whole free page of every allocator arena to the OS (glibc's `malloc_trim(0)`).
/// Returns whether anything was released. A no-op elsewhere (other allocators and platforms
/// return memory on their own terms).
pub fn release_free_pages() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim only walks the allocator's own free lists; no pointer is passed.
        // PAYS: peak RSS of a whole `ctxbench run` of benches/runner/suite.toml (README, Speed:
        // `/usr/bin/time -v`, 2026-11-24) 87 -> 83 MiB at 20,000 units and 105 -> 84 MiB at
        // 40,000 (RSS before the reports 72 -> 29 MiB at 20,000); tests/run_memory.rs: resident
        // beyond the live heap after a run 12-15 MiB, 32-35 without.
        unsafe { libc::malloc_trim(0) != 0 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    /// Resident anonymous memory of this process, in bytes (`RssAnon` in /proc/self/status).
    fn rss_anon() -> usize {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("RssAnon:")).unwrap();
        let kb: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kb * 1024
    }

    /// What a run leaves behind: a worker thread allocated 64 MiB in 16 KiB blocks (below the
    /// mmap threshold: arena memory, like a unit's strings) and freed all but one block in 64,
    /// which stay live (like the run's long-lived state), so its arena cannot shrink from the
    /// top and the free pages between them stay resident. Releasing must give them back.
    #[test]
    fn free_pages_of_a_worker_threads_arena_go_back_to_the_os() {
        const BLOCK: usize = 16 * 1024;
        const TOTAL: usize = 64 << 20;
        let kept = std::thread::spawn(|| {
            let mut blocks: Vec<Vec<u8>> = (0..TOTAL / BLOCK)
                .map(|i| vec![i as u8 | 1; BLOCK])
                .collect();
            let mut i = 0;
            blocks.retain(|_| {
                i += 1;
                i % 64 == 0
            });
            blocks
        })
        .join()
        .unwrap();
        let before = rss_anon();
        assert!(release_free_pages(), "nothing was released");
        let after = rss_anon();
        assert_eq!(kept.len(), TOTAL / BLOCK / 64);
        // Other tests allocate meanwhile: a margin of 16 MiB of the 64 freed.
        assert!(
            before.saturating_sub(after) >= 48 << 20,
            "released {} KiB of {} KiB freed ({} KiB resident before, {} KiB after)",
            before.saturating_sub(after) >> 10,
            (TOTAL - TOTAL / 64) >> 10,
            before >> 10,
            after >> 10
        );
    }
}
