//! W3C trace context, carried durably from `client.startOrchestration(...,
//! { traceparent, tracestate })` to every orchestration, sub-orchestration
//! and activity of the instance (`ctx.traceContext`).
//!
//! duroxide's work items carry no metadata, only an input string, so the
//! context travels inside the input: an envelope
//! `{"$duroxideTraceContext":{...},"input":"<the original input>"}` that the
//! bridges open before JS sees the input. It is in the history, so it
//! survives restarts and replays identically; the orchestration bridge puts
//! it around the inputs of the activities, sub-orchestrations, detached
//! starts and continue-as-new it schedules, so the whole tree shares the
//! trace. Inputs without a trace context are never wrapped.

use napi_derive::napi;
use serde::{Deserialize, Serialize};

use crate::errors::BridgeResult;
use crate::rules;

/// `{ traceparent, tracestate? }` (W3C Trace Context).
#[napi(object)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceContext {
    pub traceparent: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tracestate: Option<String>,
}

impl TraceContext {
    /// Checks both headers; `field` is the JS name of the options object.
    pub(crate) fn validate(&self, field: &str) -> BridgeResult<()> {
        rules::traceparent(&format!("{field}.traceparent"), &self.traceparent)?;
        if let Some(state) = &self.tracestate {
            rules::tracestate(&format!("{field}.tracestate"), state)?;
        }
        Ok(())
    }
}

/// The key is also the prefix that tells an envelope from an ordinary input
/// without parsing it.
const PREFIX: &str = "{\"$duroxideTraceContext\":";

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    #[serde(rename = "$duroxideTraceContext")]
    trace: TraceContext,
    input: String,
}

/// `input` inside an envelope carrying `trace`.
pub(crate) fn wrap(input: String, trace: &TraceContext) -> String {
    let envelope = Envelope {
        trace: trace.clone(),
        input,
    };
    serde_json::to_string(&envelope).expect("an envelope encodes")
}

/// The original input and its trace context; an input that is not an
/// envelope comes back unchanged with `None`.
pub(crate) fn unwrap(input: String) -> (String, Option<TraceContext>) {
    if !input.starts_with(PREFIX) {
        return (input, None);
    }
    match serde_json::from_str::<Envelope>(&input) {
        Ok(e) => (e.input, Some(e.trace)),
        Err(_) => (input, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_round_trips_and_plain_inputs_pass_through() {
        let trace = TraceContext {
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into(),
            tracestate: Some("rojo=1".into()),
        };
        let wrapped = wrap("{\"a\":1}".into(), &trace);
        assert!(wrapped.starts_with(PREFIX), "{wrapped}");
        assert_eq!(unwrap(wrapped), ("{\"a\":1}".to_string(), Some(trace)));
        let plain = "{\"$duroxideTraceContext\":1}".to_string();
        assert_eq!(unwrap(plain.clone()), (plain, None));
        assert_eq!(unwrap("42".into()), ("42".to_string(), None));
    }
}
