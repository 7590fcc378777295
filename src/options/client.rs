//! JS `ClientOptions` -> what a `NativeClient` enforces. The client has one
//! option, shared with the runtime: `maxPayloadBytes`.

use serde_json::{json, Map, Value};

use super::fields::{invalid, show, Fields};
use crate::errors::BridgeResult;

/// Every JS option name of a client.
pub(crate) const CLIENT_OPTION_NAMES: &[&str] = &["maxPayloadBytes"];

/// A client's options, defaults filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClientOptions {
    /// `maxPayloadBytes`: the largest JSON text an input or event may have.
    pub(crate) max_payload_bytes: u32,
}

impl ClientOptions {
    /// The options under their JS names, as `client.effectiveOptions()` returns them.
    pub(crate) fn effective(&self) -> Value {
        json!({ "maxPayloadBytes": self.max_payload_bytes })
    }
}

/// Parses `new Client(provider, options)`'s options (`None`, `null` or an
/// object); failures are `InvalidOption`, as for a runtime.
pub(crate) fn parse_client_options(value: Option<&Value>) -> BridgeResult<ClientOptions> {
    let empty = Map::new();
    let obj = match value {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(invalid(format!(
                "options must be an object, got {}",
                show(other)
            )))
        }
    };
    let o = Fields::new(obj, "", CLIENT_OPTION_NAMES)?;
    Ok(ClientOptions {
        max_payload_bytes: super::max_payload_bytes(&o)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::DEFAULT_MAX_PAYLOAD_BYTES;

    #[test]
    fn client_options_default_and_refuse() {
        assert_eq!(
            parse_client_options(None).unwrap().max_payload_bytes,
            DEFAULT_MAX_PAYLOAD_BYTES
        );
        let set = json!({ "maxPayloadBytes": 10 });
        assert_eq!(
            parse_client_options(Some(&set)).unwrap().max_payload_bytes,
            10
        );
        for bad in [
            json!({ "maxPayloadBytes": 0 }),
            json!({ "maxPayloadBytes": 1.5 }),
            json!({ "maxPayloadBytes": "1MB" }),
            json!({ "maxPayloadBytes": 134_217_729 }),
        ] {
            let e = parse_client_options(Some(&bad)).unwrap_err();
            assert!(
                e.message().starts_with(
                    "maxPayloadBytes must be an integer between 1 and 134217728 (bytes)"
                ),
                "{}",
                e.message()
            );
        }
        let typo = json!({ "maxPayloadByte": 10 });
        assert!(parse_client_options(Some(&typo))
            .unwrap_err()
            .message()
            .contains("did you mean maxPayloadBytes"));
        assert!(parse_client_options(Some(&json!(5))).is_err());
    }
}
