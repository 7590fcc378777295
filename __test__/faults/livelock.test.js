'use strict'
// Item 12: the production livelock, end to end. Two processes with several
// orchestration dispatchers each contend for one instance while a side
// connection holds the advisory lock duroxide-pg's fetch waits on, for longer
// than orchestratorLockTimeoutMs, twice (before the first turn and while a
// completion is pending). With maxAttempts 3 the instance completes after the
// stalls (or ends as poison); max(attempt_count) in orchestrator_queue never
// passes maxAttempts + 1; no lease is seen already expired; no ack is refused
// for a stale lock token. Older duroxide-pg versions livelocked here for days.
const test = require('node:test')
const assert = require('node:assert/strict')
const { eventually, sleep } = require('../helpers')
const { Worker, pgFleet, historyOf, holdInstanceLock, psqlAsync, report } = require('./harness')

const MAX_ATTEMPTS = 3
const LOCK_MS = 2000
const STALL_MS = 3 * LOCK_MS

test('a stalled fetch contended by two processes completes or poisons; attempt_count stays bounded', { timeout: 180000 }, async (t) => {
  const { pg, client, cfg } = await pgFleet(t, 'dxf_livelock', {
    orchestrationConcurrency: 4,
    workerConcurrency: 2,
    dispatcherPollIntervalMs: 5,
    orchestratorLockTimeoutMs: LOCK_MS,
    orchestratorLockRenewalBufferMs: 500,
    maxAttempts: MAX_ATTEMPTS,
  })
  const fleet = [new Worker(t, cfg, { name: 'c1' }), new Worker(t, cfg, { name: 'c2' })]
  await Promise.all(fleet.map((w) => w.ready()))
  const id = 'contended'

  // Watches the queue and the instance's lease for the whole test.
  const seen = { maxAttempt: 0, leases: new Map(), samples: 0, maxWaiters: 0 }
  let watching = true
  const watcher = (async () => {
    while (watching) {
      const row = await psqlAsync(`SELECT (SELECT coalesce(max(attempt_count), 0) FROM ${pg.schema}.orchestrator_queue) || '|' ||
        coalesce((SELECT lock_token || '|' || (locked_until - (extract(epoch FROM clock_timestamp()) * 1000)::bigint)
                  FROM ${pg.schema}.instance_locks WHERE instance_id = '${id}'), '|') || '|' ||
        (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
           AND objid = (hashtext('${id}')::bigint & 4294967295)::text::oid)`)
      const [attempt, token, remaining, waiters] = row.split('|')
      seen.maxWaiters = Math.max(seen.maxWaiters, Number(waiters))
      seen.maxAttempt = Math.max(seen.maxAttempt, Number(attempt))
      if (token && !seen.leases.has(token)) seen.leases.set(token, Number(remaining))
      seen.samples++
      await sleep(50)
    }
  })()
  t.after(() => { watching = false })

  // Stall 1: every dispatcher picks the instance's start message and waits on its lock.
  let hold = await holdInstanceLock(t, id)
  // Each turn right after a stall holds its lease for a second, so the watcher sees it.
  await client.startOrchestration(id, 'Chain', { n: 3, ms: 20, slowAt: 1, slowMs: 1500, busyAt: [0, 2], busyMs: 1000 })
  await sleep(STALL_MS)
  await hold.release()

  // Stall 2: s1 is running; its completion will wait behind the lock.
  await eventually(async () => (await historyOf(client, pg.schema, id)).filter((e) => e.kind === 'ActivityScheduled').length >= 2,
    { timeoutMs: 60000, what: 'the second step to be scheduled' })
  hold = await holdInstanceLock(t, id)
  await sleep(STALL_MS)
  await hold.release()

  const s = await client.waitForOrchestration(id, 60000)
  watching = false
  await watcher

  if (s.status === 'Completed') assert.deepEqual(s.output, ['s0:done', 's1:done', 's2:done'])
  else assert.equal(s.errorCategory, 'poison', `${s.status}: ${s.error}`)
  assert.ok(seen.maxWaiters >= 2, `dispatchers of both processes queued on the stalled lock (saw ${seen.maxWaiters})`)
  assert.ok(seen.maxAttempt <= MAX_ATTEMPTS + 1, `max(attempt_count) reached ${seen.maxAttempt}`)
  assert.ok(seen.leases.size >= 2, `the watcher saw the leases of the turns after each stall (saw ${seen.leases.size})`)
  const expiredAtHandout = [...seen.leases.values()].filter((ms) => ms <= 0)
  assert.deepEqual(expiredAtHandout, [], 'a lease was first seen already expired')
  const refused = fleet.flatMap((w) => w.grep(/Invalid lock token/))
  assert.deepEqual(refused, [], 'no ack was refused for a stale lock token')
  const alarms = fleet.flatMap((w) => w.messages.filter((m) => m.type === 'runtime-event' && m.name !== 'poison'))
  assert.deepEqual(alarms, [], "no 'livelock' or 'lockLost' event")

  const stops = await Promise.all(fleet.map((w) => w.stop(5000)))
  for (const x of stops) assert.ok(x.exit, 'a member did not exit on its own after shutdown')
  report(t, `livelock: ${s.status} after two ${STALL_MS} ms stalls (lock ${LOCK_MS} ms, maxAttempts ${MAX_ATTEMPTS}); ` +
    `up to ${seen.maxWaiters} fetches waiting on the lock; max attempt_count ${seen.maxAttempt}; ${seen.leases.size} leases observed, shortest first-seen remaining ` +
    `${Math.min(...seen.leases.values())} ms; ${seen.samples} samples`)
})
