'use strict'
// The wake-up layer (src/providers/wakeup.rs): idle dispatchers wait in their
// fetch and are woken by enqueues (in this process, and across processes by
// Postgres LISTEN/NOTIFY), by due times (timers), or by the fallback tick.
//
// Each test sets the fallback tick and dispatcherLongPollTimeoutMs far above
// what the test waits for, so it can only pass through the path it names:
// a wake-up that does not arrive costs a whole long poll, and the test's
// waits run out first.
const test = require('node:test')
const assert = require('node:assert/strict')
const { Client, PostgresProvider } = require('..')
const { DATABASE_URL, psql, uniqueName, pgSchema } = require('./helpers')
const { Worker, pgFleet, completionProblems, waitAll } = require('./faults/harness')
const { readEffects } = require('./faults/workers/catalog')

const LONG_POLL = { dispatcherPollIntervalMs: 10, dispatcherLongPollTimeoutMs: 120000 }
// Far longer than any wait below: what the tick would find, the test never sees.
// Wake-ups are a fast path: named, so `--fast-paths=off` keeps them here.
const NO_FALLBACK = { fallbackPollMs: 600000, fastPaths: true }
/** `cfg` with its members' provider options. */
const connecting = (cfg, connectOptions) => ({ ...cfg, connectOptions: { ...cfg.connectOptions, ...connectOptions } })
const WAIT_MS = 40000

function chainOutput(n) {
  return Array.from({ length: n }, (_, k) => `s${k}:done`)
}
function fanOutput(n) {
  return Array.from({ length: n }, (_, k) => `f${k}:done`)
}

test('a 3-process fleet woken by LISTEN/NOTIFY completes everything once', { timeout: 180000 }, async (t) => {
  const { pg, cfg } = await pgFleet(t, 'dxw_fleet', { ...LONG_POLL, orchestrationConcurrency: 2, workerConcurrency: 2 })
  // The starts' notifications come from this process's client: its provider
  // names the fast paths too (with them off it announces nothing, and only the
  // tick, far away here, would find its starts).
  const client = new Client(await PostgresProvider.connectWithSchema(DATABASE_URL, pg.schema, NO_FALLBACK))
  const fleet = [0, 1, 2].map((i) => new Worker(t, connecting(cfg, NO_FALLBACK), { name: `member-${i}` }))
  await Promise.all(fleet.map((w) => w.ready()))
  // One LISTEN connection per provider that fetches: the three members (this
  // process only runs a client). They connect in the background; each holds
  // a shared advisory lock on its channel (src/providers/wakeup/listen/census.rs).
  const listeners = () =>
    Number(
      psql(
        `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid ` +
          `WHERE a.application_name = 'duroxide_node_wakeup' AND l.locktype = 'advisory' AND l.objsubid = 2 ` +
          `AND l.classid = ${0x64786e77} AND l.objid = hashtext('duroxide_wakeup.${pg.schema}')::oid`,
      ),
    )
  for (let i = 0; i < 100 && listeners() < 3; i++) await new Promise((r) => setTimeout(r, 100))
  assert.equal(listeners(), 3, 'one listening connection per provider')

  const expected = new Map()
  for (let i = 0; i < 12; i++) {
    await client.startOrchestration(`chain-${i}`, 'Chain', { n: 3 })
    expected.set(`chain-${i}`, chainOutput(3))
    if (i % 3 === 0) {
      await client.startOrchestration(`fan-${i}`, 'FanOut', { n: 4 })
      expected.set(`fan-${i}`, fanOutput(4))
    }
  }
  await client.startOrchestration('timed', 'Timed', { ms: 300 })
  const problems = await completionProblems(client, pg.schema, expected)
  assert.deepEqual(problems, [])
  const timed = (await waitAll(client, ['timed'], WAIT_MS)).get('timed')
  assert.equal(timed.status, 'Completed')
  // Every activity ran exactly once: no member fetched work another held.
  for (const [id, want] of expected) {
    const keys = readEffects(cfg.effectsDir, id).map((e) => e.k).sort()
    assert.deepEqual(keys, want.map((w) => w.split(':')[0]).sort(), id)
  }
  for (const w of fleet) await w.stop()
})

test('a timer wakes its dispatcher at its due time without notifications', { timeout: 120000 }, async (t) => {
  const { client, cfg } = await pgFleet(t, 'dxw_timer', LONG_POLL)
  // Started before the member runs, so its first fetch finds it; after that
  // only the timer's due time can wake the member in time.
  await client.startOrchestration('timed', 'Timed', { ms: 500 })
  const member = new Worker(t, connecting(cfg, { ...NO_FALLBACK, listen: false }), { name: 'local-only' })
  await member.ready()
  const s = await client.waitForOrchestration('timed', WAIT_MS)
  assert.equal(s.status, 'Completed')
  assert.equal(s.output, 'after-timer:done')
  await member.stop()
})

