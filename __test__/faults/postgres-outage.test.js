'use strict'
// Item 6: Postgres connections terminated under load, and a Postgres restart.
// The runtime reconnects and completes everything; client calls made while the
// database is down reject with ERR_PROVIDER within a bound (src/client/bounded.rs)
// instead of waiting out the pool's 30 s acquire timeout.
//
// The restart stops and starts the local cluster with pg_ctlcluster, which
// disrupts anything else using it for about ten seconds. DUROXIDE_PG_CTL (a
// JSON array, the command before 'stop'/'start') points it at another cluster,
// together with DATABASE_URL.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const { execFileSync } = require('node:child_process')
const { pgSchema, psql, eventually, sleep, DATABASE_URL, Client } = require('../helpers')
const { PostgresProvider } = require('../..')
const { Worker, effectsDir, historyOf, historyProblems, holdInstanceLock, report, completionProblems } = require('./harness')

// The bound of a client call (src/client/bounded.rs) plus scheduling slack.
const CLIENT_BOUND_MS = 10000 + 5000

function withAppName(url, name) {
  return `${url}${url.includes('?') ? '&' : '?'}application_name=${name}`
}

function pgCtl(action) {
  const base = process.env.DUROXIDE_PG_CTL
    ? JSON.parse(process.env.DUROXIDE_PG_CTL)
    : ['pg_ctlcluster', '--skip-systemctl-redirect', fs.readdirSync('/etc/postgresql')[0], 'main']
  const args = { stop: ['stop', '-m', 'fast'], crash: ['restart', '-m', 'immediate'] }[action] ?? [action]
  execFileSync(base[0], [...base.slice(1), ...args], { stdio: 'ignore', timeout: 60000 })
}

function pgUp() {
  try {
    psql('SELECT 1')
    return true
  } catch {
    return false
  }
}

function memberConfig(pg, fx, app) {
  return {
    backend: 'postgres',
    url: withAppName(pg.url, app),
    schema: pg.schema,
    effectsDir: fx,
    // A turn or activity whose ack died with the connection is retried after its lease.
    options: { orchestrationConcurrency: 4, workerConcurrency: 4, dispatcherPollIntervalMs: 10, workerLockTimeoutMs: 3000, workerLockRenewalBufferMs: 1000 },
  }
}

async function verify(client, schema, expected) {
  assert.deepEqual(await completionProblems(client, schema, expected), [])
}

async function startChains(client, prefix, count, expected) {
  for (let i = 0; i < count; i++) {
    await client.startOrchestration(`${prefix}-${i}`, 'Chain', { n: 4, ms: 100 })
    expected.set(`${prefix}-${i}`, ['s0:done', 's1:done', 's2:done', 's3:done'])
  }
}

test('pg_terminate_backend on the runtime and client connections under load: everything completes', { timeout: 180000 }, async (t) => {
  const pg = await pgSchema(t, 'dxf_term')
  const fx = effectsDir(t)
  const memberApp = `dxf_term_m_${process.pid}`
  const clientApp = `dxf_term_c_${process.pid}`
  const client = new Client(await PostgresProvider.connectWithSchema(withAppName(DATABASE_URL, clientApp), pg.schema))
  const member = new Worker(t, memberConfig(pg, fx, memberApp), { name: 'terminated' })
  await member.ready()

  const expected = new Map()
  await startChains(client, 'term', 60, expected)
  let terminated = 0
  for (let round = 0; round < 10; round++) {
    await sleep(300)
    const out = psql(`SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
      WHERE application_name IN ('${memberApp}', '${clientApp}') AND pid <> pg_backend_pid()`)
    terminated += Number(out)
  }
  assert.ok(terminated > 0, 'backends were terminated')
  // The client's pool replaced its dead connections.
  assert.notEqual((await client.getStatus('term-0')).status, 'NotFound')
  await verify(client, pg.schema, expected)
  const { stopped } = await member.stop(5000)
  const retried = member.grep(/was terminated; running it again/).length
  report(t, `terminate: ${terminated} backends killed in 10 rounds under load; ${expected.size} orchestrations completed; ` +
    `calls cut off and run again: ${retried}; provider errors seen by the runtime: ${stopped.metrics.providerErrors}`)
})

