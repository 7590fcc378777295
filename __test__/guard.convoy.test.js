'use strict'
// The fetch convoy, short form (issue 5, "done when"): a fleet of 2 processes
// x 4 runtimes x 8 orchestration slots on one Postgres schema, with slow turns
// and steady arrivals, completes every orchestration and logs no deadlock.
// Timings are the benchmark's business: `node bench/convoy.js` prints fetch
// p99 and throughput with the fetch cap on and off.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { runConvoy, format } = require('../bench/convoy')

test('a 64-dispatcher fleet on one schema completes every orchestration without deadlocks', async (t) => {
  const r = await runConvoy({ processes: 2, runtimes: 4, slots: 8, rate: 15, seconds: 8, turnMs: 20, steps: 2, timeoutMs: 60000 })
  for (const line of format(r).split('\n')) t.diagnostic(line.trim())
  assert.deepEqual(r.exitCodes, [0, 0], 'both processes shut down cleanly')
  assert.equal(r.failed, 0)
  assert.equal(r.completed, r.total, `${r.completed} of ${r.total} completed`)
  assert.equal(r.deadlockLogLines, 0, r.firstDeadlocks.join('\n'))
  assert.equal(r.deadlockRetries, 0)
  assert.equal(r.invalidLockTokenAcks, 0)
  assert.equal(r.poisonDispositions, 0)
  assert.equal(typeof r.fetchP99MaxMs, 'number', 'every runtime reports its fetch latency')
})
