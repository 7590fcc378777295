'use strict'
// Item 2: graceful shutdown with work in flight, then a restart. shutdown()
// returns with work still unfinished, and as soon as the work drains when that
// is sooner than its timeout (before half of it has passed: an order, not a
// measurement); after the restart everything completes, each orchestration and
// each activity completion exactly once. How long shutdown takes is measured
// by bench/timing-shutdown.js.
const test = require('node:test')
const assert = require('node:assert/strict')
const { pgSchema, Client } = require('../helpers')
const { Worker, effectsDir, report, completionProblems } = require('./harness')
const { readEffects } = require('./workers/catalog')

async function verifyExactlyOnce(client, schema, fx, expected) {
  const problems = await completionProblems(client, schema, expected, (id, want, events) => {
    const more = []
    const done = events.filter((e) => e.kind === 'OrchestrationCompleted').length
    if (done !== 1) more.push(`${id}: ${done} OrchestrationCompleted events`)
    const keys = new Set(readEffects(fx, id).map((e) => e.k))
    for (const o of want) if (!keys.has(o.replace(':done', ''))) more.push(`${id}: side effect ${o} missing`)
    return more
  })
  assert.deepEqual(problems, [])
}

function config(pg, fx) {
  return {
    backend: 'postgres',
    url: pg.url,
    schema: pg.schema,
    effectsDir: fx,
    options: {
      orchestrationConcurrency: 4,
      workerConcurrency: 8,
      dispatcherPollIntervalMs: 10,
      // An activity cut off by shutdown keeps its lease until it expires.
      workerLockTimeoutMs: 3000,
      workerLockRenewalBufferMs: 1000,
    },
  }
}

test('shutdown with 50 in flight returns part way; a restart completes everything exactly once', { timeout: 180000 }, async (t) => {
  const pg = await pgSchema(t, 'dxf_shut')
  const client = new Client(pg.provider)
  const fx = effectsDir(t)
  const cfg = config(pg, fx)
  const first = new Worker(t, cfg, { name: 'first' })
  await first.ready()

  const expected = new Map()
  for (let i = 0; i < 50; i++) {
    await client.startOrchestration(`shut-${i}`, 'Chain', { n: 3, ms: 50, slowAt: 0, slowMs: 1000, announceAt: 0 })
    expected.set(`shut-${i}`, ['s0:done', 's1:done', 's2:done'])
  }
  // Part way: some first steps are running (8 worker slots, 1 s each).
  await first.waitFor((m) => m.type === 'activity' && first.messages.filter((x) => x.type === 'activity').length >= 8)
  const timeoutMs = 1000
  const { stopped, exit } = await first.stop(timeoutMs)
  assert.ok(exit, 'the process did not exit on its own after shutdown')
  const unfinished = [...expected.keys()].length - stopped.metrics.orchCompletions
  assert.ok(unfinished > 0, 'shutdown came part way, with work left')

  const second = new Worker(t, cfg, { name: 'second' })
  await second.ready()
  await verifyExactlyOnce(client, pg.schema, fx, expected)
  const text = `shutdown(${timeoutMs}) with 50 in flight returned in ${stopped.elapsedMs} ms = ${(stopped.elapsedMs / timeoutMs).toFixed(2)} x its timeout; ${unfinished} finished after the restart`
  report(t, text)
  await second.stop(5000)
})

test('shutdown returns as soon as in-flight work drains, long before its timeout', { timeout: 120000 }, async (t) => {
  const pg = await pgSchema(t, 'dxf_drain')
  const client = new Client(pg.provider)
  const fx = effectsDir(t)
  const cfg = config(pg, fx)
  const member = new Worker(t, cfg, { name: 'drainer' })
  await member.ready()

  const expected = new Map()
  for (let i = 0; i < 6; i++) {
    await client.startOrchestration(`drain-${i}`, 'Chain', { n: 2, ms: 0, slowAt: 0, slowMs: 1500, announceAt: 0 })
    expected.set(`drain-${i}`, ['s0:done', 's1:done'])
  }
  await member.waitFor(() => member.messages.filter((m) => m.type === 'activity').length >= 6)
  const timeoutMs = 60000
  // The activities have at most 1.5 s left. A shutdown that slept its whole
  // timeout would lose this race against half of it.
  let halfway
  const half = new Promise((resolve) => { halfway = setTimeout(() => resolve('half the timeout'), timeoutMs / 2) })
  const first = await Promise.race([member.stop(timeoutMs).then((r) => ({ r })), half])
  clearTimeout(halfway)
  assert.notEqual(first, 'half the timeout', `shutdown(${timeoutMs}) had not returned after ${timeoutMs / 2} ms`)
  const { stopped, exit } = first.r
  assert.ok(exit, 'the process did not exit on its own after shutdown')
  const restart = new Worker(t, cfg, { name: 'restart' })
  await restart.ready()
  await verifyExactlyOnce(client, pg.schema, fx, expected)
  // The in-flight activities finished and were recorded before shutdown
  // returned: the restart did not run them again.
  for (const id of expected.keys()) {
    assert.equal(readEffects(fx, id).filter((e) => e.k === 's0').length, 1, `${id}: s0 ran once`)
  }
  const text = `shutdown(${timeoutMs}) with 6 activities 1.5 s from done returned in ${stopped.elapsedMs} ms = ${(stopped.elapsedMs / 1500).toFixed(2)} x the 1.5 s of work left`
  report(t, text)
  await restart.stop(5000)
})

// Regression: an activity that finishes while its runtime stops acks with
// the next turn's fetch riding on it (src/providers/history_tail/ride.rs);
// no slot of the stopping runtime takes that turn, and a process that exits
// right after shutdown kept it locked for the whole orchestrator lock
// timeout. Shutdown gives such items back.
test('a turn fetched by an ack during shutdown goes back to the queue, not locked for the lock timeout', { timeout: 120000 }, async (t) => {
  const pg = await pgSchema(t, 'dxf_giveback')
  const client = new Client(pg.provider)
  const fx = effectsDir(t)
  const cfg = config(pg, fx)
  cfg.options = { ...cfg.options, orchestratorLockTimeoutMs: 90000 }
  const member = new Worker(t, cfg, { name: 'stopping' })
  await member.ready()
  const id = 'giveback-1'
  await client.startOrchestration(id, 'Chain', { n: 2, ms: 0, slowAt: 0, slowMs: 1500, announceAt: 0 })
  await member.waitFor((m) => m.type === 'activity' && m.instanceId === id)
  const { exit } = await member.stop(60000)
  assert.ok(exit, 'the process did not exit on its own after shutdown')
  assert.equal(readEffects(fx, id).filter((e) => e.k === 's0').length, 1, 's0 finished before shutdown returned')
  const restart = new Worker(t, cfg, { name: 'restart' })
  await restart.ready()
  // Far below the 90 s lock: the turn was not left locked by the stopped process.
  const s = await client.waitForOrchestration(id, 20000)
  assert.equal(s.status, 'Completed', `${s.status}: ${s.error}`)
  assert.deepEqual(s.output, ['s0:done', 's1:done'])
  await restart.stop(5000)
})
