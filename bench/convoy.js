'use strict'
// The Postgres fetch convoy, measured: a fleet of child processes (each with
// several runtimes of many orchestration dispatchers) on one schema, slow
// turns, steady arrivals. Run once with the guard's fetch cap (default 1 per
// runtime) and once with it effectively off, and print both.
//
//   node bench/convoy.js [--processes 4] [--runtimes 4] [--slots 8] [--rate 30]
//                        [--seconds 40] [--turn-ms 20] [--steps 2] [--poll-ms 10]
//                        [--pool-max 12] [--work-gate 0] [--compare-work-gate 1]
//
// `--compare-work-gate 1` instead runs the activity fetch cap off and at 1
// (orchestration fetch cap at 1 in both).
//
// `runConvoy(config)` is also the engine of __test__/guard.convoy.test.js.
const path = require('node:path')
const { fork } = require('node:child_process')
const { pgSchema, psql, uniqueName, Client, DATABASE_URL } = require('../__test__/helpers')

const WORKER = path.join(__dirname, '..', '__test__', 'fixtures', 'guard-convoy-worker.js')

const DEFAULTS = Object.freeze({
  processes: 4,
  runtimes: 4,
  slots: 8,
  workers: 2,
  gate: 1,
  workGate: 0,
  turnMs: 20,
  steps: 2,
  pollMs: 10,
  poolMax: 12,
  rate: 30,
  seconds: 40,
  timeoutMs: 240000,
})

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

function percentile(values, q) {
  if (values.length === 0) return null
  const v = [...values].sort((a, b) => a - b)
  return v[Math.min(v.length, Math.max(1, Math.ceil(v.length * q))) - 1]
}

/** Starts one worker process; resolves once its runtimes are started. */
function startWorker(config, index, env) {
  const child = fork(WORKER, [JSON.stringify(config)], { env, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] })
  const log = { deadlockLines: 0, invalidLockLines: 0, tail: [], firstDeadlocks: [] }
  let partial = ''
  child.stderr.on('data', (chunk) => {
    const lines = (partial + chunk).split('\n')
    partial = lines.pop()
    for (const line of lines) {
      if (/deadlock/i.test(line)) {
        log.deadlockLines++
        if (log.firstDeadlocks.length < 3) log.firstDeadlocks.push(line)
      }
      if (/Invalid lock token|lock expired/.test(line)) log.invalidLockLines++
      log.tail.push(line)
      if (log.tail.length > 20) log.tail.shift()
    }
  })
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)))
  const reports = []
  const ready = new Promise((resolve, reject) => {
    child.on('message', (m) => {
      if (m.kind === 'ready') resolve()
      if (m.kind === 'report') reports.push(m.metrics)
    })
    exited.then((code) => reject(new Error(`convoy worker ${index} exited (${code}) before it was ready:\n${log.tail.join('\n')}`)))
  })
  return { child, log, exited, reports, ready, index }
}

async function report(worker) {
  const before = worker.reports.length
  worker.child.send('report')
  const deadline = Date.now() + 10000
  while (worker.reports.length === before) {
    if (Date.now() > deadline) throw new Error(`convoy worker ${worker.index} did not report`)
    await sleep(20)
  }
  return worker.reports[worker.reports.length - 1]
}

function statusCounts(schema) {
  const out = psql(`SELECT status, count(*) FROM ${schema}.executions GROUP BY status`)
  const counts = {}
  for (const line of out.split('\n').filter(Boolean)) {
    const [status, n] = line.split('|')
    counts[status] = Number(n)
  }
  return counts
}

/**
 * Runs one convoy on a fresh schema and returns its numbers. Never throws for
 * slow or failed orchestrations: the caller decides what is acceptable.
 */
