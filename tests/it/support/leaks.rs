//! Where a secret ended up: every file under a directory that holds it, and how many `***`
//! masks the files hold.
#![allow(dead_code)] // each test binary uses a different part of this module

use std::path::Path;

/// (files scanned, files holding `secret`, occurrences of the `***` mask) under `dir`.
pub fn scan(dir: &Path, secret: &str) -> (usize, Vec<String>, usize) {
    let mut files = 0;
    let mut leaks = Vec::new();
    let mut masks = 0;
    for entry in walkdir::WalkDir::new(dir) {
        let entry = entry.unwrap();
        if !entry.file_type().is_file() {
            continue;
        }
        files += 1;
        let bytes = std::fs::read(entry.path()).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        if text.contains(secret) {
            leaks.push(entry.path().display().to_string());
        }
        masks += text.matches("***").count();
    }
    (files, leaks, masks)
}
