'use strict'
// A mixed fleet on one Postgres schema: a process of the plain duroxide crate
// (bench/baseline, its `idle` workload: runtimes that serve until stdin
// closes) and this package with its fast paths on, running the same
// orchestration, so turns and activities of one instance land on both and
// each reads histories the other wrote (docs/fast-paths.md, "Rolling
// upgrades and mixed fleets").
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const fs = require('node:fs')
const { spawn, execFileSync } = require('node:child_process')
const { PostgresProvider, Runtime, Client } = require('..')
const { DATABASE_URL, psql, uniqueName, onCleanup } = require('./helpers')

const ROOT = path.join(__dirname, '..')
const BASELINE = path.join(ROOT, 'target', 'debug', 'duroxide-bench-baseline')
const INSTANCES = 40
const STEPS = 6

/** A database of its own, so its deadlock counter is this test's alone. */
function database(t) {
  const db = uniqueName('dxmixed')
  psql(`CREATE DATABASE ${db}`)
  onCleanup(t, () => psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`))
  const url = new URL(DATABASE_URL)
  url.pathname = `/${db}`
  return { db, url: url.toString() }
}

/** Starts the crate's process on `schema`; resolves once its runtimes run. */
function startCrate(t, url, schema) {
  // Cargo builds incrementally: a no-op when CI or an earlier run built it.
  execFileSync('cargo', ['build', '-p', 'duroxide-bench-baseline'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] })
  const spec = { workload: 'idle', store: 'postgres', url, schema, runtimes: 1, orchestrationConcurrency: 2, workerConcurrency: 2, pollMs: 5 }
  const child = spawn(BASELINE, [JSON.stringify(spec)], { stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  onCleanup(t, () => { if (child.exitCode === null) child.kill('SIGKILL') })
  const ready = new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => { if (String(d).includes('"ready"')) resolve() })
    child.on('exit', (code) => reject(new Error(`the crate's process exited ${code}: ${stderr}`)))
  })
  const stop = () => new Promise((resolve) => {
    child.on('exit', () => resolve(stderr))
    child.stdin.end()
  })
  return { ready, stop }
}

test('the plain crate and this package share a schema: every instance completes right, no deadlock', { timeout: 300000 }, async (t) => {
  const { db, url } = database(t)
  const schema = 'mixed'
  const provider = await PostgresProvider.connectWithSchema(url, schema, { maxConnections: 5, fastPaths: true })
  assert.ok(provider.fastPaths().active.includes('tailFetch'))
  assert.ok(fs.existsSync(path.join(ROOT, 'bench', 'baseline', 'Cargo.toml')))
  const crate = startCrate(t, url, schema)
  await crate.ready

  // The same Chain as bench/baseline's: Step adds one; inputs and results
  // are the same text on both sides ("0", "1", ...).
  const ours = new Map()
  const rt = new Runtime(provider, { orchestrationConcurrency: 2, workerConcurrency: 2, dispatcherPollIntervalMs: 5 })
  rt.registerActivity('Step', async (ctx, i) => {
    ours.set(ctx.instanceId, (ours.get(ctx.instanceId) ?? 0) + 1)
    return i + 1
  })
  rt.registerOrchestration('Chain', function* (ctx, n) {
    let v = 0
    for (let i = 0; i < n; i++) v = yield ctx.scheduleActivity('Step', v)
    return v
  })
  await rt.start()
  onCleanup(t, () => rt.shutdown(0))

  const client = new Client(provider)
  const ids = Array.from({ length: INSTANCES }, (_, i) => `mixed-${i}`)
  for (const id of ids) await client.startOrchestration(id, 'Chain', STEPS)
  for (const id of ids) {
    const s = await client.waitForOrchestration(id, 120000)
    assert.equal(s.status, 'Completed', `${id}: ${s.error}`)
    assert.equal(s.output, STEPS, id)
    // Each completed exactly one activity per step, whoever ran it.
    const history = await client.readExecutionHistory(id, 1)
    assert.equal(history.filter((e) => e.kind === 'ActivityCompleted').length, STEPS, id)
    assert.equal(history.filter((e) => e.kind === 'ActivityScheduled').length, STEPS, id)
  }
  await rt.shutdown(1000)
  const crateLog = await crate.stop()

  const byUs = [...ours.values()].reduce((a, b) => a + b, 0)
  const total = INSTANCES * STEPS
  assert.ok(byUs > 0 && byUs < total, `this package ran ${byUs} of ${total} activities; the crate the rest`)
  const shared = ids.filter((id) => (ours.get(id) ?? 0) > 0 && ours.get(id) < STEPS)
  assert.ok(shared.length > 0, 'some instance had activities run by both processes')
  assert.equal(psql(`SELECT deadlocks FROM pg_stat_database WHERE datname = '${db}'`), '0')
  assert.doesNotMatch(crateLog, /ERROR|nondetermin/i, crateLog)
})
