'use strict'
// Item 5: a message whose turn can never finish (its handler kills the process
// mid-turn, a crash loop) ends as Failed with a poison error once it has been
// fetched more than maxAttempts times, after exactly maxAttempts crashes, and
// the member that gives up on it says so loudly, naming the instance. How long
// that takes is printed, not asserted (it depends on the lease and on how fast
// a member starts).
const test = require('node:test')
const assert = require('node:assert/strict')
const { Worker, pgFleet, report } = require('./harness')

const MAX_ATTEMPTS = 3
const LOCK_MS = 2000
// A hang guard for the wait on each member, not a measurement.
const WAIT_MS = 60000

test('a crash-looping message is poisoned after maxAttempts crashes, loudly', { timeout: 180000 }, async (t) => {
  const { pg, client, cfg } = await pgFleet(t, 'dxf_poison', {
    dispatcherPollIntervalMs: 10,
    orchestratorLockTimeoutMs: LOCK_MS,
    orchestratorLockRenewalBufferMs: 500,
    maxAttempts: MAX_ATTEMPTS,
  }, { effects: false })
  const id = 'poison-crash-loop'
  const t0 = Date.now()
  await client.startOrchestration(id, 'CrashTurn', null)

  // Keep one member alive at a time, replacing it whenever the message kills it.
  let crashes = 0
  let member
  for (;;) {
    member = new Worker(t, cfg, { name: `member-${crashes}` })
    // The queued message can kill a member before it reports ready: that is a
    // crash like any other, not a failure of the test.
    const crashedBeforeReady = await member.ready().then(
      () => false,
      (err) => {
        if (/could not connect/.test(err.message)) throw err
        return member.exited.then(() => true)
      },
    )
    const outcome = crashedBeforeReady
      ? 'crashed'
      : await Promise.race([
        member.exited.then(() => 'crashed'),
        client.waitForOrchestration(id, WAIT_MS).then(() => 'terminal'),
      ])
    if (outcome === 'terminal') break
    crashes++
    assert.ok(crashes <= MAX_ATTEMPTS, `the message crashed ${crashes} members; maxAttempts is ${MAX_ATTEMPTS}`)
  }
  const elapsed = Date.now() - t0
  const status = await client.getStatus(id)
  assert.equal(status.status, 'Failed')
  assert.equal(status.errorCategory, 'poison')
  assert.match(status.error, new RegExp(`poison: orchestration ${id} exceeded ${MAX_ATTEMPTS + 1} attempts \\(max ${MAX_ATTEMPTS}\\)`))
  assert.equal(crashes, MAX_ATTEMPTS, 'every allowed attempt ran (and crashed) before the message was poisoned')

  // What the operator sees on the member that gave up.
  const { stopped } = await member.stop(5000)
  assert.equal(stopped.metrics.orchPoison, 1, 'the poison counter moved')
  // An error-level log line and a runtime event, both naming the instance.
  const loud = member.grep(/ERROR/).filter((l) => l.includes(id) && /poison/i.test(l))
  assert.ok(loud.length > 0, `an error-level line names ${id} as poisoned; stderr:\n${member.stderr.slice(-3000)}`)
  const events = member.messages.filter((m) => m.type === 'runtime-event' && m.name === 'poison')
  assert.equal(events.length, 1, "one runtime 'poison' event")
  assert.equal(events[0].event.instanceId, id)
  assert.equal(events[0].event.queue, 'orchestrator')
  assert.equal(events[0].event.maxAttempts, MAX_ATTEMPTS)
  report(t, `poison: ${crashes} crashes then Failed after ${elapsed} ms = ${(elapsed / (MAX_ATTEMPTS * LOCK_MS)).toFixed(2)} x maxAttempts x lock (maxAttempts ${MAX_ATTEMPTS}, lock ${LOCK_MS} ms); ` +
    `log: ${loud[0].slice(0, 400)}`)
})
