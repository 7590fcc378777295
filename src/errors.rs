//! The one error type of the native layer.
//!
//! Every variant has a stable `code` that becomes the `code` property of the
//! JS error napi throws or rejects with; `lib/errors.js` picks the `Error`
//! subclass from that property, so the message stays the message.
//!
//! napi carries a custom code two ways, and both end here:
//! - synchronous methods return `napi::Result<T, ErrorCode>` (spelled out:
//!   napi's macro recognises `Result` by name): napi uses the status string
//!   as the JS error's `code`;
//! - async methods resolve to [`Settled`]: napi turns an async method's error
//!   into its own fixed `Status` before it reaches JS, so a failed `Settled`
//!   builds the JS error itself, on the JS thread, when the promise settles.
//!
//! | variant           | JS class              | `code`                |
//! |-------------------|-----------------------|-----------------------|
//! | `InvalidOption`   | `InvalidOptionError`  | `ERR_INVALID_OPTION`  |
//! | `InvalidArgument` | `InvalidArgumentError`| `ERR_INVALID_ARGUMENT`|
//! | `NotFound`        | `NotFoundError`       | `ERR_NOT_FOUND`       |
//! | `AlreadyExists`   | `AlreadyExistsError`  | `ERR_ALREADY_EXISTS`  |
//! | `Timeout`         | `TimeoutError`        | `ERR_TIMEOUT`         |
//! | `Provider`        | `ProviderError`       | `ERR_PROVIDER`        |
//! | `RuntimeState`    | `RuntimeStateError`   | `ERR_RUNTIME_STATE`   |
//! | `Internal`        | `DuroxideError`       | `ERR_INTERNAL`        |
//!
//! Two codes are raised by the JS layer alone and have no variant here:
//! `ERR_ORCHESTRATION_FAILED` (a typed wait on a failed instance) and
//! `ERR_ABORTED` (a client wait ended by its `AbortSignal`, `lib/client-waits.js`).

use std::fmt;

use napi::bindgen_prelude::{ToNapiValue, TypeName, Unknown};

/// An error raised by the native layer, tagged with the JS `code` it becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BridgeError {
    /// A `RuntimeOptions` field (or provider option) is unknown or invalid.
    /// The message names the field and the value received.
    InvalidOption(String),
    /// A method argument is missing, of the wrong type or out of range.
    InvalidArgument(String),
    /// The instance, execution or value asked for does not exist.
    NotFound(String),
    /// An instance with the id a typed start was given already exists
    /// (stored, or its start waits in the queue).
    AlreadyExists(String),
    /// A wait ran out of time.
    Timeout(String),
    /// The storage provider failed (connection, SQL, migration, ...).
    Provider(String),
    /// The runtime is in the wrong lifecycle state for the call
    /// (already started, shut down, ...).
    RuntimeState(String),
    /// A bug in the bridge itself; never expected.
    Internal(String),
}

impl BridgeError {
    /// The stable `code` the JS error carries.
    pub fn code(&self) -> ErrorCode {
        match self {
            BridgeError::InvalidOption(_) => ErrorCode::InvalidOption,
            BridgeError::InvalidArgument(_) => ErrorCode::InvalidArgument,
            BridgeError::NotFound(_) => ErrorCode::NotFound,
            BridgeError::AlreadyExists(_) => ErrorCode::AlreadyExists,
            BridgeError::Timeout(_) => ErrorCode::Timeout,
            BridgeError::Provider(_) => ErrorCode::Provider,
            BridgeError::RuntimeState(_) => ErrorCode::RuntimeState,
            BridgeError::Internal(_) => ErrorCode::Internal,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            BridgeError::InvalidOption(m)
            | BridgeError::InvalidArgument(m)
            | BridgeError::NotFound(m)
            | BridgeError::AlreadyExists(m)
            | BridgeError::Timeout(m)
            | BridgeError::Provider(m)
            | BridgeError::RuntimeState(m)
            | BridgeError::Internal(m) => m,
        }
    }
}

