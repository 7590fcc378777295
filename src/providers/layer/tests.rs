//! `Stacked` must forward every method of the traits it implements: a method
//! it leaves out would run the trait's default body instead of the store's.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::FORWARDED;

/// The duroxide version `Cargo.lock` resolves.
fn locked_version(krate: &str) -> String {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock"))
        .expect("Cargo.lock");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == format!("name = \"{krate}\"") {
            let v = lines.next().expect("version line");
            return v
                .trim_start_matches("version = \"")
                .trim_end_matches('"')
                .to_string();
        }
    }
    panic!("{krate} is not in Cargo.lock");
}

/// `providers/mod.rs` of that release, from cargo's registry sources.
fn trait_source() -> String {
    let version = locked_version("duroxide");
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").expect("HOME")).join(".cargo"));
    let registry = home.join("registry/src");
    for index in std::fs::read_dir(&registry).expect("cargo registry sources") {
        let file = index
            .unwrap()
            .path()
            .join(format!("duroxide-{version}/src/providers/mod.rs"));
        if let Ok(source) = std::fs::read_to_string(&file) {
            return source;
        }
    }
    panic!(
        "duroxide-{version} sources not found under {}",
        registry.display()
    );
}

/// Names of the methods declared in `pub trait $name` (doc comments skipped).
fn methods_of(source: &str, name: &str) -> BTreeSet<String> {
    let start = format!("pub trait {name}:");
    let mut lines = source.lines().skip_while(|l| !l.starts_with(&start));
    assert!(lines.next().is_some(), "trait {name} not found");
    lines
        .take_while(|l| *l != "}")
        .map(str::trim_start)
        .filter(|l| !l.starts_with("//"))
        .filter_map(|l| {
            let rest = l
                .strip_prefix("async fn ")
                .or_else(|| l.strip_prefix("fn "))?;
            let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
            Some(rest[..end].to_string())
        })
        .collect()
}

#[test]
fn every_trait_method_is_forwarded() {
    let source = trait_source();
    let provider = methods_of(&source, "Provider");
    let admin = methods_of(&source, "ProviderAdmin");
    assert!(provider.contains("fetch_orchestration_item") && admin.contains("list_instances"));
    let declared: BTreeSet<String> = provider.union(&admin).cloned().collect();
    let forwarded: BTreeSet<String> = FORWARDED.iter().map(|s| s.to_string()).collect();
    let missing: Vec<_> = declared.difference(&forwarded).collect();
    let unknown: Vec<_> = forwarded.difference(&declared).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "not forwarded: {missing:?}; forwarded but not in the traits: {unknown:?}"
    );
    assert_eq!(FORWARDED.len(), forwarded.len(), "a method is listed twice");
}
