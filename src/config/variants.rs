//! Engine variants of a suite: `[engine.base]` merged with each `[engine.variants.<name>]`
//! and each `[engine.grid]` combination (one merge rule: [`crate::confcore::merge`]), and the
//! baseline.

use super::suite::Variant;
use super::validate::is_file_key;
use super::{did_you_mean, ConfigError, LoadedSuite};

impl LoadedSuite {
    /// Rewrite `file` / `*_file` strings to absolute paths.
    pub(super) fn absolutize_files(&self, v: &mut toml::Value, key_is_file: bool) {
        match v {
            toml::Value::String(s) if key_is_file => {
                *s = self.resolve(s).display().to_string();
            }
            toml::Value::Table(t) => {
                for (k, v) in t.iter_mut() {
                    let f = is_file_key(k);
                    self.absolutize_files(v, f);
                }
            }
            toml::Value::Array(a) => {
                for v in a {
                    self.absolutize_files(v, key_is_file);
                }
            }
            _ => {}
        }
    }

    /// Resolve the relative paths of `external.command` against the suite's folder.
    fn absolutize_external(&self, engine: &mut toml::Value) {
        let Some(cmd) = engine
            .get_mut("external")
            .and_then(|e| e.get_mut("command"))
            .and_then(toml::Value::as_array_mut)
        else {
            return;
        };
        let Some(argv) = cmd
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<String>>>()
        else {
            return; // not strings: the typed pass names the error
        };
        let mut spec = crate::engine::external::ExternalSpec {
            command: argv,
            timeout_secs: None,
            env: Default::default(),
            config: None,
        };
        spec.absolutize(&self.dir);
        *cmd = spec.command.into_iter().map(toml::Value::String).collect();
    }

    /// The variant `name`: `[engine.base]` with `overrides` merged in, files made absolute.
    fn make_variant(
        &self,
        name: String,
        overrides: toml::Table,
        defined_at: Vec<String>,
    ) -> Variant {
        let mut merged = self.suite.engine.base.clone();
        if overrides.contains_key("external") {
            // An external engine replaces the base's preset and layers for this variant
            // (window, counter, system prompt and tools still apply).
            merged.retain(|k, _| {
                !matches!(k, "preset" | "layers" | "tier")
                    && crate::engine::layers::entry(k).is_none()
            });
        }
        crate::confcore::merge::merge_toml(&mut merged, &overrides);
        let mut merged = toml::Value::Table(merged);
        self.absolutize_files(&mut merged, false);
        self.absolutize_external(&mut merged);
        let toml::Value::Table(engine) = merged else {
            unreachable!("merging tables yields a table")
        };
        Variant {
            name,
            engine,
            overrides,
            defined_at,
            config: Default::default(),
        }
    }

    /// `[engine.base]` alone, as the variant `base` a suite without variants has.
    pub(super) fn base_variant(&self) -> Variant {
        self.make_variant(
            "base".into(),
            toml::Table::new(),
            vec!["engine".into(), "base".into()],
        )
    }

