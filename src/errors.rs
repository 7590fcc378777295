//! The one error type of the native layer.
//!
//! Every variant maps to a stable `code` that the JS layer (`lib/errors.js`)
//! turns into an `Error` subclass. The code travels as a `[CODE] ` prefix of
//! the napi error reason because napi only carries a status and a string; the
//! JS wrapper strips the prefix and sets `error.code`.
//!
//! | variant           | JS class              | `code`                |
//! |-------------------|-----------------------|-----------------------|
//! | `InvalidOption`   | `InvalidOptionError`  | `ERR_INVALID_OPTION`  |
//! | `InvalidArgument` | `InvalidArgumentError`| `ERR_INVALID_ARGUMENT`|
//! | `NotFound`        | `NotFoundError`       | `ERR_NOT_FOUND`       |
//! | `Timeout`         | `TimeoutError`        | `ERR_TIMEOUT`         |
//! | `Provider`        | `ProviderError`       | `ERR_PROVIDER`        |
//! | `RuntimeState`    | `RuntimeStateError`   | `ERR_RUNTIME_STATE`   |
//! | `Internal`        | `DuroxideError`       | `ERR_INTERNAL`        |

use std::fmt;

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
    /// The stable `code` string the JS error carries.
    pub fn code(&self) -> &'static str {
        match self {
            BridgeError::InvalidOption(_) => "ERR_INVALID_OPTION",
            BridgeError::InvalidArgument(_) => "ERR_INVALID_ARGUMENT",
            BridgeError::NotFound(_) => "ERR_NOT_FOUND",
            BridgeError::Timeout(_) => "ERR_TIMEOUT",
            BridgeError::Provider(_) => "ERR_PROVIDER",
            BridgeError::RuntimeState(_) => "ERR_RUNTIME_STATE",
            BridgeError::Internal(_) => "ERR_INTERNAL",
        }
    }

    pub fn message(&self) -> &str {
        match self {
            BridgeError::InvalidOption(m)
            | BridgeError::InvalidArgument(m)
            | BridgeError::NotFound(m)
            | BridgeError::Timeout(m)
            | BridgeError::Provider(m)
            | BridgeError::RuntimeState(m)
            | BridgeError::Internal(m) => m,
        }
    }
}

impl fmt::Display for BridgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.code(), self.message())
    }
}

impl std::error::Error for BridgeError {}

impl From<BridgeError> for napi::Error {
    fn from(err: BridgeError) -> Self {
        napi::Error::new(napi::Status::GenericFailure, err.to_string())
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
