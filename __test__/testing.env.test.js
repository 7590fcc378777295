'use strict'
// TestEnv (duroxide-node/testing): virtual time, mocked activities, cleanup.
const test = require('node:test')
const assert = require('node:assert/strict')
const { TestEnv } = require('../testing')
const { SqliteProvider, Runtime, Client, RuntimeStateError, defineActivity, defineOrchestration } = require('..')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { coded } = require('./helpers')

const HOUR = 3_600_000
const DAY = 24 * HOUR

/** A started TestEnv with `register(runtime)` applied; shut down after the test. */
async function env(t, register, options) {
  const e = await TestEnv.create(options)
  t.after(() => e.shutdown())
  register(e.runtime, e)
  await e.start()
  return e
}

test('a 7-day timer completes in under a second of wall time', async (t) => {
  const e = await env(t, (rt) =>
    rt.registerOrchestration('Week', function* (ctx) {
      yield ctx.scheduleTimer(7 * DAY)
      return 'a week later'
    }),
  )
  const virtualStart = e.now().getTime()
  const wallStart = Date.now()
  await e.client.startOrchestration('week-1', 'Week', null)
  const jumpedTo = await e.skipTime()
  // Without virtual time the instance would still wait here (and time out).
  const status = await e.client.waitForOrchestration('week-1', 5000)
  const wall = Date.now() - wallStart
  assert.equal(status.status, 'Completed')
  assert.equal(status.output, 'a week later')
  assert.ok(wall < 1000, `the 7-day timer took ${wall} ms of wall time`)
  assert.ok(jumpedTo.getTime() >= virtualStart + 7 * DAY, 'skipTime jumps to the timer')
  assert.ok(e.now().getTime() >= virtualStart + 7 * DAY)
})

test('advance by part of a timer does not fire it; past it does', async (t) => {
  const e = await env(t, (rt) =>
    rt.registerOrchestration('TwoHours', function* (ctx) {
      yield ctx.scheduleTimer(2 * HOUR)
      return 'fired'
    }),
  )
  await e.client.startOrchestration('two-1', 'TwoHours', null)
  await e.advance('1h')
  assert.equal((await e.client.getStatus('two-1')).status, 'Running')
  assert.equal(e.pendingTimers(), 1)
  await e.advance(59 * 60_000) // a number is milliseconds
  assert.equal((await e.client.getStatus('two-1')).status, 'Running')
  // advance resolves once the fired timer's turn has run.
  await e.advance('2m')
  const status = await e.client.getStatus('two-1')
  assert.equal(status.status, 'Completed')
  assert.equal(status.output, '"fired"')
  assert.equal(e.pendingTimers(), 0)
})

test('advance fires the timers it passes, including ones scheduled inside the window', async (t) => {
  const e = await env(t, (rt) =>
    rt.registerOrchestration('Hourly', function* (ctx) {
      for (let i = 0; i < 24; i++) yield ctx.scheduleTimer(HOUR)
      return 24
    }),
  )
  await e.client.startOrchestration('hourly-1', 'Hourly', null)
  await e.advance('23h30m')
  assert.equal((await e.client.getStatus('hourly-1')).status, 'Running')
  // Virtual time also flows with wall time, so each turn adds its few
  // milliseconds: 24 timers end a little after 24 h.
  await e.advance('31m')
  assert.equal((await e.client.getStatus('hourly-1')).status, 'Completed')
})

test('skipTime fires several timers one due time at a time, in order', async (t) => {
  const e = await env(t, (rt) =>
    rt.registerOrchestration('Sleep', function* (ctx, hours) {
      yield ctx.scheduleTimer(hours * HOUR)
      return hours
    }),
  )
  const start = e.now().getTime()
  for (const hours of [3, 1, 2]) await e.client.startOrchestration(`sleep-${hours}`, 'Sleep', hours)
  const completed = async () => {
    const done = []
    for (const hours of [1, 2, 3]) {
      if ((await e.client.getStatus(`sleep-${hours}`)).status === 'Completed') done.push(hours)
    }
    return done
  }
  const jumps = []
  for (const expected of [[1], [1, 2], [1, 2, 3]]) {
    const at = await e.skipTime()
    jumps.push(Math.round((at.getTime() - start) / HOUR))
    assert.deepEqual(await completed(), expected)
  }
  assert.deepEqual(jumps, [1, 2, 3])
  assert.equal(await e.skipTime(), null, 'no timer left')
})

