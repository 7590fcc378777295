'use strict'
// runtime.metricsText(): duroxide's metrics (recorded through the `metrics`
// facade) and the guard's counters as Prometheus text, and the example that
// serves them at /metrics, scraped from a child process after running
// orchestrations on a shared Postgres schema.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const http = require('node:http')
const { spawn } = require('node:child_process')
const { Runtime, Client } = require('..')
const { pgSchema, startRuntime, eventually, FAST } = require('./helpers')
const sql = require('./fixtures/guard-sql')
const { parsePrometheus, sum } = require('./prometheus-text')

const EXAMPLE = path.join(__dirname, '..', 'examples', 'metrics-server.js')

function get(url) {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (c) => (body += c))
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }))
      })
      .on('error', reject)
  })
}

/** Starts the example; resolves with its /metrics URL once it listens. */
function startExample(t, env) {
  const child = spawn(process.execPath, [EXAMPLE], {
    env: { ...process.env, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (c) => (stderr += c))
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    await exited
  })
  return new Promise((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => reject(new Error(`example did not start: ${stderr}`)), 30000)
    child.stdout.on('data', (c) => {
      out += c
      const m = /listening on (\S+)/.exec(out)
      if (m) {
        clearTimeout(timer)
        resolve({ url: m[1], pid: child.pid, exited, stderr: () => stderr })
      }
    })
    child.on('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`example exited with ${code}: ${stderr}`))
    })
  })
}

test('examples/metrics-server.js serves duroxide and guard metrics at /metrics', async (t) => {
  const pg = await pgSchema(t, 'dxmetrics')
  const example = await startExample(t, { STORE_URL: pg.url, STORE_SCHEMA: pg.schema })
  const client = new Client(pg.provider)
  const ids = ['m1', 'm2', 'm3']
  for (const id of ids) await client.startOrchestration(id, 'Hello', id)
  for (const id of ids) {
    const s = await client.waitForOrchestration(id, 30000)
    assert.equal(s.status, 'Completed', JSON.stringify(s))
    assert.equal(s.output, `Hello, ${id}!`)
  }

  const res = await get(example.url)
  assert.equal(res.status, 200)
  assert.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  const parsed = parsePrometheus(res.body)

  // duroxide's own series, with their labels.
  assert.equal(parsed.types.get('duroxide_orchestration_starts_total'), 'counter')
  // duroxide 0.1.32 also counts each start under version="unknown" (see docs/operations.md).
  assert.equal(sum(parsed, 'duroxide_orchestration_starts_total', { orchestration_name: 'Hello', version: '1.0.0' }), 3, res.body)
  assert.equal(sum(parsed, 'duroxide_orchestration_completions_total', { orchestration_name: 'Hello', status: 'success' }), 3, res.body)
  assert.equal(sum(parsed, 'duroxide_activity_executions_total', { activity_name: 'Greet', outcome: 'success' }), 3, res.body)
  assert.equal(parsed.types.get('duroxide_activity_duration_seconds'), 'histogram')
  assert.equal(sum(parsed, 'duroxide_activity_duration_seconds_count', { activity_name: 'Greet' }), 3, res.body)
  assert.equal(
    sum(parsed, 'duroxide_activity_duration_seconds_bucket', { activity_name: 'Greet', le: '+Inf' }),
    3,
    'the +Inf bucket counts every activity',
  )
  assert.ok(sum(parsed, 'duroxide_orchestration_duration_seconds_count', { orchestration_name: 'Hello' }) === 3, res.body)

  // The guard's series of this runtime.
  for (const [name, type] of [
    ['duroxide_node_lock_lost_total', 'counter'],
    ['duroxide_node_poison_total', 'counter'],
    ['duroxide_node_provider_errors_total', 'counter'],
    ['duroxide_node_deadlock_retries_total', 'counter'],
    ['duroxide_node_livelocks_detected_total', 'counter'],
    ['duroxide_node_fetch_latency_seconds', 'gauge'],
    ['duroxide_node_fetch_samples', 'gauge'],
  ]) {
    assert.equal(parsed.types.get(name), type, `${name} should be a ${type}`)
  }
  assert.equal(sum(parsed, 'duroxide_node_lock_lost_total', { queue: 'orchestrator' }), 0)
  assert.ok(sum(parsed, 'duroxide_node_fetch_samples', { queue: 'orchestrator' }) > 0, res.body)
  const p99 = parsed.samples.find(
    (s) => s.name === 'duroxide_node_fetch_latency_seconds' && s.labels.queue === 'orchestrator' && s.labels.quantile === '0.99',
  )
  assert.ok(p99 && p99.value >= 0, 'the orchestration fetch p99 is reported')

  // The example stops cleanly on SIGTERM.
  process.kill(example.pid, 'SIGTERM')
  assert.deepEqual(await example.exited, { code: 0, signal: null }, example.stderr())
})

test('metricsText() is valid before start, and carries this runtime\'s lock losses and poison', async (t) => {
  const pg = await pgSchema(t, 'dxmetricsg')
  const idle = new Runtime(pg.provider, FAST)
  const before = parsePrometheus(idle.metricsText())
  assert.equal(before.types.get('duroxide_node_lock_lost_total'), 'counter')
  assert.equal(sum(before, 'duroxide_node_poison_total'), 0)
  await idle.shutdown()

  // Every turn of 'Slow' outlives its 500 ms lease (as in guard.events.test.js):
  // two lost locks, then poison.
  const rt = await startRuntime(
    t,
    pg.provider,
    (r) => r.registerOrchestration('Slow', function* () {
      sql.blockFor(1500)
      return 'late'
    }),
    {
      allowUnrenewableLocks: true,
      orchestratorLockTimeoutMs: 500,
      orchestratorLockRenewalBufferMs: 100,
      orchestrationConcurrency: 1,
      maxAttempts: 2,
      watchdogIntervalMs: 0,
    },
  )
  let poisoned = false
  rt.on('poison', () => { poisoned = true })
  await new Client(pg.provider).startOrchestration('slow-1', 'Slow', null)
  await eventually(() => poisoned, { timeoutMs: 30000, what: 'a poison event' })
  const m = rt.metricsSnapshot()
  const parsed = parsePrometheus(rt.metricsText())
  assert.equal(sum(parsed, 'duroxide_node_lock_lost_total', { queue: 'orchestrator' }), m.invalidLockTokenAcks)
  assert.equal(sum(parsed, 'duroxide_node_lock_lost_total', { queue: 'orchestrator' }), 2)
  assert.equal(sum(parsed, 'duroxide_node_poison_total'), 1)
  assert.equal(sum(parsed, 'duroxide_node_provider_errors_total'), m.providerErrors)
  assert.ok(sum(parsed, 'duroxide_orchestration_poison_total') >= 1, 'duroxide counts the poison too')
})
