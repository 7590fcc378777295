'use strict'
// docs/performance.md's tables from one run's JSON lines
// (`npm run bench -- --markdown`).

const secs = (ms) => `${(ms / 1000).toFixed(2)} s`

function label(r) {
  switch (r.workload) {
    case 'hello':
      return `hello: ${r.n} orchestrations × 1 activity`
    case 'chain':
      return `chain: 1 orchestration × ${r.n} sequential activities`
    case 'fanout':
      return `fanout: 1 orchestration × ${r.n} parallel activities`
    case 'payload':
      return `payload: ${r.n} orchestrations × 1 activity, ${r.bytes / 1024} KiB in and out`
    case 'idle':
      return `idle: ${r.processes} process${r.processes > 1 ? 'es' : ''} × ${r.runtimes} runtime${r.runtimes > 1 ? 's' : ''}, transactions/s over ${r.seconds} s`
    default:
      return r.workload
  }
}

function row(r) {
  if (r.error) return `| ${label(r)} | ${r.store} | failed: ${r.error} | | | |`
  if (r.baseline_error && r.baseline_ms === undefined && r.baseline_tps === undefined) {
    const ours = r.workload === 'idle' ? r.ours_tps : secs(r.ours_ms)
    return `| ${label(r)} | ${r.store} | failed: ${r.baseline_error} | ${ours} | | |`
  }
  if (r.workload === 'idle') return `| ${label(r)} | ${r.store} | ${r.baseline_tps} | ${r.ours_tps} | ${r.ratio} | |`
  const perStep = r.workload === 'chain' ? `${r.baseline_step_ms} ms / ${r.ours_step_ms} ms` : ''
  const failedFirst = r.baseline_failed_runs ? ` (after ${r.baseline_failed_runs} failed run${r.baseline_failed_runs > 1 ? 's' : ''})` : ''
  return `| ${label(r)} | ${r.store} | ${secs(r.baseline_ms)}${failedFirst} | ${secs(r.ours_ms)} | ${r.ratio} | ${perStep} |`
}

const round1 = (x) => Number(x.toFixed(1))
const cell = (x) => (x === undefined ? '' : String(x))
/**
 * CPU per activity: the side's own process + the rest of the machine. The
 * two are sampled a little apart and in ticks, so the rest is floored at 0
 * (on SQLite the process is nearly all of it).
 */
const cpuCell = (all, own) => {
  if (all === undefined) return ''
  if (own === undefined) return String(all)
  return `${own} + ${Math.max(0, Number((all - own).toFixed(2)))}`
}

/** The second table: what each activity cost, for the rows that measured it. */
function workTable(results) {
  const measured = results.filter((r) => r.ours_cpu_ms_per_activity !== undefined || r.ours_transactions_per_activity !== undefined)
  if (measured.length === 0) return []
  return [
    '',
    'What each activity cost, from the same runs: CPU ms over the timed span, the side\'s own process + the rest of the machine ' +
      '(Postgres, on Postgres), and on Postgres the server\'s transactions over the whole process, store set-up included.',
    '',
    '| workload | store | CPU ms, crate | CPU ms, ours | transactions, crate | transactions, ours |',
    '|---|---|---|---|---|---|',
    ...measured.map(
      (r) =>
        `| ${label(r)} | ${r.store} | ${cpuCell(r.baseline_cpu_ms_per_activity, r.baseline_process_cpu_ms_per_activity)} | ` +
        `${cpuCell(r.ours_cpu_ms_per_activity, r.ours_process_cpu_ms_per_activity)} | ` +
        `${cell(r.baseline_transactions_per_activity)} | ${cell(r.ours_transactions_per_activity)} |`,
    ),
  ]
}

/**
 * What each number is, in runs of one `npm run bench`: `repeat` is
 * `--repeat`'s count for every workload, or workload -> count from
 * bench/run.js's `defaultRepeat`.
 */
function runsPhrase(repeat, command) {
  if (typeof repeat === 'number') {
    return repeat === 1 ? `All numbers are from one run of ${command}` : `All numbers are medians of ${repeat} runs of ${command}`
  }
  const byCount = new Map()
  for (const [workload, n] of Object.entries(repeat)) byCount.set(n, [...(byCount.get(n) || []), workload])
  const parts = [...byCount]
    .sort(([a], [b]) => b - a)
    .map(([n, workloads]) => `${workloads.join(', ')}: ${n === 1 ? 'one run' : `the median of ${n} runs`}`)
  return `Numbers from one ${command} (${parts.join('; ')})`
}

/** `results`: the JSON lines of one run; `run`: describeRun() of bench/run.js. */
function markdown(results, run) {
  const timed = results.filter((r) => r.workload !== 'memory' || r.error)
  const memory = results.filter((r) => r.workload === 'memory' && !r.error)
  const out = [
    `Measured ${run.date} on ${run.machine}; ${run.software}; ${run.build}.`,
    `${runsPhrase(run.repeat, `\`npm run bench${run.quick ? ' -- --quick' : ''}\``)}, ` +
      `both sides with ${run.options}, alternating which side runs first.`,
    '',
    '| workload | store | Rust crate | duroxide-node | ratio | per step, crate / ours |',
    '|---|---|---|---|---|---|',
    ...timed.map(row),
    '',
    'Ratio is crate time ÷ our time (for idle: crate transactions/s ÷ ours), so above 1 means duroxide-node does better.',
    ...workTable(timed),
  ]
  for (const m of memory) {
    out.push(
      '',
      `Memory: ${m.n.toLocaleString('en-US')} hello orchestrations through one runtime on ${m.store}: RSS ${m.ours_rss_first_mb} MiB after the first ${m.first_batch.toLocaleString('en-US')}, ` +
        `${m.ours_rss_last_mb} MiB after the last ${m.last_batch.toLocaleString('en-US')} (×${m.ratio}); ` +
        (m.baseline_rss_first_mb === undefined
          ? `the Rust crate on the same workload failed (${m.baseline_error}).`
          : `the Rust crate on the same workload: ${m.baseline_rss_first_mb} MiB, then ${m.baseline_rss_last_mb} MiB (×${m.baseline_ratio}).`) +
        (m.ours_v8_heap_first_mb === undefined
          ? ''
          : ` Of our RSS, the V8 heap (committed, its young generation included) was ${m.ours_v8_heap_first_mb} MiB, then ${m.ours_v8_heap_last_mb} MiB; ` +
            `outside it RSS went from ${round1(m.ours_rss_first_mb - m.ours_v8_heap_first_mb)} to ${round1(m.ours_rss_last_mb - m.ours_v8_heap_last_mb)} MiB (×${m.ours_outside_v8_ratio}).`),
    )
  }
  return out.join('\n') + '\n'
}

module.exports = { markdown }