test('skipTime waits for running work: an activity beats a long timer it races', async (t) => {
  let started
  const running = new Promise((resolve) => { started = resolve })
  const e = await env(t, (rt) => {
    rt.registerActivity('Slow', async () => {
      started()
      await new Promise((resolve) => setTimeout(resolve, 300))
      return 'activity'
    })
    rt.registerOrchestration('Race', function* (ctx) {
      const winner = yield ctx.race(ctx.scheduleActivity('Slow', null), ctx.scheduleTimer(HOUR))
      return winner.index === 0 ? winner.value : 'timer'
    })
  })
  await e.client.startOrchestration('race-1', 'Race', null)
  await running // the timer is pending and the activity in flight
  assert.equal(e.pendingTimers(), 1)
  await e.skipTime()
  const status = await e.client.waitForOrchestration('race-1', 5000)
  assert.equal(status.output, 'activity')
})

test('an event races a long timer: the event wins before it, the timer after', async (t) => {
  const e = await env(t, (rt) =>
    rt.registerOrchestration('Approval', function* (ctx) {
      const r = yield ctx.race(ctx.waitForEvent('approve'), ctx.scheduleTimer(3 * DAY))
      return r.index === 0 ? 'approved' : 'expired'
    }),
  )
  await e.client.startOrchestration('approve-1', 'Approval', null)
  await e.client.startOrchestration('approve-2', 'Approval', null)
  await e.advance('1d')
  await e.client.raiseEvent('approve-1', 'approve', true)
  await e.waitIdle()
  assert.equal((await e.client.getStatus('approve-1')).output, '"approved"')
  assert.equal((await e.client.getStatus('approve-2')).status, 'Running')
  // Past the timer: approve-2 expires; approve-1's stale timer fires into a
  // finished instance and changes nothing.
  await e.advance('2d1m')
  assert.equal((await e.client.getStatus('approve-2')).output, '"expired"')
  assert.equal((await e.client.getStatus('approve-1')).output, '"approved"')
})

test('ctx.utcNow() reads virtual time', async (t) => {
  const e = await env(t, (rt) =>
    rt.registerOrchestration('Clock', function* (ctx) {
      const before = yield ctx.utcNow()
      yield ctx.scheduleTimer(DAY)
      const after = yield ctx.utcNow()
      return { before, after }
    }),
  )
  await e.client.startOrchestration('clock-1', 'Clock', null)
  await e.skipTime()
  const { output } = await e.client.waitForOrchestration('clock-1', 5000)
  assert.ok(output.after - output.before >= DAY, `utcNow moved ${output.after - output.before} ms`)
  assert.ok(output.after <= e.now().getTime())
})

test('mockActivity replaces a registered activity and supplies an unregistered one', async (t) => {
  const calls = []
  const e = await env(t, (rt, env) => {
    env.mockActivity('Charge', async (ctx, amount) => {
      calls.push(['mock Charge', amount])
      return `mock-charged ${amount}`
    })
    // Registered after its mock: the mock still wins.
    rt.registerActivity('Charge', async () => 'real charge')
    rt.registerActivity('Ship', async () => 'real ship')
    env.mockActivity('Notify', async (ctx, who) => `notified ${who}`) // never registered
    rt.registerOrchestration('Order', function* (ctx) {
      const charged = yield ctx.scheduleActivity('Charge', 5)
      const shipped = yield ctx.scheduleActivity('Ship', null)
      const notified = yield ctx.scheduleActivity('Notify', 'ann')
      return [charged, shipped, notified]
    })
  })
  await e.client.startOrchestration('order-1', 'Order', null)
  assert.deepEqual((await e.client.waitForOrchestration('order-1', 5000)).output, ['mock-charged 5', 'real ship', 'notified ann'])
  assert.deepEqual(calls, [['mock Charge', 5]])

  // After start: a registered activity can still be mocked, an unregistered one cannot.
  e.mockActivity('Ship', async () => 'mock ship')
  await e.client.startOrchestration('order-2', 'Order', null)
  assert.deepEqual((await e.client.waitForOrchestration('order-2', 5000)).output, ['mock-charged 5', 'mock ship', 'notified ann'])
  assert.throws(() => e.mockActivity('Refund', async () => 1), coded('ERR_RUNTIME_STATE', 'Refund', 'before env.start()'))
  assert.throws(() => e.runtime.registerActivity('Ship', async () => 1), coded('ERR_RUNTIME_STATE'))
})