test('a process that misses notifications still finishes the work by its fallback tick', { timeout: 120000 }, async (t) => {
  const { pg, client, cfg } = await pgFleet(t, 'dxw_deaf', LONG_POLL)
  // No LISTEN: work started from this process reaches the member only through
  // its fallback tick (200 ms here).
  const member = new Worker(t, connecting(cfg, { listen: false, fallbackPollMs: 200, fastPaths: true }), { name: 'deaf' })
  await member.ready()
  const expected = new Map()
  for (let i = 0; i < 5; i++) {
    await client.startOrchestration(`deaf-${i}`, 'Chain', { n: 2 })
    expected.set(`deaf-${i}`, chainOutput(2))
  }
  assert.deepEqual(await completionProblems(client, pg.schema, expected), [])
  await member.stop()
})

/** xact_commit of `db`, once no session of it is left (a session's counters are flushed when it ends). */
async function committed(db) {
  for (let i = 0; i < 200; i++) {
    if (psql(`SELECT count(*) FROM pg_stat_activity WHERE datname = '${db}'`) === '0') break
    await new Promise((r) => setTimeout(r, 50))
  }
  return Number(psql(`SELECT xact_commit FROM pg_stat_database WHERE datname = '${db}'`))
}

/** Transactions one idle member causes in its own database over `idleMs`, connect to exit. */
async function idleTransactions(t, connectOptions, idleMs) {
  const db = uniqueName('dxw_idle')
  psql(`CREATE DATABASE ${db}`)
  t.after(() => psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`))
  const url = new URL(DATABASE_URL)
  url.pathname = `/${db}`
  const before = await committed(db)
  const cfg = { backend: 'postgres', url: url.toString(), schema: 'idle', options: { dispatcherPollIntervalMs: 10 }, connectOptions }
  const member = new Worker(t, cfg, { name: `idle-${connectOptions.fastPaths === false ? 'polling' : 'waiting'}` })
  await member.ready()
  await new Promise((r) => setTimeout(r, idleMs))
  await member.stop()
  return (await committed(db)) - before
}

test('an idle runtime that waits for wake-ups costs Postgres a small fraction of what 10 ms polling costs', { timeout: 120000 }, async (t) => {
  const idleMs = 4000
  // Connecting, migrating a fresh schema and shutting down, without idling.
  // fastPaths: false polls as the crate does.
  const base = await idleTransactions(t, { fastPaths: true }, 0)
  const polling = (await idleTransactions(t, { fastPaths: false }, idleMs)) - base
  const waiting = (await idleTransactions(t, { fastPaths: true }, idleMs)) - base
  const perSecond = (n) => (n / (idleMs / 1000)).toFixed(1)
  t.diagnostic(`idle runtime: ${perSecond(polling)} transactions/s polling every 10 ms, ${perSecond(waiting)}/s waiting for wake-ups (${(Math.max(waiting, 0) / polling * 100).toFixed(1)}%); connect to exit without idling: ${base}`)
  assert.ok(polling > 0, `polling caused ${polling} transactions`)
  assert.ok(waiting * 10 < polling, `${waiting} transactions waiting vs ${polling} polling over ${idleMs} ms`)
})

test('a client start in this process wakes a runtime of the same provider', { timeout: 60000 }, async (t) => {
  const pg = await pgSchema(t, 'dxw_local')
  const { Runtime } = require('..')
  // SQLite has only this half; on Postgres the same path runs before NOTIFY.
  const provider = await PostgresProvider.connectWithSchema(DATABASE_URL, pg.schema, { ...NO_FALLBACK, listen: false })
  const rt = new Runtime(provider, LONG_POLL)
  rt.registerActivity('Up', async (ctx, s) => s.toUpperCase())
  rt.registerOrchestration('Up', function* (ctx, s) { return yield ctx.scheduleActivity('Up', s) })
  await rt.start()
  // Let every dispatcher settle into its long poll first.
  await new Promise((r) => setTimeout(r, 300))
  const client = new Client(provider)
  await client.startOrchestration('local-1', 'Up', 'woken')
  const s = await client.waitForOrchestration('local-1', WAIT_MS)
  assert.equal(s.status, 'Completed')
  assert.equal(s.output, 'WOKEN')
  await rt.shutdown(0)
})
