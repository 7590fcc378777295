//! What a store's error means, in one place. duroxide's `ProviderError` carries
//! only a message and a retryable flag, so the binding tells the cases apart by
//! the texts duroxide 0.1.32's SQLite store and duroxide-pg 0.1.38 write (and
//! the server texts they pass through). The tests below pin each text; an
//! upgrade of either crate that rewords one fails them.

use duroxide::providers::ProviderError;

/// The kinds of store error the binding reacts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProviderFault {
    /// Postgres SQLSTATE 40P01; duroxide-pg marks it retryable.
    Deadlock,
    /// The lock token is unknown or its lease expired (orchestration or
    /// activity lock): the work was, or will be, handed to someone else.
    InvalidLock,
    /// duroxide-pg: the activity's queue row is gone (cancelled, or taken over
    /// after its lease expired) when its result is acked.
    LostLock,
    /// The Postgres session was terminated (SQLSTATE 57P01/57P02/57P03), or a
    /// new one could not be set up while the server restarts; the statement
    /// did not commit (or was never sent).
    Terminated,
    /// SQLITE_BUSY and its extended codes, and SQLITE_LOCKED: the table locks
    /// of an in-memory (shared-cache) database, which sqlx reports as "database
    /// is deadlocked"; the transaction did not commit.
    SqliteBusy,
    /// A permanent "not found" for an instance or execution.
    NotFound,
    /// A delete without `force` of an instance that still runs.
    DeleteRunning,
}

/// Messages of SQLSTATE 57P01, 57P02 and 57P03 as Postgres words them, and
/// sqlx's TLS handshake failure (with `sslmode=prefer`, a server that closes a
/// new connection during a restart fails the handshake: "unexpected EOF"),
/// which duroxide-pg passes on as a permanent "Unexpected error" and which
/// otherwise failed an orchestration's ack for good (the fault suite's
/// Postgres restart test, once).
const TERMINATED: &[&str] = &[
    "terminating connection due to administrator command",
    "terminating connection because of crash of another server process",
    "terminating connection due to unexpected postmaster exit",
    "the database system is shutting down",
    "the database system is starting up",
    "the database system is in recovery mode",
    "error occurred while attempting to establish a TLS connection",
];

/// The part of [`TERMINATED`] that refuses a session before it runs
/// anything: its call certainly did not commit.
const NEVER_RAN: &[&str] = &[
    "the database system is shutting down",
    "the database system is starting up",
    "the database system is in recovery mode",
    "error occurred while attempting to establish a TLS connection",
];

impl ProviderFault {
    /// `err` is a terminated session that was refused before it ran the
    /// call (so the call did not commit), not one ended mid-call.
    pub(crate) fn never_ran(err: &ProviderError) -> bool {
        NEVER_RAN.iter().any(|t| err.message.contains(t))
    }

    /// The kind of `err`, or `None` for errors the binding passes on as they are.
    pub(crate) fn of(err: &ProviderError) -> Option<Self> {
        let m = err.message.as_str();
        if TERMINATED.iter().any(|t| m.contains(t)) {
            return Some(Self::Terminated);
        }
        // duroxide's SQLite store prefixes busy errors with "Database locked"
        // and marks them retryable; the driver's own text follows.
        if err.is_retryable()
            && (m.contains("database is locked")
                || m.contains("SQLITE_BUSY")
                || m.contains("database table is locked")
                || m.contains("database is deadlocked"))
        {
            return Some(Self::SqliteBusy);
        }
        if m.to_ascii_lowercase().contains("deadlock detected") || m.contains("40P01") {
            return Some(Self::Deadlock);
        }
        if m.contains("Invalid lock token") || m.contains("lock expired") {
            return Some(Self::InvalidLock);
        }
        if m.contains("Worker queue item not found") {
            return Some(Self::LostLock);
        }
        if m.contains("is Running. Use force") || m.contains("is still running") {
            return Some(Self::DeleteRunning);
        }
        if !err.is_retryable() && m.to_ascii_lowercase().contains("not found") {
            return Some(Self::NotFound);
        }
        None
    }

    pub(crate) fn is(err: &ProviderError, kind: Self) -> bool {
        Self::of(err) == Some(kind)
    }

    /// An ack of an activity result found its lock gone, in either store's words.
    pub(crate) fn work_lock_gone(err: &ProviderError) -> bool {
        matches!(Self::of(err), Some(Self::InvalidLock | Self::LostLock))
    }
}

