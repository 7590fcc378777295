'use strict'
// Item 3: an activity that never resolves, raced against a timer. The timer
// wins, the activity's signal aborts, and its worker slot (the only one) is
// free again once activityCancellationGracePeriodMs has passed: another
// activity queued behind it runs then, not before and not never.
const test = require('node:test')
const assert = require('node:assert/strict')
const { sqliteFile, startRuntime, eventually, Client } = require('../helpers')
const { report } = require('./harness')

const GRACE_MS = 600
// The abort reaches JS through a threadsafe call a few ms after the runtime
// cancels; the slot frees GRACE_MS after the runtime cancels.
const DELIVERY_TOLERANCE_MS = 150

test('a never-resolving activity loses a race to a timer, aborts, and frees its slot after the grace period', { timeout: 120000 }, async (t) => {
  const db = await sqliteFile(t, 'dxf-cancel')
  const seen = { hangStarted: 0, abortedAt: 0, cancelledFlag: null, quickStartedAt: 0 }
  const rt = await startRuntime(t, db.provider, (r) => {
    r.registerActivity('Hang', async (ctx) => {
      seen.hangStarted = Date.now()
      ctx.signal.addEventListener('abort', () => {
        seen.abortedAt = Date.now()
        seen.cancelledFlag = ctx.isCancelled()
      }, { once: true })
      return new Promise(() => {})
    })
    r.registerActivity('Quick', async () => {
      seen.quickStartedAt = Date.now()
      return 'quick'
    })
    r.registerOrchestration('RaceHang', function* (ctx) {
      const r = yield ctx.race(ctx.scheduleActivity('Hang', null), ctx.scheduleTimer(300))
      return r.index
    })
    r.registerOrchestration('QuickOne', function* (ctx) {
      return yield ctx.scheduleActivity('Quick', null)
    })
  }, {
    workerConcurrency: 1,
    activityCancellationGracePeriodMs: GRACE_MS,
    // Cancellation is noticed at lease renewal, every ceil(timeout/2) s.
    workerLockTimeoutMs: 2000,
    workerLockRenewalBufferMs: 1000,
  })
  const client = new Client(db.provider)

  await client.startOrchestration('race', 'RaceHang', null)
  const raced = await client.waitForOrchestration('race', 30000)
  assert.equal(raced.status, 'Completed')
  assert.equal(raced.output, 1, 'the timer (index 1) won')
  assert.ok(seen.hangStarted > 0, 'the hanging activity occupied the only slot')

  // Queued behind the hanging activity: it can only run once the slot frees.
  await client.startOrchestration('after', 'QuickOne', null)
  await eventually(() => seen.abortedAt > 0, { timeoutMs: 30000, what: "the losing activity's signal to abort" })
  assert.equal(seen.cancelledFlag, true, 'ctx.isCancelled() is true when the signal aborts')
  const quick = await client.waitForOrchestration('after', 30000)
  assert.equal(quick.status, 'Completed')
  assert.equal(quick.output, 'quick')

  const freedAfter = seen.quickStartedAt - seen.abortedAt
  assert.ok(freedAfter >= GRACE_MS - DELIVERY_TOLERANCE_MS, `the slot was reused ${freedAfter} ms after the abort, before the ${GRACE_MS} ms grace period`)
  report(t, `race: abort reached JS ${seen.abortedAt - seen.hangStarted} ms after the activity started; slot reused ${freedAfter} ms after the abort (grace ${GRACE_MS} ms)`)
  await rt.shutdown(1000)
})
