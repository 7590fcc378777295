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
use crate::rules;

#[derive(Default)]
pub struct Registrations {
    activities: BTreeSet<String>,
    orchestrations: BTreeMap<String, BTreeSet<Version>>,
}

impl Registrations {
    pub fn add_activity(&mut self, name: &str) -> BridgeResult<()> {
        rules::name("activity name", name)?;
        if !self.activities.insert(name.to_string()) {
            return Err(BridgeError::InvalidArgument(format!(
                "activity '{name}' is already registered on this runtime"
            )));
        }
        Ok(())
    }

    /// Adds `version` (default `1.0.0`) of orchestration `name`; returns
    /// the version as registered, which is what instances will report.
    pub fn add_orchestration(&mut self, name: &str, version: Option<&str>) -> BridgeResult<String> {
        rules::name("orchestration name", name)?;
        let v =
            rules::version("version", version.unwrap_or(rules::DEFAULT_VERSION)).map_err(|e| {
                BridgeError::InvalidArgument(format!("orchestration '{name}': {}", e.message()))
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
        let registered = v.to_string();
        versions.insert(v);
        Ok(registered)
    }

    /// The registered activity names.
    pub fn activity_names(&self) -> BTreeSet<String> {
        self.activities.clone()
    }

    /// The registered orchestration names.
    pub fn orchestration_names(&self) -> BTreeSet<String> {
        self.orchestrations.keys().cloned().collect()
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
            .add_orchestration("o", Some("v2"))
            .unwrap_err()
            .message()
            .contains("not a semver version"));
        assert_eq!(r.add_orchestration("o", Some("2.0.0")).unwrap(), "2.0.0");
        assert!(r
            .add_orchestration("o", Some("2.0.0"))
            .unwrap_err()
            .to_string()
            .contains("already registered"));
        assert!(r
            .add_orchestration("o", None)
            .unwrap_err()
            .to_string()
            .contains("ascending"));
        r.add_orchestration("o", Some("3.0.0")).unwrap();
        assert!(r.add_orchestration("", None).is_err());
        r.add_activity("a").unwrap();
        assert!(r.add_activity("a").is_err());
    }
}
