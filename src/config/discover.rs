//! Trace selection for a suite: `traces.paths` (files, directories, globs relative to the
//! suite file) expanded by the one discovery function `import` also uses
//! ([`crate::trace::discover`]), with errors at the pattern's line.

use super::suite::TraceFile;
use super::{ConfigError, LoadedSuite};

impl LoadedSuite {
    /// Expand `traces.paths` into files, sorted and de-duplicated, with the rules `import`
    /// uses (`crate::trace::discover`). A pattern that matches nothing is an error at its line.
    pub fn trace_files(&self) -> Result<Vec<TraceFile>, ConfigError> {
        let mut out = std::collections::BTreeSet::new();
        let mut errs = Vec::new();
        for (i, pattern) in self.suite.traces.paths.iter().enumerate() {
            let at = ["traces", "paths", &i.to_string()];
            match crate::trace::discover::discover(&self.dir, pattern) {
                Ok(files) if files.is_empty() => errs.push(self.error_at(
                    &at,
                    format!(
                        "`{pattern}` matches no file (relative to {})",
                        self.dir.display()
                    ),
                )),
                Ok(files) => out.extend(files),
                Err(e) => errs.push(self.error_at(&at, format!("`{pattern}`: {e}"))),
            }
        }
        match ConfigError::combine(errs) {
            Some(e) => Err(e),
            None => Ok(out.into_iter().collect()),
        }
    }
}
