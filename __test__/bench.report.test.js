'use strict'
// bench/report.js: a case that failed on one side is a row that says so, and
// the rows measured before it still make the table.
const test = require('node:test')
const assert = require('node:assert')
const { markdown } = require('../bench/report')

const run = { date: 'd', machine: 'm', software: 's', build: 'b', repeat: 1, quick: false, options: 'o' }

test('bench report: a failed case is a row naming the failure, next to the measured rows', () => {
  const out = markdown(
    [
      { workload: 'hello', store: 'sqlite', n: 200, ours_ms: 700, baseline_ms: 800, ratio: 1.14 },
      { workload: 'memory', store: 'sqlite', n: 10000, batch: 1000, error: 'baseline memory on sqlite exited with 1:' },
    ],
    run,
  )
  assert.match(out, /\| hello: 200 orchestrations × 1 activity \| sqlite \| 0\.80 s \| 0\.70 s \| 1\.14 \|/)
  assert.match(out, /\| memory \| sqlite \| failed: baseline memory on sqlite exited with 1: \|/)
  assert.doesNotMatch(out, /NaN|undefined/)
})
