//! Trace selection for a suite: `traces.paths` (files, directories, globs relative to the
//! suite file) expanded by the one discovery function `import` also uses
//! ([`crate::trace::discover`]), with errors at the pattern's line.

use super::suite::TraceFile;
use super::{ConfigError, LoadedSuite};

/// What `traces.paths` selects: the files to read, and the entries passed over (symbolic links
/// met while walking, files that are not regular: `crate::trace::discover`), with the reason.
#[derive(Debug, Default)]
pub struct TraceSelection {
    pub files: Vec<TraceFile>,
    pub passed: Vec<crate::trace::discover::Passed>,
}

impl LoadedSuite {
    /// Expand `traces.paths` into files, sorted and de-duplicated, with the rules `import`
    /// uses (`crate::trace::discover`). A pattern that matches nothing is an error at its line.
    pub fn trace_files(&self) -> Result<Vec<TraceFile>, ConfigError> {
        Ok(self.trace_selection()?.files)
    }

    /// [`LoadedSuite::trace_files`], with the entries passed over.
    pub fn trace_selection(&self) -> Result<TraceSelection, ConfigError> {
        let mut out = std::collections::BTreeSet::new();
        let mut passed = std::collections::BTreeMap::new();
        let mut errs = Vec::new();
        for (i, pattern) in self.suite.traces.paths.iter().enumerate() {
            let at = ["traces", "paths", &i.to_string()];
            match crate::trace::discover::discover(&self.dir, pattern) {
                Ok(found) if found.files.is_empty() => errs.push(self.error_at(
                    &at,
                    match found.passed.first() {
                        Some(p) => format!(
                            "`{pattern}` matches no regular file (relative to {}): {}: {}",
                            self.dir.display(),
                            p.rel,
                            p.why
                        ),
                        None => format!(
                            "`{pattern}` matches no file (relative to {})",
                            self.dir.display()
                        ),
                    },
                )),
                Ok(found) => {
                    out.extend(found.files);
                    for p in found.passed {
                        passed.entry(p.path.clone()).or_insert(p);
                    }
                }
                Err(e) => errs.push(self.error_at(&at, format!("`{pattern}`: {e}"))),
            }
        }
        match ConfigError::combine(errs) {
            Some(e) => Err(e),
            None => Ok(TraceSelection {
                files: out.into_iter().collect(),
                passed: passed.into_values().collect(),
            }),
        }
    }
}
