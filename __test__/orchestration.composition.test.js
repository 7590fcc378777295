'use strict'
// all / race: result shapes, task order, any number of racers, nesting both
// ways, and cancellation of race losers (the losing activity sees it).
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { backends, FAST, eventually, uniqueName } = require('./helpers')
const { startSuiteRuntime, stopSuiteRuntime } = require('./fixtures/store')

// Cancellation reaches a running activity at its next lock renewal; a 2 s
// lease renews every second, so losers learn of it quickly.
const OPTIONS = { ...FAST, workerConcurrency: 6, workerLockTimeoutMs: 2000, workerLockRenewalBufferMs: 500 }

const started = new Set() // keys of Sleep activities that are running
const cancelled = new Map() // key -> what the activity saw when it was cancelled

function register(rt) {
  rt.registerActivity('Echo', async (ctx, v) => v)
  rt.registerActivity('Fail', async (ctx, why) => {
    throw new Error(`failed: ${why}`)
  })
  // Runs until `ms` pass or the activity is cancelled.
  rt.registerActivity('Sleep', async (ctx, { key, ms }) => {
    started.add(key)
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, ms)
      ctx.signal.addEventListener('abort', () => {
        clearTimeout(timer)
        resolve()
      })
    })
    if (ctx.signal.aborted) {
      cancelled.set(key, { isCancelled: ctx.isCancelled(), aborted: ctx.signal.aborted, reason: String(ctx.signal.reason) })
      return 'cancelled'
    }
    return `slept ${key}`
  })

  rt.registerOrchestration('AllOrder', function* (ctx) {
    return yield ctx.all([
      ctx.scheduleActivity('Sleep', { key: `${ctx.instanceId}-slow`, ms: 150 }),
      ctx.scheduleActivity('Fail', 'second'),
      ctx.scheduleActivity('Echo', 'third'),
      ctx.scheduleTimer(5),
      ctx.scheduleSubOrchestration('Child', 4),
    ])
  })
  rt.registerOrchestration('Child', function* (ctx, n) {
    return n + 1
  })
  rt.registerOrchestration('Race3', function* (ctx) {
    const winner = yield ctx.race(
      ctx.scheduleActivity('Sleep', { key: `${ctx.instanceId}-a`, ms: 60000 }),
      ctx.waitForEvent('go'),
      ctx.scheduleActivity('Sleep', { key: `${ctx.instanceId}-b`, ms: 60000 }),
    )
    ctx.setCustomStatus('raced')
    // Still running: the losers must be cancelled by the race itself, not by completion.
    yield ctx.waitForEvent('finish')
    return winner
  })
  rt.registerOrchestration('Race5', function* (ctx) {
    const spread = yield ctx.race(
      ctx.waitForEvent('a'),
      ctx.waitForEvent('b'),
      ctx.scheduleTimer(60000),
      ctx.scheduleTimer(10),
      ctx.waitForEvent('c'),
    )
    const asArray = yield ctx.race([ctx.scheduleTimer(60000), ctx.scheduleActivity('Echo', 'array form')])
    const single = yield ctx.race(ctx.scheduleActivity('Echo', 'alone'))
    return { spread, asArray, single }
  })
  rt.registerOrchestration('RaceFails', function* (ctx) {
    try {
      yield ctx.race(ctx.scheduleActivity('Fail', 'first to finish'), ctx.scheduleTimer(60000))
      return 'no error'
    } catch (err) {
      return err.message
    }
  })
  rt.registerOrchestration('RaceInAll', function* (ctx) {
    return yield ctx.all([
      ctx.race(ctx.waitForEvent('never'), ctx.scheduleTimer(10)),
      ctx.scheduleActivity('Echo', 'y'),
      ctx.race(ctx.scheduleTimer(60000), ctx.scheduleActivity('Echo', 'z')),
      ctx.race(ctx.scheduleActivity('Fail', 'in race'), ctx.scheduleTimer(60000)),
    ])
  })
  rt.registerOrchestration('AllInRace', function* (ctx) {
    const fast = yield ctx.race(ctx.all([ctx.scheduleActivity('Echo', 1), ctx.scheduleActivity('Echo', 2)]), ctx.scheduleTimer(60000))
    const slow = yield ctx.race(ctx.all([ctx.waitForEvent('never'), ctx.scheduleActivity('Echo', 3)]), ctx.scheduleTimer(10))
    const deep = yield ctx.all([ctx.race(ctx.all([ctx.race(ctx.scheduleActivity('Echo', 'deep'))]))])
    return { fast, slow, deep }
  })
  rt.registerOrchestration('EmptyAll', function* (ctx) {
    return yield ctx.all([])
  })
}