test('an ack whose backend is terminated mid-statement runs again instead of failing the instance', { timeout: 120000 }, async (t) => {
  const pg = await pgSchema(t, 'dxf_ackterm')
  const app = `dxf_ackterm_${process.pid}`
  const cfg = memberConfig(pg, effectsDir(t), app)
  cfg.options = { ...cfg.options, orchestratorLockTimeoutMs: 15000, orchestratorLockRenewalBufferMs: 5000 }
  const client = new Client(pg.provider)
  const member = new Worker(t, cfg, { name: 'ack-terminated' })
  await member.ready()
  const id = 'ack-cut'
  await client.startOrchestration(id, 'Chain', { n: 2, ms: 10, busyAt: 1, busyMs: 1500 })

  // Mid-turn (its fetch has committed), hold the advisory lock its ack takes,
  // so the ack statement waits on it; then terminate that backend.
  await member.waitFor((m) => m.type === 'turn' && m.instanceId === id)
  const hold = await holdInstanceLock(t, id)
  const waitingAck = `SELECT a.pid FROM pg_locks l JOIN pg_stat_activity a USING (pid)
    WHERE l.locktype = 'advisory' AND NOT l.granted AND a.application_name = '${app}'
      AND l.objid = (hashtext('${id}')::bigint & 4294967295)::text::oid`
  const pid = await eventually(() => psql(waitingAck), { timeoutMs: 30000, what: 'the ack to wait on the advisory lock' })
  assert.equal(psql(`SELECT pg_terminate_backend(${pid.split('\n')[0]})`), 't')
  // The retry comes back on another connection and waits on the lock again.
  const again = await eventually(() => psql(waitingAck), { timeoutMs: 30000, what: 'the ack to run again' })
  assert.notEqual(again, pid, 'the ack came back on a new backend')
  await hold.release()

  const s = await client.waitForOrchestration(id, 60000)
  assert.equal(s.status, 'Completed', `${s.status}: ${s.error}`)
  assert.deepEqual(s.output, ['s0:done', 's1:done'])
  assert.deepEqual(historyProblems(id, await historyOf(client, pg.schema, id), 2), [])
  const retried = member.grep(/session running ack_orchestration_item was terminated/)
  assert.equal(retried.length, 1, 'one warning says the ack was cut off and run again')
  await member.stop(5000)
  report(t, `ack cut off by pg_terminate_backend (backend ${pid}) ran again on backend ${again} and committed`)
})

