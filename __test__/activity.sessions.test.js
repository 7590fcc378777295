'use strict'
// Session affinity across two workers (two runtimes on one SQLite file, each
// labelling the activities it runs): a session's activities stay with the
// runtime that owns the session, even when that runtime is busy and the
// other is idle; once the session has been idle for sessionIdleTimeoutMs its
// owner stops renewing it and the other runtime takes it over; and
// maxSessionsPerRuntime keeps a runtime from running a second session while
// one is in flight even with a slot free. (A session the limited runtime has
// already claimed stays pinned to it, so the other runtime does not get it
// before the idle timeout: that case is not a way to spread sessions.)
//
// Runtime A accepts untagged activities and tag 'a'; B only untagged ones.
// 'Block' (tag 'a') therefore runs on A and occupies its only worker slot
// until the test releases it.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { sqliteFile, FAST, eventually, sleep, uniqueName, Client } = require('./helpers')
const { Runtime } = require('..')

// The shortest leases the options allow without allowUnrenewableLocks: the
// session lock is renewed every second while the session is active.
const LEASES = { workerLockTimeoutMs: 2000, workerLockRenewalBufferMs: 1000, sessionLockTimeoutMs: 2000, sessionLockRenewalBufferMs: 1000 }

/** A fleet of up to two runtimes on one file; `events` lists what ran where, in order. */
async function fleet(t, options) {
  const db = await sqliteFile(t, 'dxsess')
  const events = []
  const gates = new Map() // name -> release()
  const runtimes = []
  t.after(async () => {
    for (const release of gates.values()) release()
    for (const rt of runtimes) await rt.shutdown(0)
  })
  const start = async (label, extra) => {
    const rt = new Runtime(db.provider, { ...FAST, ...LEASES, workerConcurrency: 1, ...options, ...extra })
    rt.registerActivity('Where', async (ctx, step) => {
      events.push(`${step}@${label}`)
      return label
    })
    // Waits until the test opens the gate named by its input.
    rt.registerActivity('Block', async (ctx, gate) => {
      events.push(`${gate}@${label}`)
      await new Promise((resolve) => gates.set(gate, resolve))
      return label
    })
    rt.registerOrchestration('TwoSteps', function* (ctx, session) {
      const first = yield ctx.scheduleActivityOnSession('Where', 'first', session)
      yield ctx.waitForEvent('next')
      const second = yield ctx.scheduleActivityOnSession('Where', 'second', session)
      return [first, second]
    })
    rt.registerOrchestration('Occupy', function* (ctx, gate) {
      return yield ctx.scheduleActivity('Block', gate).withTag('a')
    })
    rt.registerOrchestration('Parallel', function* (ctx, gates) {
      const results = yield ctx.all(gates.map((g) => ctx.scheduleActivityOnSession('Block', g, g)))
      return results.map((r) => r.ok)
    })
    await rt.start()
    runtimes.push(rt)
    return rt
  }
  const open = (gate) => eventually(() => gates.get(gate), { what: `${gate} to start` }).then((release) => release())
  return { client: new Client(db.provider), events, start, open, started: (what) => eventually(() => events.includes(what), { what }) }
}

/**
 * Runs TwoSteps on session 's': its first step on A (B not started yet), then
 * occupies A's only slot and starts B, then asks for the second step.
 */
async function secondStepWhileOwnerBusy(t, options) {
  const f = await fleet(t, options)
  await f.start('A', { workerTagFilter: { defaultAnd: ['a'] } })
  const id = uniqueName('two-steps')
  await f.client.startOrchestration(id, 'TwoSteps', 's')
  await f.started('first@A')
  await f.client.startOrchestration(uniqueName('occupy'), 'Occupy', 'busy')
  await f.started('busy@A')
  await f.start('B')
  await f.client.raiseEvent(id, 'next', null)
  return { ...f, id }
}

test('a session stays with its busy owner: the idle runtime does not take its next activity', async (t) => {
  const f = await secondStepWhileOwnerBusy(t, {})
  // B polls every 5 ms, and sessions are renewed every second: a few lock
  // periods without the second step on B means it stays pinned to A.
  await sleep(3 * LEASES.sessionLockTimeoutMs)
  assert.deepEqual(f.events, ['first@A', 'busy@A'], 'nothing ran while A was busy')
  await f.open('busy')
  const s = await f.client.waitForOrchestration(f.id, 20000)
  assert.deepEqual(s.output, ['A', 'A'])
  assert.deepEqual(f.events, ['first@A', 'busy@A', 'second@A'], 'the second step waited for A')
})

test('a session idle for sessionIdleTimeoutMs is released: the other runtime takes its next activity while the owner is busy', async (t) => {
  const f = await secondStepWhileOwnerBusy(t, { sessionIdleTimeoutMs: 1500 })
  const s = await f.client.waitForOrchestration(f.id, 30000)
  assert.deepEqual(s.output, ['A', 'B'])
  assert.deepEqual(f.events, ['first@A', 'busy@A', 'second@B'], 'the second step ran on B while A was still busy')
})

for (const limit of [1, 2]) {
  test(`maxSessionsPerRuntime: ${limit} with two free worker slots runs ${limit === 1 ? 'one session at a time' : 'both sessions at once'}`, async (t) => {
    const f = await fleet(t, { workerConcurrency: 2, maxSessionsPerRuntime: limit })
    await f.start('A')
    const id = uniqueName('parallel')
    await f.client.startOrchestration(id, 'Parallel', ['s1', 's2'])
    await eventually(() => f.events.length >= 1, { what: 'a session to start' })
    if (limit === 2) {
      // Both run before either is released.
      await eventually(() => f.events.length === 2, { what: 'the second session to start' })
    } else {
      // The free slot may not start the second session while the first runs.
      await sleep(3 * LEASES.sessionLockTimeoutMs)
      assert.equal(f.events.length, 1, `started: ${f.events}`)
    }
    const [firstGate] = f.events[0].split('@')
    await f.open(firstGate)
    await f.open(firstGate === 's1' ? 's2' : 's1')
    const s = await f.client.waitForOrchestration(id, 20000)
    assert.deepEqual(s.output, ['A', 'A'])
    assert.deepEqual([...f.events].sort(), ['s1@A', 's2@A'])
  })
}