for (const [kind, open] of backends) {
  describe(`all / race on ${kind}`, { concurrency: true }, () => {
    let store, rt, client
    const run = async (name) => {
      const instanceId = uniqueName(`${kind}-${name}`)
      await client.startOrchestration(instanceId, name)
      const s = await client.waitForOrchestration(instanceId, 20000)
      assert.equal(s.status, 'Completed', `${name} ended ${s.status}: ${s.error}`)
      return s.output
    }

    before(async () => ({ store, rt, client } = await startSuiteRuntime(open, register, OPTIONS)))
    after(() => stopSuiteRuntime({ store, rt }))

    test('all returns {ok}|{err} per task, in task order (not completion order)', async () => {
      const out = await run('AllOrder')
      assert.equal(out.length, 5)
      assert.match(out[0].ok, /^slept /)
      assert.deepEqual(out[1], { err: 'failed: second' })
      assert.deepEqual(out.slice(2), [{ ok: 'third' }, { ok: null }, { ok: 5 }])
    })

    test('all of no tasks is an empty array', async () => {
      assert.deepEqual(await run('EmptyAll'), [])
    })

    test('a 3-way race returns the winner; the losing activities are cancelled (isCancelled, signal)', async () => {
      const instanceId = uniqueName(`${kind}-race3`)
      await client.startOrchestration(instanceId, 'Race3')
      await eventually(() => started.has(`${instanceId}-a`) && started.has(`${instanceId}-b`), { what: 'both racers running' })
      await client.raiseEvent(instanceId, 'go', { winner: 'event' })
      await eventually(async () => (await client.getStatus(instanceId)).customStatus === 'raced', { what: 'the race to finish' })
      for (const key of [`${instanceId}-a`, `${instanceId}-b`]) {
        const seen = await eventually(() => cancelled.get(key), { what: `cancellation of ${key}` })
        assert.equal(seen.isCancelled, true)
        assert.equal(seen.aborted, true)
      }
      assert.equal((await client.getStatus(instanceId)).status, 'Running')
      await client.raiseEvent(instanceId, 'finish')
      const s = await client.waitForOrchestration(instanceId, 20000)
      assert.deepEqual(s.output, { index: 1, value: { winner: 'event' } })
    })

    test('a 5-way race, the array form, and a race of one', async () => {
      const out = await run('Race5')
      assert.deepEqual(out, {
        spread: { index: 3, value: null },
        asArray: { index: 1, value: 'array form' },
        single: { index: 0, value: 'alone' },
      })
    })

    test('a race won by a failing task throws its message', async () => {
      assert.equal(await run('RaceFails'), 'failed: first to finish')
    })

    test('races nested in an all', async () => {
      assert.deepEqual(await run('RaceInAll'), [
        { ok: { index: 1, value: null } },
        { ok: 'y' },
        { ok: { index: 1, value: 'z' } },
        { err: 'failed: in race' },
      ])
    })

    test('an all nested in a race, and deeper nesting', async () => {
      const out = await run('AllInRace')
      assert.deepEqual(out.fast, { index: 0, value: [{ ok: 1 }, { ok: 2 }] })
      assert.deepEqual(out.slow, { index: 1, value: null })
      assert.deepEqual(out.deep, [{ ok: { index: 0, value: [{ ok: { index: 0, value: 'deep' } }] } }])
    })
  })
}