test('Postgres stopped and restarted under load: client calls reject with ERR_PROVIDER, the runtime reconnects and completes everything', { timeout: 300000 }, async (t) => {
  const pg = await pgSchema(t, 'dxf_restart')
  const fx = effectsDir(t)
  const client = new Client(pg.provider)
  const member = new Worker(t, memberConfig(pg, fx, `dxf_restart_m_${process.pid}`), { name: 'restarted' })
  await member.ready()
  const expected = new Map()
  await startChains(client, 'rs', 40, expected)
  await eventually(() => fs.readdirSync(fx).length >= 10, { timeoutMs: 60000, what: 'work to be under way' })

  // Whatever happens below, the database comes back.
  t.after(async () => {
    if (!pgUp()) pgCtl('start')
    await eventually(pgUp, { timeoutMs: 60000, what: 'Postgres to accept connections again' })
  })
  const downAt = Date.now()
  pgCtl('stop')
  const during = await Promise.all([
    ['getStatus', () => client.getStatus('rs-0')],
    ['startOrchestration', () => client.startOrchestration('rs-during', 'Hello', 1)],
  ].map(async ([name, call]) => {
    const t0 = Date.now()
    try {
      await call()
      return { name, ok: true, ms: Date.now() - t0 }
    } catch (err) {
      return { name, code: err.code, message: err.message, ms: Date.now() - t0 }
    }
  }))
  pgCtl('start')
  await eventually(pgUp, { timeoutMs: 60000, what: 'Postgres to accept connections again' })
  const outageMs = Date.now() - downAt

  for (const r of during) {
    assert.equal(r.code, 'ERR_PROVIDER', `${r.name} during the outage: ${JSON.stringify(r)}`)
    assert.ok(r.ms <= CLIENT_BOUND_MS, `${r.name} took ${r.ms} ms to reject`)
  }
  const backAt = Date.now()
  await verify(client, pg.schema, expected)
  const drainMs = Date.now() - backAt
  // New work after the restart.
  await client.startOrchestration('rs-after', 'Hello', 'after')
  assert.equal((await client.waitForOrchestration('rs-after', 60000)).status, 'Completed')
  await member.stop(5000)
  report(t, `restart: database down ${outageMs} ms; client calls rejected with ERR_PROVIDER after ` +
    `${during.map((r) => `${r.name} ${r.ms} ms`).join(', ')}; the ${expected.size} orchestrations finished ${drainMs} ms after it was back`)
})

test('Postgres crashed (immediate restart) under a fleet with fast paths: no start, event or completion a caller was told of is lost', { timeout: 300000 }, async (t) => {
  const pg = await pgSchema(t, 'dxf_crash')
  const fx = effectsDir(t)
  const client = new Client(pg.provider)
  const members = [0, 1].map((i) => {
    const cfg = { ...memberConfig(pg, fx, `dxf_crash_m${i}_${process.pid}`), connectOptions: { fastPaths: true } }
    return new Worker(t, cfg, { name: `crash-${i}` })
  })
  await Promise.all(members.map((m) => m.ready()))
  t.after(async () => {
    if (!pgUp()) pgCtl('start')
    await eventually(pgUp, { timeoutMs: 60000, what: 'Postgres to accept connections again' })
  })

  // What callers were told: starts and raises that resolved, completions read.
  const started = new Set()
  const raised = new Map()
  const completed = new Map()
  let stop = false
  let n = 0
  const load = (async () => {
    while (!stop) {
      const id = `crash-${n++}`
      try {
        await client.startOrchestration(id, 'AwaitGo', null)
        started.add(id)
        await client.enqueueEvent(id, 'go', id)
        raised.set(id, id)
      } catch {
        await sleep(50)
      }
      for (const done of [...raised.keys()].slice(-3)) {
        if (completed.has(done)) continue
        try {
          const s = await client.getStatus(done)
          if (s.status === 'Completed') completed.set(done, s.output)
        } catch {}
      }
    }
  })()
  await eventually(() => completed.size >= 10, { timeoutMs: 60000, what: 'orchestrations to complete before the crash' })
  pgCtl('crash')
  await eventually(pgUp, { timeoutMs: 60000, what: 'Postgres to accept connections again' })
  await eventually(() => completed.size >= 20 && raised.size >= 40, { timeoutMs: 120000, what: 'load to go on after the crash' })
  stop = true
  await load

  // Every raise a caller was told of is delivered; instances whose raise
  // failed get theirs now; nothing completed reads otherwise afterwards.
  for (const id of started) {
    if (!raised.has(id)) await client.enqueueEvent(id, 'go', id)
  }
  for (const id of started) {
    const s = await client.waitForOrchestration(id, 120000)
    assert.equal(s.status, 'Completed', `${id}: ${JSON.stringify(s)}`)
    assert.equal(s.output, id)
  }
  for (const [id, output] of completed) {
    assert.equal((await client.getStatus(id)).output, output, `${id} was seen Completed before`)
  }
  for (const m of members) await m.stop(5000)
  report(t, `immediate restart: ${started.size} started, ${raised.size} raised, ${completed.size} seen completed; all completed once`)
})
