'use strict'
// Runtime lifecycle: start, shutdown (fast when idle, idempotent, safe while
// starting), calls in the wrong state, metrics, per-runtime registrations,
// and a process that exits by itself after shutdown.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { backends, FAST, sqliteFile, eventually, uniqueName, Client, DATABASE_URL, psql } = require('./helpers')
const { openStore } = require('./fixtures/store')
const { Runtime, SqliteProvider } = require('..')

/**
 * Which settles first: `promise` ('done') or a timer of `ms` ('timer'). An
 * order, not a measurement: shutdown(60000) of an idle runtime must finish
 * before half its timeout has passed, which a shutdown that waits out its
 * timeout cannot. How long it takes is bench/timing-shutdown.js's business.
 */
async function firstOf(promise, ms) {
  let timer
  const guard = new Promise((resolve) => { timer = setTimeout(() => resolve('timer'), ms) })
  try {
    return await Promise.race([promise.then(() => 'done'), guard])
  } finally {
    clearTimeout(timer)
  }
}

async function expectState(fn, pattern) {
  await assert.rejects(async () => fn(), (err) => {
    assert.equal(err.code, 'ERR_RUNTIME_STATE', err.message)
    assert.match(err.message, pattern)
    return true
  })
}

const noop = function* () { return null }

/**
 * A store whose runtimes are shut down before the store is removed, even when
 * the test fails (a runtime left running would keep the test process alive).
 */
async function scope(t, open = sqliteFile) {
  const store = await openStore(open)
  const runtimes = []
  t.after(async () => {
    for (const rt of runtimes) await rt.shutdown(0).catch(() => {})
    await store.release()
  })
  const runtime = (options) => {
    const rt = new Runtime(store.provider, { ...FAST, ...options })
    runtimes.push(rt)
    return rt
  }
  return { provider: store.provider, file: store.file, runtime }
}

for (const [kind, open] of backends) {
  test(`start resolves; an idle runtime's shutdown(60000) returns before half its timeout (${kind})`, async (t) => {
    const store = await scope(t, open)
    const rt = store.runtime()
    rt.registerOrchestration('Noop', noop)
    assert.equal(await rt.start(), undefined)
    assert.equal(await firstOf(rt.shutdown(60000), 30000), 'done')
  })

  test(`after a finished orchestration, shutdown(60000) still returns before half its timeout (${kind})`, async (t) => {
    const store = await scope(t, open)
    const rt = store.runtime()
    rt.registerActivity('A', async () => 'a')
    rt.registerOrchestration('O', function* (ctx) { return yield ctx.scheduleActivity('A') })
    await rt.start()
    const client = new Client(store.provider)
    const id = uniqueName('o')
    await client.startOrchestration(id, 'O')
    assert.equal((await client.waitForOrchestration(id, 20000)).output, 'a')
    assert.equal(await firstOf(rt.shutdown(60000), 30000), 'done')
  })
}

test('shutdown twice, concurrently and in sequence, is safe', async (t) => {
  const { provider, runtime } = await scope(t)
  const rt = runtime()
  await rt.start()
  await Promise.all([rt.shutdown(1000), rt.shutdown(1000)])
  await rt.shutdown()
  await rt.shutdown(0)
})

test('shutdown called right after start() (before it settled) stops what start started', async (t) => {
  const { runtime } = await scope(t)
  for (let i = 0; i < 5; i++) {
    const rt = runtime()
    rt.registerOrchestration('Noop', noop)
    const started = rt.start()
    const stopped = rt.shutdown(1000)
    await Promise.all([started, stopped])
    // It ran (metrics exist) and it stopped (it cannot start again).
    assert.notEqual(rt.metricsSnapshot(), null)
    await expectState(() => rt.start(), /shut down/)
  }
})

test('shutdown before start leaves a runtime that cannot be started', async (t) => {
  const { provider, runtime } = await scope(t)
  const rt = runtime()
  await rt.shutdown()
  await expectState(() => rt.start(), /shut down/)
})