test('mockActivity takes an activity definition and replaces what it defines', async (t) => {
  const charge = defineActivity('Charge', async (_ctx, amount) => `real ${amount}`)
  const order = defineOrchestration('TypedOrder', function* (ctx, amount) {
    return yield* ctx.call(charge, amount)
  })
  const e = await env(t, (rt, env) => {
    rt.register(charge, order)
    env.mockActivity(charge, async (_ctx, amount) => `mock ${amount}`)
  })
  const h = await e.client.start(order, 'typed-1', 7)
  assert.equal(await h.result({ signal: AbortSignal.timeout(5000) }), 'mock 7')
  assert.throws(() => e.mockActivity({ name: 'Charge' }, async () => 1), coded('ERR_INVALID_ARGUMENT', 'name'))
})

test('a plain registration twice is refused, as on a Runtime', async () => {
  const e = await TestEnv.create()
  try {
    e.runtime.registerActivity('A', async () => 1)
    assert.throws(() => e.runtime.registerActivity('A', async () => 2), coded('ERR_INVALID_ARGUMENT', 'already registered'))
  } finally {
    await e.shutdown()
  }
})

test('shutdown stops the runtime, drops pending timers and refuses further moves', async () => {
  const e = await TestEnv.create()
  e.runtime.registerOrchestration('Long', function* (ctx) {
    yield ctx.scheduleTimer(DAY)
  })
  await e.start()
  await e.client.startOrchestration('long-1', 'Long', null)
  await e.waitIdle()
  assert.equal(e.pendingTimers(), 1)
  await e.shutdown()
  assert.equal(e.pendingTimers(), 0)
  await assert.rejects(e.advance('1d'), coded('ERR_RUNTIME_STATE', 'shut down'))
  await assert.rejects(e.skipTime(), coded('ERR_RUNTIME_STATE', 'shut down'))
  assert.throws(() => e.mockActivity('X', async () => 1), coded('ERR_RUNTIME_STATE'))
  await e.shutdown() // twice is fine
  await assert.rejects(e.runtime.start(), RuntimeStateError)
})

test('virtual time does not leak into a normal Runtime in the same process', async (t) => {
  const e = await env(t, (rt) =>
    rt.registerOrchestration('Sleep', function* (ctx) {
      yield ctx.scheduleTimer(HOUR)
      return 'slept'
    }),
  )
  const provider = await SqliteProvider.inMemory()
  const runtime = new Runtime(provider)
  runtime.registerOrchestration('Sleep', function* (ctx) {
    const now = yield ctx.utcNow()
    ctx.setCustomStatus(String(now))
    yield ctx.scheduleTimer(HOUR)
    return 'slept'
  })
  await runtime.start()
  t.after(() => runtime.shutdown())
  const client = new Client(provider)
  await client.startOrchestration('plain-1', 'Sleep', null)
  await e.client.startOrchestration('env-1', 'Sleep', null)
  await e.advance('2d')
  assert.equal((await e.client.getStatus('env-1')).status, 'Completed')
  const plain = await client.waitForStatusChange('plain-1', 0, 5000)
  assert.ok(Math.abs(Number(plain.customStatus) - Date.now()) < 60_000, 'a normal runtime reads wall time')
  assert.equal((await client.getStatus('plain-1')).status, 'Running', "a normal runtime's timer waits in wall time")
  assert.ok(e.now().getTime() - Date.now() >= 2 * DAY - 60_000)
})

