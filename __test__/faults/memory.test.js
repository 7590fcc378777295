'use strict'
// Item 10: thousands of orchestrations with activities through one runtime,
// then shutdown. Heap (after full GC) and RSS show no growth trend across
// the second half, and the process exits on its own: no ThreadsafeFunction,
// timer or socket is left keeping it alive.
// CI runs 1,500 orchestrations; DUROXIDE_SOAK=1 (bench/soak-memory.js) runs 5,000.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { pgSchema } = require('../helpers')
const { Worker, SOAK, slope, report } = require('./harness')

const COUNT = SOAK ? 5000 : 1500
const BATCH = 100
// Growth allowed across the second half (measured: heap +0.01 to +0.02 MiB,
// RSS +0.8 to +6 MiB). A leak of 400 bytes per orchestration would pass the
// heap budget in CI's 700-orchestration half and fail it in the soak.
const HEAP_BUDGET = 256 * 1024
const RSS_BUDGET = 16 * 1024 * 1024

test(`${COUNT} orchestrations through one runtime: no heap or RSS growth trend, and the process exits on its own`, { timeout: SOAK ? 900000 : 300000 }, async (t) => {
  const pg = await pgSchema(t, 'dxf_mem')
  const member = new Worker(t, { url: pg.url, schema: pg.schema, count: COUNT, batch: BATCH }, {
    name: 'soak',
    script: path.join(__dirname, 'workers', 'memory-soak.js'),
    execArgv: ['--expose-gc'],
  })
  await member.waitFor('ready')
  const stopped = await member.waitFor('stopped', SOAK ? 850000 : 280000)
  assert.equal(stopped.metrics.orchCompletions, COUNT)
  assert.equal(stopped.metrics.orchFailures, 0)

  // The library holds nothing that keeps the event loop alive.
  assert.deepEqual(stopped.handles, [], `active resources after shutdown: ${stopped.handles.join(', ')}`)
  const exit = await Promise.race([member.exited, new Promise((r) => setTimeout(() => r(null), 15000).unref())])
  assert.ok(exit, 'the process did not exit on its own after shutdown')
  assert.equal(exit.code, 0)

  const samples = member.messages.filter((m) => m.type === 'sample')
  const half = samples.slice(Math.floor(samples.length / 2))
  const xs = half.map((s) => s.done)
  const span = xs[xs.length - 1] - xs[0]
  const heapGrowth = slope(xs, half.map((s) => s.heapUsed)) * span
  const rssGrowth = slope(xs, half.map((s) => s.rss)) * span
  const mb = (b) => `${(b / 1048576).toFixed(2)} MiB`
  report(t, `memory: ${COUNT} orchestrations in ${stopped.elapsedMs} ms; second-half trend: heap ${mb(heapGrowth)}, rss ${mb(rssGrowth)} ` +
    `over ${span} orchestrations; final heap ${mb(samples[samples.length - 1].heapUsed)}, rss ${mb(samples[samples.length - 1].rss)}`)
  assert.ok(heapGrowth < HEAP_BUDGET, `heap grew ${mb(heapGrowth)} across the second half`)
  assert.ok(rssGrowth < RSS_BUDGET, `rss grew ${mb(rssGrowth)} across the second half`)
})