test('registration, start and a second start in the wrong state give ERR_RUNTIME_STATE', async (t) => {
  const { provider, runtime } = await scope(t)
  const rt = runtime()
  rt.registerOrchestration('Noop', noop)
  const starting = rt.start()
  // Registering while start() is in flight would never reach the dispatchers.
  await expectState(() => rt.registerActivity('Late', async () => 1), /already start/)
  await starting
  await expectState(() => rt.registerActivity('Late', async () => 1), /already start/)
  await expectState(() => rt.registerOrchestration('Late', noop), /already start/)
  await expectState(() => rt.registerOrchestrationVersioned('Late', '2.0.0', noop), /already start/)
  await expectState(() => rt.start(), /already start/)
  await rt.shutdown(0)
  await expectState(() => rt.registerActivity('Late', async () => 1), /shut down/)
  await expectState(() => rt.registerOrchestration('Late', noop), /shut down/)
  await expectState(() => rt.start(), /shut down/)
})

test('shutdown rejects a bad timeout with ERR_INVALID_ARGUMENT', async (t) => {
  const { provider, runtime } = await scope(t)
  const rt = runtime()
  for (const bad of [-1, 'soon', NaN]) {
    await assert.rejects(rt.shutdown(bad), (err) => err.code === 'ERR_INVALID_ARGUMENT' && /timeoutMs/.test(err.message))
  }
})

// The counters api.md lists for metricsSnapshot().
const API_COUNTERS = [
  'orchStarts', 'orchCompletions', 'orchFailures', 'orchApplicationErrors', 'orchInfrastructureErrors',
  'orchConfigurationErrors', 'orchPoison', 'activitySuccess', 'activityAppErrors', 'activityInfraErrors',
  'activityConfigErrors', 'activityPoison', 'orchDispatcherItemsFetched', 'workerDispatcherItemsFetched',
  'orchContinueAsNew', 'suborchestrationCalls', 'providerErrors',
]

test('metricsSnapshot() is null before start, counts work after, and keeps the final counts after shutdown', async (t) => {
  const { provider, runtime } = await scope(t)
  const rt = runtime()
  let calls = 0
  rt.registerActivity('A', async () => ++calls)
  rt.registerOrchestration('O', function* (ctx) {
    yield ctx.scheduleActivity('A')
    if (ctx.executionId === 1) yield ctx.continueAsNew(null)
    return yield ctx.scheduleSubOrchestration('Child')
  })
  rt.registerOrchestration('Child', noop)
  assert.equal(rt.metricsSnapshot(), null)
  await rt.start()
  const client = new Client(provider)
  const id = uniqueName('m')
  await client.startOrchestration(id, 'O')
  await client.waitForOrchestration(id, 20000)
  const m = await eventually(() => {
    const s = rt.metricsSnapshot()
    return s.orchCompletions >= 3 && s
  }, { what: 'completion counts' })
  // duroxide counts a start per turn, and every turn here has one message:
  // execution 1 has 2 turns (schedule A; continue as new), execution 2 has 3
  // (schedule A; schedule the child; complete), the child 1.
  assert.equal(m.orchStarts, 6)
  // The continued-as-new execution, the final one and the child.
  assert.equal(m.orchCompletions, 3)
  // duroxide 0.1.32 records an activity success twice (record_activity_execution
  // and record_activity_success); the function itself ran once.
  assert.equal(calls, 2)
  assert.equal(m.activitySuccess, 4)
  assert.equal(m.orchContinueAsNew, 1)
  // suborchestrationCalls and the two *DispatcherItemsFetched counters exist in
  // duroxide 0.1.32's snapshot, but nothing in the crate increments them.
  assert.equal(m.orchFailures, 0)
  for (const key of API_COUNTERS) assert.equal(typeof m[key], 'number', key)
  await rt.shutdown(0)
  // The final counters stay readable; counting only went on, never back.
  const final = rt.metricsSnapshot()
  for (const key of API_COUNTERS) assert.ok(final[key] >= m[key], `${key}: ${final[key]} after ${m[key]}`)
  assert.equal(final.orchCompletions, 3)
})