async function runConvoy(options = {}) {
  const c = { ...DEFAULTS, url: DATABASE_URL, ...options }
  const pg = await pgSchema(null, 'dxconvoy')
  const workers = []
  let watcher = null
  try {
    // `fastPaths: false`: the crate's polling and fetches (docs/fast-paths.md).
    const workerConfig = { url: c.url, schema: pg.schema, runtimes: c.runtimes, slots: c.slots, workers: c.workers, gate: c.gate, workGate: c.workGate, turnMs: c.turnMs, pollMs: c.pollMs, poolMax: c.poolMax, fastPaths: c.fastPaths }
    for (let i = 0; i < c.processes; i++) workers.push(startWorker(workerConfig, i, process.env))
    await Promise.all(workers.map((w) => w.ready))
    // `watch(schema)` observes the run (e.g. samples Postgres); its `stop()` result is `r.watched`.
    watcher = c.watch ? c.watch(pg.schema) : null

    const client = new Client(pg.provider)
    const total = Math.round(c.rate * c.seconds)
    const startedAt = new Map()
    const prefix = uniqueName('convoy')
    const t0 = Date.now()
    for (let n = 0; n < total; ) {
      const due = Math.min(total, Math.floor(((Date.now() - t0) / 1000) * c.rate) + 1)
      const batch = []
      for (; n < due; n++) {
        const id = `${prefix}-${n}`
        startedAt.set(id, Date.now())
        batch.push(client.startOrchestration(id, 'Convoy', c.steps))
      }
      await Promise.all(batch)
      await sleep(20)
    }

    let counts = {}
    for (;;) {
      counts = statusCounts(pg.schema)
      const done = (counts.Completed || 0) + (counts.Failed || 0)
      if (done >= total || Date.now() - t0 > c.timeoutMs) break
      await sleep(250)
    }
    const durationMs = Date.now() - t0
    const watched = watcher ? await watcher.stop() : undefined
    watcher = null
    const metrics = (await Promise.all(workers.map(report))).flat()
    const rows = psql(`SELECT instance_id, (extract(epoch from completed_at) * 1000)::bigint FROM ${pg.schema}.executions WHERE status = 'Completed'`)
    const e2e = []
    for (const line of rows.split('\n').filter(Boolean)) {
      const [id, doneMs] = line.split('|')
      if (startedAt.has(id)) e2e.push(Number(doneMs) - startedAt.get(id))
    }
    for (const w of workers) w.child.send('stop')
    const exitCodes = await Promise.all(workers.map((w) => w.exited))

    const p99s = metrics.map((m) => m.orchFetchP99Ms).filter((v) => typeof v === 'number')
    const sum = (k) => metrics.reduce((a, m) => a + (m[k] || 0), 0)
    return {
      config: c,
      total,
      completed: counts.Completed || 0,
      failed: counts.Failed || 0,
      durationMs,
      throughput: (counts.Completed || 0) / (durationMs / 1000),
      e2eP50Ms: percentile(e2e, 0.5),
      e2eP99Ms: percentile(e2e, 0.99),
      fetchP99MaxMs: p99s.length ? Math.max(...p99s) : null,
      fetchP99MedianMs: percentile(p99s, 0.5),
      fetchP50MedianMs: percentile(metrics.map((m) => m.orchFetchP50Ms).filter((v) => typeof v === 'number'), 0.5),
      fetchWaitP99MaxMs: Math.max(0, ...metrics.map((m) => m.orchFetchWaitP99Ms || 0)),
      workFetchP99MaxMs: Math.max(0, ...metrics.map((m) => m.workFetchP99Ms || 0)),
      deadlockRetries: sum('deadlockRetries'),
      invalidLockTokenAcks: sum('invalidLockTokenAcks'),
      poisonDispositions: sum('poisonDispositions'),
      deadlockLogLines: workers.reduce((a, w) => a + w.log.deadlockLines, 0),
      invalidLockLogLines: workers.reduce((a, w) => a + w.log.invalidLockLines, 0),
      firstDeadlocks: workers.flatMap((w) => w.log.firstDeadlocks),
      exitCodes,
      watched,
    }
  } finally {
    if (watcher) await watcher.stop()
    for (const w of workers) if (w.child.exitCode === null) w.child.kill()
    try {
      pg.drop()
    } catch (err) {
      process.emitWarning(`could not drop schema ${pg.schema}: ${err.message}`)
    }
  }
}

function format(r) {
  const ms = (v) => (v === null || v === undefined ? 'n/a' : `${Math.round(v)} ms`)
  return [
    `completed ${r.completed}/${r.total} (failed ${r.failed}) in ${(r.durationMs / 1000).toFixed(1)} s, ${r.throughput.toFixed(1)} orch/s`,
    `end-to-end p50 ${ms(r.e2eP50Ms)}, p99 ${ms(r.e2eP99Ms)}`,
    `orchestration fetch p50 (median of runtimes) ${ms(r.fetchP50MedianMs)}, p99 median ${ms(r.fetchP99MedianMs)}, p99 max ${ms(r.fetchP99MaxMs)}; gate wait p99 max ${ms(r.fetchWaitP99MaxMs)}; activity fetch p99 max ${ms(r.workFetchP99MaxMs)}`,
    `deadlock log lines ${r.deadlockLogLines}, deadlock errors surfaced ${r.deadlockRetries}, invalid-lock acks ${r.invalidLockTokenAcks} (log lines ${r.invalidLockLogLines}), poison ${r.poisonDispositions}`,
  ].join('\n  ')
}

function parseArgs(argv) {
  const out = {}
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, ch) => ch.toUpperCase())
    if (!(key in DEFAULTS) && key !== 'compareWorkGate') throw new Error(`unknown option ${argv[i]}; options: ${Object.keys(DEFAULTS).join(', ')}`)
    out[key] = Number(argv[i + 1])
  }
  return out
}

async function main() {
  const options = parseArgs(process.argv.slice(2))
  const c = { ...DEFAULTS, ...options }
  console.log(
    `convoy: ${c.processes} processes x ${c.runtimes} runtimes x ${c.slots} slots = ${c.processes * c.runtimes * c.slots} orchestration dispatchers; ` +
      `${c.rate}/s for ${c.seconds} s, ${c.steps} activities each, ${c.turnMs} ms turns, poll ${c.pollMs} ms, pool ${c.poolMax}/process`,
  )
  if (options.compareWorkGate) {
    delete options.compareWorkGate
    const off = await runConvoy({ ...options, gate: 1, workGate: 0 })
    console.log(`\nactivity fetch cap off (default):\n  ${format(off)}`)
    const on = await runConvoy({ ...options, gate: 1, workGate: 1 })
    console.log(`\nactivity fetch cap 1 (maxConcurrentWorkFetches: 1):\n  ${format(on)}`)
    return
  }
  const gated = await runConvoy({ ...options, gate: 1 })
  console.log(`\nfetch cap 1 per runtime (default):\n  ${format(gated)}`)
  const open = await runConvoy({ ...options, gate: 1000 })
  console.log(`\nfetch cap off (maxConcurrentOrchestrationFetches: 1000):\n  ${format(open)}`)
  if (open.firstDeadlocks.length) console.log(`\nfirst deadlock lines (cap off):\n  ${open.firstDeadlocks.join('\n  ')}`)
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err)
    process.exit(1)
  })
}

module.exports = { runConvoy, format, DEFAULTS }