    pub(super) fn expand_variants(&self) -> Result<Vec<Variant>, ConfigError> {
        let e = &self.suite.engine;
        let mut out = Vec::new();
        let mut errs = Vec::new();
        // In the order the suite defines them (the table is read sorted by name: `g10` came
        // before `g2`, a sweep's variants out of the order written).
        let mut defined: Vec<(&String, &toml::Table)> = e.variants.iter().collect();
        defined.sort_by_key(|(name, _)| self.source.line_of(&["engine", "variants", name]));
        for (name, t) in defined {
            if name.is_empty() || name.contains('/') || name.chars().any(char::is_control) {
                errs.push(self.error_at(
                    &["engine", "variants", name],
                    format!("variant name `{name}` must be non-empty and contain no `/`"),
                ));
                continue;
            }
            out.push(self.make_variant(
                name.clone(),
                t.clone(),
                vec!["engine".into(), "variants".into(), name.clone()],
            ));
        }
        // Grid: flatten nested tables and dotted keys into key paths; every leaf is a list.
        let mut dims: Vec<(Vec<String>, Vec<toml::Value>)> = Vec::new();
        fn leaves(
            t: &toml::Table,
            prefix: &mut Vec<String>,
            out: &mut Vec<(Vec<String>, toml::Value)>,
        ) {
            for (k, v) in t {
                let n = prefix.len();
                prefix.extend(k.split('.').map(str::to_string));
                match v {
                    toml::Value::Table(inner) => leaves(inner, prefix, out),
                    other => out.push((prefix.clone(), other.clone())),
                }
                prefix.truncate(n);
            }
        }
        let mut flat = Vec::new();
        leaves(&e.grid, &mut Vec::new(), &mut flat);
        for (path, v) in flat {
            let mut src = vec!["engine", "grid"];
            src.extend(path.iter().map(|s| s.as_str()));
            match v {
                toml::Value::Array(values) if !values.is_empty() => dims.push((path, values)),
                other => {
                    let shown = if src.len() > 2 && !self.source.contains(&src) {
                        // Dotted quoted key (`"a.b" = [..]`): point at the grid table.
                        vec!["engine", "grid"]
                    } else {
                        src.clone()
                    };
                    errs.push(self.error_at(
                        &shown,
                        format!(
                            "grid key `{}` must be a non-empty list of values to sweep, got {}",
                            path.join("."),
                            if other.is_array() {
                                "an empty list"
                            } else {
                                other.type_str()
                            }
                        ),
                    ));
                }
            }
        }
        if errs.is_empty() && !dims.is_empty() {
            let mut idx = vec![0usize; dims.len()];
            'combos: loop {
                let mut overrides = toml::Table::new();
                let mut name_parts = Vec::new();
                for (d, (path, values)) in dims.iter().enumerate() {
                    let v = &values[idx[d]];
                    set_path(&mut overrides, path, v.clone());
                    name_parts.push(format!("{}={}", path.join("."), value_label(v)));
                }
                out.push(self.make_variant(
                    name_parts.join(","),
                    overrides,
                    vec!["engine".into(), "grid".into()],
                ));
                // Odometer: last dimension fastest.
                let mut d = dims.len();
                loop {
                    if d == 0 {
                        break 'combos;
                    }
                    d -= 1;
                    idx[d] += 1;
                    if idx[d] < dims[d].1.len() {
                        break;
                    }
                    idx[d] = 0;
                }
            }
        }
        if out.is_empty() && errs.is_empty() {
            out.push(self.base_variant());
        }
        let mut seen = std::collections::HashSet::new();
        for v in &out {
            if !seen.insert(v.name.clone()) {
                errs.push(self.error_at(
                    &["engine", "grid"],
                    format!(
                        "variant name `{}` is defined twice (by `[engine.variants]` and the grid)",
                        v.name
                    ),
                ));
            }
        }
        match ConfigError::combine(errs) {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    pub(super) fn pick_baseline(&self) -> Result<String, ConfigError> {
        let names: Vec<&str> = self.variants.iter().map(|v| v.name.as_str()).collect();
        match &self.suite.engine.baseline {
            Some(b) if names.contains(&b.as_str()) => Ok(b.clone()),
            Some(b) => Err(self.error_at(
                &["engine", "baseline"],
                format!(
                    "baseline `{b}` is not a variant{}; variants: {}",
                    did_you_mean(b, names.iter().copied()),
                    names.join(", ")
                ),
            )),
            None if names.len() == 1 => Ok(names[0].to_string()),
            None if names.contains(&"baseline") => Ok("baseline".into()),
            None => Err(self.error_at(
                &["engine"],
                format!(
                    "several engine variants and no baseline: set `baseline = \"<variant>\"` in `[engine]` to one of: {}",
                    names.join(", ")
                ),
            )),
        }
    }
}

fn set_path(t: &mut toml::Table, path: &[String], v: toml::Value) {
    if path.len() == 1 {
        t.insert(path[0].clone(), v);
        return;
    }
    let child = t
        .entry(path[0].clone())
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if !child.is_table() {
        *child = toml::Value::Table(toml::Table::new());
    }
    if let toml::Value::Table(c) = child {
        set_path(c, &path[1..], v);
    }
}

/// Short label of a grid value for variant names: strings bare, everything else as TOML.
fn value_label(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
