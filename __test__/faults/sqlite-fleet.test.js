'use strict'
// Three processes running runtimes on one SQLite file, and the test's client
// as a fourth writer. Each process takes its own writes one at a time
// (src/providers/sqlite_writer.rs) and runs its fetches, acks and enqueues
// on a connection of its own (src/providers/sqlite_direct.rs), which
// does not wait for another process's write lock: it reports busy, and the
// retry layer runs the call again. So this is where those busy errors happen,
// between processes, and none may reach a runtime, fail an instance, or let
// an activity or a turn complete twice.
const test = require('node:test')
const assert = require('node:assert/strict')
const { sqliteFile, Client } = require('../helpers')
const { Worker, effectsDir, historyProblems, waitAll, report } = require('./harness')
const { readEffects } = require('./workers/catalog')

const OPTIONS = { orchestrationConcurrency: 2, workerConcurrency: 4, dispatcherPollIntervalMs: 10 }

// Activities of 20 ms: a member whose activity slots are all sleeping writes
// nothing, so the others get the file. With instant activities one member
// once kept the write lock busy enough to finish all 90 in 1.2 s (0/0/90).
function shapeOf(i) {
  if (i % 3 === 0) return ['FanOut', { n: 5, ms: 20 }, Array.from({ length: 5 }, (_, k) => `f${k}:done`)]
  if (i % 3 === 1) return ['Chain', { n: 3, ms: 20 }, ['s0:done', 's1:done', 's2:done']]
  return ['Hello', `n${i}`, `hello-n${i}:done`]
}

test('SQLite fleet: 3 processes and a client on one file complete every orchestration once, no busy error reaches a runtime', { timeout: 180000 }, async (t) => {
  const db = await sqliteFile(t, 'dxf-sqlite-fleet')
  const cfg = { backend: 'sqlite', url: db.url, options: OPTIONS, effectsDir: effectsDir(t) }
  const fleet = [0, 1, 2].map((k) => new Worker(t, cfg, { name: `member-${k}` }))
  await Promise.all(fleet.map((w) => w.ready()))

  const client = new Client(db.provider)
  const COUNT = 90
  const expected = new Map()
  for (let first = 0; first < COUNT; first += 10) {
    const starts = []
    for (let i = first; i < first + 10; i++) {
      const [name, input, output] = shapeOf(i)
      expected.set(`fleet-${i}`, output)
      starts.push(client.startOrchestration(`fleet-${i}`, name, input))
    }
    await Promise.all(starts)
  }

  const statuses = await waitAll(client, [...expected.keys()], 150000)
  const problems = []
  for (const [id, want] of expected) {
    const s = statuses.get(id)
    if (s.status !== 'Completed') {
      problems.push(`${id}: ${s.status} ${s.error ?? ''}`)
      continue
    }
    assert.deepEqual(s.output, want, id)
    const events = await client.readExecutionHistory(id, 1)
    const history = events.map((e) => ({ eventId: e.eventId, kind: e.kind, sourceEventId: e.sourceEventId ?? null }))
    problems.push(...historyProblems(id, history, Array.isArray(want) ? want.length : 1))
    const keys = readEffects(cfg.effectsDir, id).map((e) => e.k)
    const wanted = [].concat(want).map((o) => o.replace(':done', ''))
    for (const k of wanted) if (!keys.includes(k)) problems.push(`${id}: side effect ${k} never happened`)
  }
  assert.deepEqual(problems, [])

  const stops = await Promise.all(fleet.map((w) => w.stop(5000)))
  const metrics = fleet.map((w) => w.messages.find((m) => m.type === 'stopped').metrics)
  const completions = metrics.reduce((sum, m) => sum + m.orchCompletions, 0)
  const completedBy = metrics.map((m) => m.orchCompletions)
  const surfaced = fleet.flatMap((w) => w.stderr.split('\n').filter((l) => /database is locked/.test(l)))
  report(t, `sqlite fleet: ${COUNT} orchestrations; completed per member ${completedBy.join('/')}; ` +
    `in all ${completions}; busy errors that reached a runtime: ${surfaced.length}`)
  assert.equal(completions, COUNT, 'each orchestration completed once, in one member')
  assert.ok(completedBy.filter((n) => n > 0).length >= 2, `one member did all the work (${completedBy.join('/')}): not a fleet`)
  assert.deepEqual(surfaced.slice(0, 3), [], 'no busy error reached a runtime')
  for (const m of metrics) {
    assert.equal(m.orchInfrastructureErrors, 0)
    assert.equal(m.orchFailures, 0)
  }
  for (const s of stops) assert.ok(s.exit, 'a member did not exit on its own after shutdown')
})