#[cfg(test)]
mod tests {
    use super::ProviderFault::{self, *};
    use duroxide::providers::ProviderError;

    fn kind(retryable: bool, message: &str) -> Option<ProviderFault> {
        let err = if retryable {
            ProviderError::retryable("op", message)
        } else {
            ProviderError::permanent("op", message)
        };
        ProviderFault::of(&err)
    }

    #[test]
    fn postgres_texts() {
        // duroxide-pg `sqlx_to_provider_error` for 40P01.
        assert_eq!(
            kind(
                true,
                "Deadlock detected: error returned from database: deadlock detected"
            ),
            Some(Deadlock)
        );
        // Raised by duroxide-pg's ack procedures; returned as is.
        assert_eq!(kind(false, "Invalid lock token"), Some(InvalidLock));
        assert_eq!(
            kind(false, "Invalid lock token or already acked"),
            Some(InvalidLock)
        );
        assert_eq!(
            kind(false, "Worker queue item not found or already processed"),
            Some(LostLock)
        );
        // Server texts of 57P01..57P03, wrapped as a permanent database error.
        assert_eq!(
            kind(
                false,
                "Database error: error returned from database: terminating connection due to \
                 administrator command"
            ),
            Some(Terminated)
        );
        assert_eq!(
            kind(false, "Database error: error returned from database: the database system is shutting down"),
            Some(Terminated)
        );
        assert_eq!(
            kind(
                false,
                "Unexpected error: error occurred while attempting to establish a TLS connection: \
                 unexpected EOF"
            ),
            Some(Terminated)
        );
        assert_eq!(kind(false, "Instance not found"), Some(NotFound));
        assert_eq!(kind(false, "Execution not found"), Some(NotFound));
        assert_eq!(kind(false, "Instance not found: order-1"), Some(NotFound));
        // duroxide-pg's delete procedure, through sqlx's Display.
        assert_eq!(
            kind(
                false,
                "error returned from database: Instance order-1 is Running. Use force=true to delete."
            ),
            Some(DeleteRunning)
        );
    }

    #[test]
    fn sqlite_texts() {
        assert_eq!(
            kind(
                true,
                "Database locked: error returned from database: (code: 517) database is locked"
            ),
            Some(SqliteBusy)
        );
        assert_eq!(
            kind(
                true,
                "Database locked: error returned from database: (code: 5) database is locked"
            ),
            Some(SqliteBusy)
        );
        assert_eq!(
            kind(
                true,
                "error returned from database: (code: 6) database is deadlocked"
            ),
            Some(SqliteBusy)
        );
        // A permanent error is not a busy one, whatever it says.
        assert_eq!(kind(false, "database is locked"), None);
        assert_eq!(kind(false, "Instance lock expired"), Some(InvalidLock));
        assert_eq!(
            kind(
                false,
                "Activity was cancelled or lock expired (worker queue row not found or lock invalid)"
            ),
            Some(InvalidLock)
        );
        assert_eq!(kind(false, "Instance i1 not found"), Some(NotFound));
        assert_eq!(
            kind(false, "Execution 3 not found for instance i1"),
            Some(NotFound)
        );
        assert_eq!(
            kind(
                false,
                "Instance i1 is still running. Use force=true to delete anyway, or cancel first."
            ),
            Some(DeleteRunning)
        );
    }

    #[test]
    fn other_errors_have_no_kind() {
        assert_eq!(kind(true, "Connection error: connection reset"), None);
        assert_eq!(
            kind(false, "Constraint violation: UNIQUE constraint failed"),
            None
        );
        // A retryable "not found" (a transient read) is not an answer.
        assert_eq!(kind(true, "table not found"), None);
    }

    #[test]
    fn an_activity_lock_is_gone_in_either_stores_words() {
        for m in [
            "Worker queue item not found or already processed",
            "Invalid lock token or already acked",
            "Activity was cancelled or lock expired (worker queue row not found or lock invalid)",
        ] {
            assert!(
                ProviderFault::work_lock_gone(&ProviderError::permanent("ack_work_item", m)),
                "{m}"
            );
        }
        assert!(!ProviderFault::work_lock_gone(&ProviderError::permanent(
            "ack_work_item",
            "Instance not found"
        )));
    }
}