/// For logs: the code, then the message.
impl fmt::Display for BridgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code().as_ref(), self.message())
    }
}

impl std::error::Error for BridgeError {}

/// The `code` property of a JS error raised by the native layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidOption,
    InvalidArgument,
    NotFound,
    AlreadyExists,
    Timeout,
    Provider,
    RuntimeState,
    Internal,
}

impl AsRef<str> for ErrorCode {
    fn as_ref(&self) -> &str {
        match self {
            ErrorCode::InvalidOption => "ERR_INVALID_OPTION",
            ErrorCode::InvalidArgument => "ERR_INVALID_ARGUMENT",
            ErrorCode::NotFound => "ERR_NOT_FOUND",
            ErrorCode::AlreadyExists => "ERR_ALREADY_EXISTS",
            ErrorCode::Timeout => "ERR_TIMEOUT",
            ErrorCode::Provider => "ERR_PROVIDER",
            ErrorCode::RuntimeState => "ERR_RUNTIME_STATE",
            ErrorCode::Internal => "ERR_INTERNAL",
        }
    }
}

impl From<BridgeError> for napi::Error<ErrorCode> {
    fn from(err: BridgeError) -> Self {
        let message = err.message().to_string();
        napi::Error::new(err.code(), message)
    }
}

/// napi's own failures (a value that would not convert) inside a native call.
impl From<napi::Error> for BridgeError {
    fn from(err: napi::Error) -> Self {
        BridgeError::Internal(format!("{}: {}", err.status, err.reason))
    }
}

/// What an async native method resolves to. A failure rejects the promise
/// with a JS error carrying the code (see the module docs for why this is
/// not a plain `napi::Result`). Declare the method with
/// `ts_return_type = "Promise<T>"`, since napi's type generator does not know
/// this wrapper.
pub struct Settled<T>(pub BridgeResult<T>);

impl<T> Settled<T> {
    /// Runs `body` and keeps its result for the JS thread.
    pub async fn of(body: impl std::future::Future<Output = BridgeResult<T>>) -> Self {
        Settled(body.await)
    }
}

impl<T: TypeName> TypeName for Settled<T> {
    fn type_name() -> &'static str {
        T::type_name()
    }

    fn value_type() -> napi::ValueType {
        T::value_type()
    }
}

impl<T: ToNapiValue> ToNapiValue for Settled<T> {
    unsafe fn to_napi_value(
        env: napi::sys::napi_env,
        val: Self,
    ) -> napi::Result<napi::sys::napi_value> {
        match val.0 {
            Ok(value) => T::to_napi_value(env, value),
            Err(err) => {
                // Built here, on the JS thread, and handed back by reference:
                // napi rejects with this very object, `code` included.
                let js = napi::JsError::from(napi::Error::<ErrorCode>::from(err)).into_value(env);
                Err(napi::Error::from(Unknown::from_raw_unchecked(env, js)))
            }
        }
    }
}

impl From<duroxide::ClientError> for BridgeError {
    fn from(err: duroxide::ClientError) -> Self {
        use duroxide::ClientError as E;
        match err {
            E::Provider(e) => BridgeError::Provider(e.to_string()),
            E::ManagementNotAvailable => {
                BridgeError::Provider("the provider has no management capability".into())
            }
            E::InvalidInput { message } => BridgeError::InvalidArgument(message),
            E::Timeout => BridgeError::Timeout("operation timed out".into()),
            E::InstanceStillRunning { instance_id } => BridgeError::RuntimeState(format!(
                "instance '{instance_id}' is still running (pass force = true to delete it)"
            )),
            E::CannotDeleteSubOrchestration { instance_id } => BridgeError::InvalidArgument(
                format!("instance '{instance_id}' is a sub-orchestration; delete its root instead"),
            ),
            E::InstanceNotFound { instance_id } => {
                BridgeError::NotFound(format!("instance '{instance_id}' not found"))
            }
        }
    }
}

/// Result alias for the native layer.
pub type BridgeResult<T> = std::result::Result<T, BridgeError>;
