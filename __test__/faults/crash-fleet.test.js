'use strict'
// Item 1: a 3-process fleet on one Postgres schema; one member is SIGKILLed in
// the middle of an activity, another in the middle of an orchestration turn.
// Every orchestration completes with the right output, no history holds an
// activity completion twice, every side effect happened at least once, and the
// interrupted activity re-ran in a surviving member. How long recovery took
// after each kill (against the lock timeouts) is printed, not asserted:
// bench/timing-faults.js collects it.
const test = require('node:test')
const assert = require('node:assert/strict')
const { Worker, pgFleet, firstMessage, historyOf, historyProblems, waitAll, report } = require('./harness')
const { readEffects } = require('./workers/catalog')

const LOCKS = {
  orchestratorLockTimeoutMs: 2000,
  orchestratorLockRenewalBufferMs: 500,
  workerLockTimeoutMs: 3000,
  workerLockRenewalBufferMs: 1000,
}

function chainOutput(n) {
  return Array.from({ length: n }, (_, k) => `s${k}:done`)
}
function fanOutput(n) {
  return Array.from({ length: n }, (_, k) => `f${k}:done`)
}

test('SIGKILL mid-activity and mid-turn in a 3-process fleet: nothing lost, nothing completed twice', { timeout: 240000 }, async (t) => {
  const { pg, client, cfg } = await pgFleet(t, 'dxf_crash', { orchestrationConcurrency: 2, workerConcurrency: 4, dispatcherPollIntervalMs: 10, ...LOCKS })
  let seq = 0
  const spawn = () => new Worker(t, cfg, { name: `member-${seq++}` })
  const fleet = [spawn(), spawn(), spawn()]
  await Promise.all(fleet.map((w) => w.ready()))

  const expected = new Map()
  const startLoad = async (tag, count) => {
    for (let i = 0; i < count; i++) {
      const chain = `${tag}-chain-${i}`
      await client.startOrchestration(chain, 'Chain', { n: 4, ms: 100 })
      expected.set(chain, chainOutput(4))
      if (i % 2 === 0) {
        const fan = `${tag}-fan-${i}`
        await client.startOrchestration(fan, 'FanOut', { n: 5, ms: 100 })
        expected.set(fan, fanOutput(5))
      }
    }
  }
  await startLoad('a', 16)

  // Kill 1: a member running the slow second step of victim-activity.
  await client.startOrchestration('victim-activity', 'Chain', { n: 3, ms: 20, announceAt: 1, slowAt: 1, slowMs: 4000 })
  expected.set('victim-activity', chainOutput(3))
  const first = await firstMessage(fleet, (m) => m.type === 'activity' && m.instanceId === 'victim-activity', { what: 'victim-activity step s1 to start' })
  const activityKilledAt = Date.now()
  await first.worker.kill('SIGKILL')
  fleet.splice(fleet.indexOf(first.worker), 1, spawn())
  await startLoad('b', 10)

  // Kill 2: a member inside the turn that schedules victim-turn's second step.
  await client.startOrchestration('victim-turn', 'Chain', { n: 3, ms: 20, busyAt: 1, busyMs: 1500 })
  expected.set('victim-turn', chainOutput(3))
  const second = await firstMessage(fleet, (m) => m.type === 'turn' && m.instanceId === 'victim-turn', { what: 'the victim-turn turn to start' })
  const turnKilledAt = Date.now()
  await second.worker.kill('SIGKILL')
  fleet.splice(fleet.indexOf(second.worker), 1, spawn())
  await startLoad('c', 6)
  await Promise.all(fleet.map((w) => w.ready()))

  const everyone = () => [first.worker, second.worker, ...fleet]
  const activityRedo = await firstMessage(everyone(), (m) => m.type === 'activity' && m.instanceId === 'victim-activity' && m.pid !== first.worker.pid, { timeoutMs: 90000, what: 'victim-activity s1 to run again elsewhere' })
  const turnRedo = await firstMessage(everyone(), (m) => m.type === 'turn' && m.instanceId === 'victim-turn' && m.pid !== second.worker.pid, { timeoutMs: 90000, what: 'victim-turn turn to run again elsewhere' })
  const recovery = {
    activityMs: activityRedo.message.t - activityKilledAt,
    turnMs: turnRedo.message.t - turnKilledAt,
  }

  const statuses = await waitAll(client, [...expected.keys()], 120000)
  for (const [id, want] of expected) {
    const s = statuses.get(id)
    assert.equal(s.status, 'Completed', `${id}: ${s.status} ${s.error ?? ''}`)
    assert.deepEqual(s.output, want, id)
  }

  const problems = []
  let effectLines = 0
  let reRuns = 0
  for (const [id, want] of expected) {
    const events = await historyOf(client, pg.schema, id)
    problems.push(...historyProblems(id, events, want.length))
    const effects = readEffects(cfg.effectsDir, id)
    const keys = new Set(effects.map((e) => e.k))
    const wanted = expected.get(id).map((o) => o.replace(':done', ''))
    for (const k of wanted) if (!keys.has(k)) problems.push(`${id}: side effect ${k} never happened`)
    effectLines += effects.length
    reRuns += effects.length - keys.size
  }
  assert.deepEqual(problems, [])

  // The killed activity ran in the killed member and again in another one.
  const s1 = readEffects(cfg.effectsDir, 'victim-activity').filter((e) => e.k === 's1')
  assert.ok(s1.some((e) => e.p === first.worker.pid), 'the killed member had started s1')
  assert.ok(s1.some((e) => e.p !== first.worker.pid), 's1 re-ran in a surviving member')

  const ratio = (ms, lock) => (ms / lock).toFixed(2)
  const text = `crash recovery: activity re-ran ${recovery.activityMs} ms after SIGKILL = ${ratio(recovery.activityMs, LOCKS.workerLockTimeoutMs)} x workerLockTimeoutMs ${LOCKS.workerLockTimeoutMs}; ` +
    `turn re-ran ${recovery.turnMs} ms after SIGKILL = ${ratio(recovery.turnMs, LOCKS.orchestratorLockTimeoutMs)} x orchestratorLockTimeoutMs ${LOCKS.orchestratorLockTimeoutMs}; ` +
    `${expected.size} orchestrations, ${effectLines} side effects, ${reRuns} re-executions`
  report(t, text)

  const stops = await Promise.all(fleet.map((w) => w.stop(5000)))
  for (const s of stops) assert.ok(s.exit, 'a member did not exit on its own after shutdown')
})
