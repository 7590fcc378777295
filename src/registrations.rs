//! The handler names a runtime registered, checked at the call that adds them.
//!
//! The JS functions themselves live in the JS `Runtime` object; Rust keeps the
//! names and versions so it can validate them (duroxide's registry builder
//! panics on bad semver and on out-of-order versions) and build the crate's
//! registries at `start()`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use duroxide::runtime::registry::{ActivityRegistry, OrchestrationRegistry};
use semver::Version;

use crate::bridge::{activity, orchestration, Bridge};
use crate::errors::{BridgeError, BridgeResult};

/// The version a plain `registerOrchestration` registers, as duroxide does.
pub const DEFAULT_VERSION: &str = "1.0.0";

#[derive(Default)]
pub struct Registrations {
    activities: BTreeSet<String>,
    orchestrations: BTreeMap<String, BTreeSet<Version>>,
}

fn check_name(what: &str, name: &str) -> BridgeResult<()> {
    if name.trim().is_empty() {
        return Err(BridgeError::InvalidArgument(format!(
            "{what} name must be a non-empty string"
        )));
    }
    Ok(())
}

impl Registrations {
    pub fn add_activity(&mut self, name: &str) -> BridgeResult<()> {
        check_name("activity", name)?;
        if !self.activities.insert(name.to_string()) {
            return Err(BridgeError::InvalidArgument(format!(
                "activity '{name}' is already registered on this runtime"
            )));
        }
        Ok(())
    }

    pub fn add_orchestration(&mut self, name: &str, version: &str) -> BridgeResult<()> {
        check_name("orchestration", name)?;
        let v = Version::parse(version).map_err(|e| {
            BridgeError::InvalidArgument(format!(
                "version '{version}' of orchestration '{name}' is not semver (for example '1.2.0'): {e}"
            ))
        })?;
        let versions = self.orchestrations.entry(name.to_string()).or_default();
        if versions.contains(&v) {
            return Err(BridgeError::InvalidArgument(format!(
                "orchestration '{name}' version {v} is already registered on this runtime"
            )));
        }
        if let Some(latest) = versions.iter().next_back() {
            if &v < latest {
                return Err(BridgeError::InvalidArgument(format!(
                    "orchestration '{name}' version {v} registered after {latest}; \
                     register versions in ascending order"
                )));
            }
        }
        versions.insert(v);
        Ok(())
    }

    /// Builds duroxide's registries; every handler reaches JS through `bridge`.
    pub fn build(&self, bridge: &Arc<Bridge>) -> (ActivityRegistry, OrchestrationRegistry) {
        let mut activities = ActivityRegistry::builder();
        for name in &self.activities {
            let bridge = bridge.clone();
            activities = activities.register(name.clone(), move |ctx, input| {
                activity::run(bridge.clone(), ctx, input)
            });
        }
        let mut orchestrations = OrchestrationRegistry::builder();
        for (name, versions) in &self.orchestrations {
            for version in versions {
                let bridge = bridge.clone();
                orchestrations = orchestrations.register_versioned(
                    name.clone(),
                    version.to_string(),
                    move |ctx, input| orchestration::run(bridge.clone(), ctx, input),
                );
            }
        }
        (activities.build(), orchestrations.build())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_validated_before_the_crate_sees_them() {
        let mut r = Registrations::default();
        assert!(r
            .add_orchestration("o", "v2")
            .unwrap_err()
            .to_string()
            .contains("not semver"));
        r.add_orchestration("o", "2.0.0").unwrap();
        assert!(r
            .add_orchestration("o", "2.0.0")
            .unwrap_err()
            .to_string()
            .contains("already registered"));
        assert!(r
            .add_orchestration("o", "1.0.0")
            .unwrap_err()
            .to_string()
            .contains("ascending"));
        r.add_orchestration("o", "3.0.0").unwrap();
        assert!(r.add_orchestration("", "1.0.0").is_err());
        r.add_activity("a").unwrap();
        assert!(r.add_activity("a").is_err());
    }
}
