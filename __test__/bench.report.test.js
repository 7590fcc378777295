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

test('bench report: the memory line splits our RSS into the V8 heap and the rest', () => {
  const out = markdown(
    [
      {
        workload: 'memory', store: 'sqlite', n: 10000, first_batch: 1000, last_batch: 1000,
        ours_rss_first_mb: 79.3, ours_rss_last_mb: 100, ratio: 1.261,
        ours_v8_heap_first_mb: 14.2, ours_v8_heap_last_mb: 37.2, ours_outside_v8_ratio: 0.965,
        baseline_rss_first_mb: 14.1, baseline_rss_last_mb: 14.5, baseline_ratio: 1.028,
      },
    ],
    run,
  )
  assert.match(out, /RSS 79\.3 MiB after the first 1,000, 100 MiB after the last 1,000 \(×1\.261\)/)
  assert.match(out, /the V8 heap \(committed, its young generation included\) was 14\.2 MiB, then 37\.2 MiB; outside it RSS went from 65\.1 to 62\.8 MiB \(×0\.965\)/)
  assert.doesNotMatch(out, /NaN|undefined/)
})

test('bench report: a baseline that failed leaves our numbers in the row and the memory line', () => {
  const out = markdown(
    [
      { workload: 'chain', store: 'sqlite', n: 100, ours_ms: 255, ours_step_ms: 2.55, baseline_error: 'baseline chain on sqlite exited with 1' },
      {
        workload: 'memory', store: 'sqlite', n: 10000, first_batch: 1000, last_batch: 1000,
        ours_rss_first_mb: 79.3, ours_rss_last_mb: 100, ratio: 1.261,
        ours_v8_heap_first_mb: 14.2, ours_v8_heap_last_mb: 37.2, ours_outside_v8_ratio: 0.965,
        baseline_error: 'baseline memory on sqlite exited with 1: database is locked',
      },
    ],
    run,
  )
  assert.match(out, /\| chain: 1 orchestration × 100 sequential activities \| sqlite \| failed: baseline chain on sqlite exited with 1 \| 0\.26 s \| \| \|/)
  assert.match(out, /RSS 79\.3 MiB after the first 1,000, 100 MiB after the last 1,000 \(×1\.261\); the Rust crate on the same workload failed \(baseline memory on sqlite exited with 1: database is locked\)\./)
  assert.doesNotMatch(out, /NaN|undefined/)
})

test('bench report: the CPU time and transactions per activity make a second table, for the rows that have them', () => {
  const out = markdown(
    [
      {
        workload: 'hello', store: 'postgres', n: 200, ours_ms: 390, baseline_ms: 610, ratio: 1.56,
        ours_cpu_ms_per_activity: 3.6, baseline_cpu_ms_per_activity: 7.2,
        ours_process_cpu_ms_per_activity: 1.4, baseline_process_cpu_ms_per_activity: 2.9,
        ours_transactions_per_activity: 7.3, baseline_transactions_per_activity: 13.8,
      },
      {
        workload: 'hello', store: 'sqlite', n: 200, ours_ms: 600, baseline_ms: 1190, ratio: 1.98,
        ours_cpu_ms_per_activity: 2.1, baseline_cpu_ms_per_activity: 4.4, ours_process_cpu_ms_per_activity: 2.3, baseline_process_cpu_ms_per_activity: 4.3,
      },
      { workload: 'idle', store: 'postgres', processes: 1, runtimes: 1, seconds: 10, ours_tps: 7.4, baseline_tps: 1099, ratio: 148.5 },
    ],
    run,
  )
  assert.match(out, /\| CPU ms, crate \| CPU ms, ours \| transactions, crate \| transactions, ours \|/)
  assert.match(out, /\| hello: 200 orchestrations × 1 activity \| postgres \| 2\.9 \+ 4\.3 \| 1\.4 \+ 2\.2 \| 13\.8 \| 7\.3 \|/)
  assert.match(out, /\| hello: 200 orchestrations × 1 activity \| sqlite \| 4\.3 \+ 0\.1 \| 2\.3 \+ 0 \| +\| +\|/)
  assert.doesNotMatch(out.split('CPU ms, crate')[1], /idle/)
  assert.doesNotMatch(out, /NaN|undefined/)
})

test('bench report: a run without those measurements has no second table', () => {
  const out = markdown([{ workload: 'hello', store: 'sqlite', n: 200, ours_ms: 700, baseline_ms: 800, ratio: 1.14 }], run)
  assert.doesNotMatch(out, /CPU ms/)
})

test('bench report: a baseline time that came after failed runs says how many failed', () => {
  const out = markdown(
    [{ workload: 'hello', store: 'sqlite', n: 200, ours_ms: 600, baseline_ms: 1190, ratio: 1.98, baseline_failed_runs: 2, baseline_error: 'database is locked' }],
    run,
  )
  assert.match(out, /\| hello: 200 orchestrations × 1 activity \| sqlite \| 1\.19 s \(after 2 failed runs\) \| 0\.60 s \| 1\.98 \|/)
})

test('bench report: with the default repeats the header says which workloads are medians and of how many runs', () => {
  const repeat = { hello: 3, chain: 3, fanout: 3, payload: 3, idle: 1, memory: 1 }
  const out = markdown([{ workload: 'hello', store: 'sqlite', n: 200, ours_ms: 700, baseline_ms: 800, ratio: 1.14 }], { ...run, repeat })
  assert.match(out, /Numbers from one `npm run bench` \(hello, chain, fanout, payload: the median of 3 runs; idle, memory: one run\), both sides/)
  assert.doesNotMatch(out, /All numbers|NaN|undefined|\[object Object\]/)
})
