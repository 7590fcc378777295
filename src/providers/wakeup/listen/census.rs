//! Whether another provider listens on our channel right now, asked once
//! our LISTEN is up, so a process that starts alone on its schema need not
//! announce through the [`GRACE`](super::peers) that waits for replies.
//!
//! Every listening connection holds a shared advisory lock on its channel
//! (keyed by [`CLASS`] and the channel's `hashtext`) for as long as its
//! session lives, and `pg_locks` shows every session's locks to any role.
//! The lock is taken before the look, so of two processes starting at once
//! at least one sees the other: whichever looks second finds the first's
//! lock, stays in its grace, and its presence makes the other answer.
//!
//! Anything unclear counts as "another may listen": a failed query, or the
//! lock refused because someone holds it exclusively. Processes of versions
//! without the lock are not seen; they are heard when they next announce,
//! as any sender is after the grace.

use sqlx::postgres::PgListener;

/// The first key of the listeners' advisory lock (`dxnw` in ASCII), so it
/// does not collide with the single-key locks duroxide takes.
pub(super) const CLASS: i32 = 0x6478_6e77;

/// Takes this session's share of `channel`'s listener lock, then tells
/// whether another session holds one.
pub(super) async fn others_may_listen(listener: &mut PgListener, channel: &str) -> bool {
    let held =
        sqlx::query_scalar::<_, bool>("SELECT pg_try_advisory_lock_shared($1, hashtext($2))")
            .bind(CLASS)
            .bind(channel)
            .fetch_one(&mut *listener)
            .await;
    if !matches!(held, Ok(true)) {
        return true;
    }
    let others = sqlx::query_scalar::<_, bool>(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_locks \
         WHERE locktype = 'advisory' AND objsubid = 2 \
           AND database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database()) \
           AND classid = $1::oid AND objid = hashtext($2)::oid \
           AND pid <> pg_backend_pid())",
    )
    .bind(CLASS)
    .bind(channel)
    .fetch_one(&mut *listener)
    .await;
    others.unwrap_or(true)
}