test('two runtimes in one process run their own functions under the same names', async (t) => {
  const one = await scope(t)
  const two = await scope(t)
  const make = async (store, label) => {
    const rt = store.runtime()
    rt.registerActivity('Who', async () => `activity ${label}`)
    rt.registerOrchestration('Same', function* (ctx) {
      return [label, yield ctx.scheduleActivity('Who')]
    })
    await rt.start()
  }
  await make(one, 'one')
  await make(two, 'two')
  const run = async (provider) => {
    const client = new Client(provider)
    const id = uniqueName('same')
    await client.startOrchestration(id, 'Same')
    return (await client.waitForOrchestration(id, 20000)).output
  }
  assert.deepEqual(await run(one.provider), ['one', 'activity one'])
  assert.deepEqual(await run(two.provider), ['two', 'activity two'])
})

test('shutdown aborts the signal of an activity still running at the deadline', async (t) => {
  const { provider, runtime } = await scope(t)
  const rt = runtime()
  let seen
  const started = new Promise((resolve) => {
    rt.registerActivity('Long', async (ctx) => {
      resolve()
      await new Promise((r) => ctx.signal.addEventListener('abort', r))
      seen = { aborted: ctx.signal.aborted, isCancelled: ctx.isCancelled() }
    })
  })
  rt.registerOrchestration('O', function* (ctx) { return yield ctx.scheduleActivity('Long') })
  await rt.start()
  await new Client(provider).startOrchestration(uniqueName('long'), 'O')
  await started
  await rt.shutdown(200)
  await eventually(() => seen, { what: 'the abort' })
  assert.equal(seen.aborted, true)
  assert.equal(seen.isCancelled, true)
})

// ---- the process exits by itself ----------------------------------------------------
function runChild(args, { timeoutMs = 30000, env = {} } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'child-runtime.js'), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d })
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`child did not exit within ${timeoutMs} ms; stdout: ${stdout}; stderr tail: ${stderr.slice(-2000)}`))
    }, timeoutMs)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr })
    })
  })
}

for (const [kind] of backends) {
  const target = async (t) => {
    if (kind === 'sqlite') return `sqlite:${(await sqliteFile(t)).file}`
    const schema = uniqueName('dxchild')
    t.after(() => psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`))
    return `${DATABASE_URL}#${schema}`
  }

  test(`a process that ran an orchestration and shut down exits on its own (${kind})`, async (t) => {
    const r = await runChild(['work', await target(t)])
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout, 'RESULT ["Completed",{"loud":"QUIET PLEASE","failed":"activity-failure-for-the-log"}]\n')
  })

  // Regression: the connection the Postgres history tail keeps for its next
  // call was returned to its pool from Node's exit, outside any Tokio
  // runtime, and sqlx's panic there aborted the process.
  test(`a process that exits right after a chain of activities completed exits cleanly (${kind})`, async (t) => {
    const options = { orchestrationConcurrency: 4, workerConcurrency: 8, logLevel: 'warn' }
    const r = await runChild(['steps', await target(t), JSON.stringify(options)], { env: { CHILD_PG_POOL: '5' } })
    assert.deepEqual([r.code, r.signal], [0, null], r.stderr.slice(-3000))
    assert.equal(r.stdout, 'RESULT [10,10,10]\n')
  })

  test(`a process whose activity never settles still exits after shutdown (${kind})`, async (t) => {
    const r = await runChild(['hung', await target(t)])
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout, 'RESULT shut down with a hung activity\n')
  })
}

test('a shut-down runtime does not keep the provider from being used by a new runtime', async (t) => {
  const { provider, runtime } = await scope(t, async () => ({ provider: await SqliteProvider.inMemory() }))
  const first = runtime()
  first.registerOrchestration('O', function* () { return 'first' })
  await first.start()
  await first.shutdown(0)
  const second = runtime()
  second.registerOrchestration('O', function* () { return 'second' })
  await second.start()
  const client = new Client(provider)
  await client.startOrchestration('after-first', 'O')
  assert.equal((await client.waitForOrchestration('after-first', 20000)).output, 'second')
})
