'use strict'
// Item 9: v1 of an orchestration runs to a wait; the process is replaced by
// one whose code changed at that step. The instance fails with a
// nondeterminism error that names the step, instead of silently producing a
// different result.
const test = require('node:test')
const assert = require('node:assert/strict')
const { pgSchema, eventually, Client } = require('../helpers')
const { Worker, historyOf, report } = require('./harness')

test('changed code replaying an old history fails the instance with a nondeterminism error naming the step', { timeout: 120000 }, async (t) => {
  const pg = await pgSchema(t, 'dxf_nondet')
  const client = new Client(pg.provider)
  const base = { backend: 'postgres', url: pg.url, schema: pg.schema, options: { dispatcherPollIntervalMs: 10 } }

  const v1 = new Worker(t, { ...base, codeVersion: 'v1' }, { name: 'v1' })
  await v1.ready()
  await client.startOrchestration('evolving', 'Evolving', null)
  // v1 ran activity A and now waits for the event.
  await eventually(async () => {
    const kinds = (await historyOf(client, pg.schema, 'evolving')).map((e) => e.kind)
    return kinds.includes('ActivityCompleted') && kinds.some((k) => /Subscribed/.test(k))
  }, { timeoutMs: 30000, what: 'v1 to reach its wait' })
  assert.equal((await client.getStatus('evolving')).status, 'Running')
  await v1.stop(5000)

  const v2 = new Worker(t, { ...base, codeVersion: 'v2' }, { name: 'v2' })
  await v2.ready()
  await client.raiseEvent('evolving', 'go', 'now')
  const s = await client.waitForOrchestration('evolving', 30000)
  assert.equal(s.status, 'Failed', `expected a failure, got ${s.status} with output ${JSON.stringify(s.output)}`)
  assert.match(s.error, /nondetermin/i)
  // The message names what the new code did at the diverging step and what history holds there.
  assert.match(s.error, /timer/i, s.error)
  assert.match(s.error, /wait for event 'go'/, s.error)
  assert.notEqual(s.errorCategory, 'application')
  report(t, `nondeterminism: ${s.errorCategory}: ${s.error}`)
  await v2.stop(5000)
})