test('bad input: clear errors with codes', async (t) => {
  await assert.rejects(TestEnv.create({ speed: 2 }), coded('ERR_INVALID_OPTION', 'speed'))
  await assert.rejects(TestEnv.create({ idleTimeoutMs: -1 }), coded('ERR_INVALID_OPTION', 'idleTimeoutMs'))
  const e = await TestEnv.create()
  t.after(() => e.shutdown())
  await assert.rejects(e.advance('1d'), coded('ERR_RUNTIME_STATE', 'env.start()'))
  assert.throws(() => e.mockActivity(' ', async () => 1), coded('ERR_INVALID_ARGUMENT', 'activity name'))
  await e.start()
  await assert.rejects(e.start(), coded('ERR_RUNTIME_STATE'))
  await assert.rejects(e.advance('1w'), coded('ERR_INVALID_ARGUMENT', "'1w'"))
  await assert.rejects(e.advance('90 minutes'), coded('ERR_INVALID_ARGUMENT', 'duration'))
  await assert.rejects(e.advance(-5), coded('ERR_INVALID_ARGUMENT', 'duration'))
  await assert.rejects(e.advance(1.5), coded('ERR_INVALID_ARGUMENT', 'duration'))
  await assert.rejects(e.advance({ days: 1 }), coded('ERR_INVALID_ARGUMENT', 'duration'))
  assert.throws(() => e.mockActivity(42, async () => 1), coded('ERR_INVALID_ARGUMENT', 'name'))
  assert.throws(() => e.mockActivity('A', 'not a function'), coded('ERR_INVALID_ARGUMENT', 'mock'))
})

/**
 * stderr of a child process that runs an orchestration whose activity fails
 * on a TestEnv created with `options`: what a test file's output would show.
 */
function envLogs(options) {
  const script = `
const { TestEnv } = require(${JSON.stringify(path.join(__dirname, '..', 'testing'))})
;(async () => {
  const env = await TestEnv.create(${JSON.stringify(options)})
  env.runtime.registerActivity('Fails', async () => { throw new Error('expected failure') })
  env.runtime.registerOrchestration('Main', function* (ctx) {
    try { yield ctx.scheduleActivity('Fails', null) } catch {}
    return 'done'
  })
  await env.start()
  await env.client.startOrchestration('m-1', 'Main', null)
  const s = await env.client.waitForOrchestration('m-1', 10000)
  await env.shutdown()
  if (s.status !== 'Completed') process.exit(2)
})().catch((e) => { console.error(e); process.exit(3) })
`
  const childEnv = { ...process.env }
  delete childEnv.RUST_LOG
  const r = spawnSync(process.execPath, ['-e', script], { env: childEnv, encoding: 'utf8', timeout: 60000 })
  assert.equal(r.status, 0, r.stderr)
  return r.stderr
}

test('TestEnv logs errors only unless asked: logLevel', async () => {
  // Quiet by default: a test's output is the test runner's.
  assert.equal(envLogs({}), '')
  // Asked for, the runtime's INFO lines (the failed activity among them) show.
  const info = envLogs({ logLevel: 'info' })
  assert.match(info, / INFO .*Activity failed \(application error\)/)
  assert.match(envLogs({ runtimeOptions: { logLevel: 'info' } }), / INFO /)
  await assert.rejects(
    TestEnv.create({ logLevel: 'info', runtimeOptions: { logLevel: 'warn' } }),
    coded('ERR_INVALID_OPTION', 'logLevel', 'runtimeOptions.logLevel'),
  )
  await assert.rejects(TestEnv.create({ logLevel: 'loud' }), coded('ERR_INVALID_OPTION', 'logLevel'))
})

test('a wait that never goes idle ends with ERR_TIMEOUT, naming what is running', async (t) => {
  let release
  const hung = new Promise((resolve) => { release = resolve })
  const e = await env(
    t,
    (rt) => {
      rt.registerActivity('Hang', () => hung)
      rt.registerOrchestration('Stuck', function* (ctx) {
        return yield ctx.scheduleActivity('Hang', null)
      })
    },
    { idleTimeoutMs: 300 },
  )
  await e.client.startOrchestration('stuck-1', 'Stuck', null)
  await assert.rejects(e.skipTime(), coded('ERR_TIMEOUT', 'in flight', 'idleTimeoutMs'))
  release('done')
  assert.equal((await e.client.waitForOrchestration('stuck-1', 5000)).output, 'done')
})

test('duroxide-node/testing gives the same TestEnv to require and import', async () => {
  const esm = await import('duroxide-node/testing')
  assert.equal(esm.TestEnv, TestEnv)
  assert.equal(esm.default.TestEnv, TestEnv)
  assert.equal(require('duroxide-node/testing').TestEnv, TestEnv)
})
