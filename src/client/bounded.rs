//! The store a `NativeClient` talks through: each call is bounded by
//! [`CALL_TIMEOUT`], so a client call made while the database is down rejects
//! with `ERR_PROVIDER` instead of waiting out the connection pool. duroxide-pg
//! fixes the pool's acquire timeout at 30 s for URL connections, and a pool
//! whose database is gone keeps reconnecting for that long; measured during a
//! Postgres stop, every client call hung 30 s.
//!
//! 10 s rides out a Postgres restart (a few seconds) and a pool briefly
//! saturated by the runtime's own fetches. Bulk deletes and prunes are not
//! bounded: their time grows with the data they remove.

use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::Provider;

use crate::providers::call_policy::CallPolicy;
use crate::providers::layer::{Policy, Stacked};

pub(super) const CALL_TIMEOUT: Duration = Duration::from_secs(10);

const UNBOUNDED: &[&str] = &[
    "delete_instances_atomic",
    "delete_instance",
    "delete_instance_bulk",
    "prune_executions",
    "prune_executions_bulk",
];

struct Deadline {
    limit: Duration,
}

impl CallPolicy for Deadline {
    fn deadline(&self, op: &'static str) -> Option<Duration> {
        (!UNBOUNDED.contains(&op)).then_some(self.limit)
    }
}

/// The provider a client uses: `inner` with every call bounded.
pub(super) fn bounded(inner: Arc<dyn Provider>) -> Arc<dyn Provider> {
    Stacked::over(
        Policy(Deadline {
            limit: CALL_TIMEOUT,
        }),
        inner,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::call_policy::run;
    use duroxide::providers::ProviderError;

    #[tokio::test]
    async fn a_call_that_never_answers_fails_at_the_limit() {
        let policy = Deadline {
            limit: Duration::from_millis(20),
        };
        let r: Result<(), ProviderError> = run(&policy, "read", || {
            std::future::pending::<Result<(), ProviderError>>()
        })
        .await;
        let e = r.unwrap_err();
        assert_eq!(e.operation, "read");
        assert!(e.message.contains("did not answer within 20 ms"));
    }

    #[tokio::test]
    async fn bulk_deletes_are_not_bounded() {
        let policy = Deadline {
            limit: Duration::from_millis(1),
        };
        let r: Result<u8, ProviderError> = run(&policy, "delete_instance_bulk", || async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok(7)
        })
        .await;
        assert_eq!(r.unwrap(), 7);
    }
}
