//! The layer registry, the engine configuration's keys and the presets agree: every preset
//! layer is registered, every registered layer is reachable from a preset and round-trips
//! through serde (alone and as an engine override table), every layer file is registered, and
//! the keys an engine table accepts are exactly the scalar keys plus the registered names.

use ctxbench::engine::layers::{entry, LayerConfig, REGISTRY};
use ctxbench::engine::presets::{preset, NAMES};
use ctxbench::engine::EngineConfig;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// Every layer of every preset, with the preset it comes from.
fn preset_layers() -> Vec<(&'static str, LayerConfig)> {
    NAMES
        .iter()
        .flat_map(|n| {
            let p = preset(n).unwrap_or_else(|| panic!("preset {n} listed but missing"));
            p.layers.into_iter().map(move |l| (*n, l))
        })
        .collect()
}

#[test]
fn registry_names_are_unique_and_snake_case() {
    let names: BTreeSet<&str> = REGISTRY.iter().map(|e| e.name).collect();
    assert_eq!(names.len(), REGISTRY.len(), "duplicate registry names");
    for n in names {
        assert!(
            n.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
            "{n}: table names are snake_case"
        );
        assert_eq!(entry(n).map(|e| e.name), Some(n));
    }
    assert!(entry("no_such_layer").is_none());
}

#[test]
fn every_preset_layer_is_registered_and_every_registered_layer_is_in_a_preset() {
    let mut used = BTreeSet::new();
    for (p, l) in preset_layers() {
        assert!(
            entry(l.name()).is_some(),
            "preset {p}: layer {} is not registered",
            l.name()
        );
        used.insert(l.name());
    }
    for e in REGISTRY {
        // Resolution configures the preset's layers, so a layer no preset has is unreachable.
        assert!(used.contains(e.name), "layer {} is in no preset", e.name);
    }
}

#[test]
fn every_registered_layer_round_trips_through_serde() {
    for (p, l) in preset_layers() {
        let e = entry(l.name()).unwrap();
        let v = l.to_value();
        assert!(v.is_object(), "{p}/{}: {v}", e.name);
        let back = (e.parse)(v.clone()).unwrap_or_else(|err| panic!("{p}/{}: {err}", e.name));
        assert_eq!(back, l, "{p}/{}", e.name);
        assert_eq!(back.to_value(), v);
        // Through TOML too (what suite files hold).
        let text = toml::to_string(&v).unwrap();
        let from_toml: Value =
            serde_json::to_value(toml::from_str::<toml::Table>(&text).unwrap()).unwrap();
        assert_eq!((e.parse)(from_toml).unwrap(), l, "{p}/{} via TOML", e.name);
    }
}

#[test]
fn a_full_override_table_per_layer_is_a_no_op() {
    for name in NAMES {
        let plain = EngineConfig {
            preset: Some(name.to_string()),
            ..Default::default()
        }
        .resolve(Some(100_000))
        .unwrap();
        let mut table = serde_json::Map::new();
        table.insert("preset".into(), json!(name));
        for l in &plain.layers {
            table.insert(l.name().into(), l.to_value());
        }
        let config = EngineConfig::from_value(Value::Object(table)).unwrap();
        assert_eq!(config.tables.len(), plain.layers.len(), "{name}");
        let mut again = config.resolve(Some(100_000)).unwrap();
        // A table naming `trigger` pins the model-tier default (core-agent's summarize).
        for (a, b) in again.layers.iter_mut().zip(&plain.layers) {
            if let (Some(f), Some(g)) = (a.tier_from_model(), b.clone().tier_from_model()) {
                assert!(!*f);
                *f = *g;
            }
        }
        assert_eq!(again, plain, "{name}");
    }
}

#[test]
fn engine_keys_are_the_scalar_keys_then_the_registry() {
    let e = EngineConfig::from_value(json!({"no_such_key": 1})).unwrap_err();
    let scalars = [
        "preset",
        "window",
        "max_output_tokens",
        "counter",
        "tier",
        "layers",
        "agent_model",
        "system_prompt",
        "tools",
        "overhead_tokens",
    ];
    let expected: Vec<String> = scalars
        .into_iter()
        .chain(REGISTRY.iter().map(|e| e.name))
        .map(|k| format!("`{k}`"))
        .collect();
    let listed = e
        .message
        .split_once("expected one of ")
        .unwrap_or_else(|| panic!("{}", e.message))
        .1;
    assert_eq!(listed, expected.join(", "));
    assert_eq!(e.key, vec!["no_such_key".to_string()]);
}

#[test]
fn every_layer_file_is_registered() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine/layers");
    let mut checked = 0;
    for f in std::fs::read_dir(&dir).unwrap() {
        let path = f.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        // A layer file implements `LayerSpec` (shared helpers such as `preview.rs` do not).
        let Some(at) = text.find("impl LayerSpec for ") else {
            continue;
        };
        let name = text[at..]
            .split("const NAME: &'static str = \"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap_or_else(|| panic!("{}: no NAME", path.display()));
        assert!(
            entry(name).is_some(),
            "{}: layer {name} is not in the registry (engine/layers/mod.rs)",
            path.display()
        );
        checked += 1;
    }
    assert_eq!(checked, REGISTRY.len(), "one file per registered layer");
}

#[test]
fn every_built_layer_emits_under_its_registered_name() {
    // `LayerSpec::NAME` (the table name) and `Layer::name` (the `layer` of its events and
    // of error messages) are written in the layer's file twice; they must agree.
    let meta = ctxbench::trace::TraceMeta::new("t", ctxbench::trace::SourceFormat::Canonical);
    let mut built = BTreeSet::new();
    for name in NAMES {
        let config = EngineConfig {
            preset: Some(name.to_string()),
            ..Default::default()
        }
        .resolve(Some(100_000))
        .unwrap();
        let layers = ctxbench::engine::layers::build(&config, &meta, &[], &[], None)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(layers.len(), config.layers.len(), "{name}");
        for (l, c) in layers.iter().zip(&config.layers) {
            assert_eq!(
                l.name(),
                c.name(),
                "preset {name}: built layer named differently"
            );
            built.insert(c.name());
        }
    }
    let registered: BTreeSet<&str> = REGISTRY.iter().map(|e| e.name).collect();
    assert_eq!(
        built, registered,
        "every registered layer is built by some preset"
    );
}

#[test]
fn every_registered_layer_is_documented() {
    // docs/engine.md's "How to add a layer" asks for a paragraph per layer.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/engine.md");
    let text = std::fs::read_to_string(&path).unwrap();
    for e in REGISTRY {
        assert!(
            text.contains(&format!("`{}`", e.name)) || text.contains(&format!("[{}]", e.name)),
            "layer {} is not described in docs/engine.md",
            e.name
        );
    }
}
