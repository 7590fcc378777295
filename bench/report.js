'use strict'
// The README's performance section from one run's JSON lines
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
  if (r.baseline_error) {
    const ours = r.workload === 'idle' ? r.ours_tps : secs(r.ours_ms)
    return `| ${label(r)} | ${r.store} | failed: ${r.baseline_error} | ${ours} | | |`
  }
  if (r.workload === 'idle') return `| ${label(r)} | ${r.store} | ${r.baseline_tps} | ${r.ours_tps} | ${r.ratio} | |`
  const perStep = r.workload === 'chain' ? `${r.baseline_step_ms} ms / ${r.ours_step_ms} ms` : ''
  return `| ${label(r)} | ${r.store} | ${secs(r.baseline_ms)} | ${secs(r.ours_ms)} | ${r.ratio} | ${perStep} |`
}

const round1 = (x) => Number(x.toFixed(1))

/** `results`: the JSON lines of one run; `run`: describeRun() of bench/run.js. */
function markdown(results, run) {
  const timed = results.filter((r) => r.workload !== 'memory' || r.error)
  const memory = results.filter((r) => r.workload === 'memory' && !r.error)
  const out = [
    `Measured ${run.date} on ${run.machine}; ${run.software}; ${run.build}.`,
    `${run.repeat === 1 ? 'All numbers are from one run' : `All numbers are medians of ${run.repeat} runs`} of \`npm run bench${run.quick ? ' -- --quick' : ''}\`, ` +
      `both sides with ${run.options}, alternating which side runs first.`,
    '',
    '| workload | store | Rust crate | duroxide-node | ratio | per step, crate / ours |',
    '|---|---|---|---|---|---|',
    ...timed.map(row),
    '',
    'Ratio is crate time ÷ our time (for idle: crate transactions/s ÷ ours), so above 1 means duroxide-node does better.',
  ]
  for (const m of memory) {
    out.push(
      '',
      `Memory: ${m.n.toLocaleString('en-US')} hello orchestrations through one runtime on ${m.store}: RSS ${m.ours_rss_first_mb} MiB after the first ${m.first_batch.toLocaleString('en-US')}, ` +
        `${m.ours_rss_last_mb} MiB after the last ${m.last_batch.toLocaleString('en-US')} (×${m.ratio}); ` +
        (m.baseline_error
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
