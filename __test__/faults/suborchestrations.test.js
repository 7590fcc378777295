'use strict'
// Item 13: parallel sub-orchestrations under contention. 20 parents each join
// 5 children across two processes with 4 orchestration slots and a 1 ms poll;
// every parent gets all 5 child outputs (an older provider lost child
// completions after Postgres broke a deadlock here).
const test = require('node:test')
const assert = require('node:assert/strict')
const { Worker, pgFleet, historyOf, historyProblems, waitAll, report } = require('./harness')

const PARENTS = 20
const CHILDREN = 5

test('20 parents x 5 children on two contending processes: every parent gets all 5 outputs', { timeout: 180000 }, async (t) => {
  const { pg, client, cfg } = await pgFleet(t, 'dxf_subs', { orchestrationConcurrency: 4, workerConcurrency: 4, dispatcherPollIntervalMs: 1 })
  const fleet = [new Worker(t, cfg, { name: 'p1' }), new Worker(t, cfg, { name: 'p2' })]
  await Promise.all(fleet.map((w) => w.ready()))

  const ids = []
  await Promise.all(Array.from({ length: PARENTS }, (_, i) => {
    ids.push(`parent-${i}`)
    return client.startOrchestration(`parent-${i}`, 'Parent', { children: CHILDREN })
  }))
  const want = Array.from({ length: CHILDREN }, (_, c) => `child-${c}`)
  const statuses = await waitAll(client, ids, 150000)
  const problems = []
  for (const [id, s] of statuses) {
    if (s.status !== 'Completed') problems.push(`${id}: ${s.status} ${s.error ?? ''}`)
    else if (JSON.stringify(s.output) !== JSON.stringify(want)) problems.push(`${id}: got ${JSON.stringify(s.output)}`)
    const events = await historyOf(client, pg.schema, id)
    problems.push(...historyProblems(id, events, 0))
    const done = events.filter((e) => /^SubOrchestration(Completed|Failed)$/.test(e.kind)).length
    if (done !== CHILDREN) problems.push(`${id}: ${done} child completions in history`)
  }
  assert.deepEqual(problems, [])
  const stops = await Promise.all(fleet.map((w) => w.stop(5000)))
  const warns = fleet.map((w) => w.grep(/deadlock/i).length).reduce((a, b) => a + b, 0)
  report(t, `sub-orchestrations: ${PARENTS}x${CHILDREN} complete; deadlock log lines: ${warns}; ` +
    `orchestrations completed per member: ${stops.map((s) => s.stopped.metrics.orchCompletions).join(', ')}`)
})
