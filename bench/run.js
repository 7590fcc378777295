'use strict'
// `npm run bench`: duroxide-node against the duroxide crate used directly from
// Rust (bench/baseline), same workloads, same options, same run. Each pair of
// measurements alternates which side goes first so machine noise hits both.
// One JSON line per workload on stdout; progress on stderr.
//
//   npm run bench                              # the full suite
//   npm run bench -- chain hello               # only these workloads
//   npm run bench -- --quick                   # small counts, for smoke-testing
//   npm run bench -- --store sqlite            # one store only
//   npm run bench -- --repeat 5                # medians of 5 pairs of every workload
//                                              # (default: defaultRepeat)
//   npm run bench -- --markdown                # docs/performance.md's tables on stdout (JSON lines to stderr)
//   npm run bench -- --ours-options '{"maxConcurrentOrchestrationFetches":4}'
//                                              # extra RuntimeOptions for our side (A/B runs)
//
// Scale runs (issue 46): a size after `fanout`, `chain` or `backlog` runs
// that workload at the size and at half of it, one pair each (`--repeat`
// for more), and prints the growth ratio (time at the size ÷ time at half).
//
//   npm run bench -- fanout 20000              # 10,000 and 20,000 activities joined by one orchestration
//   npm run bench -- backlog 20000             # 10,000 and 20,000 waiting instances, each raised once
//   npm run bench -- chain 3000                # ms per step, first tenth against last tenth
//   npm run bench -- fanout 20000 --no-baseline --store sqlite
//                                              # ours only (the crate takes minutes at these sizes)
//
// `backlog` without a size runs 2,000 (200 with --quick).
//
// Longer benchmarks that compare settings of this package rather than the
// crate run only when named: convoy (bench/convoy.js), soak-sqlite, soak-memory,
// timing-faults, timing-shutdown (their output goes to stderr).
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawn, spawnSync, execFileSync } = require('node:child_process')
const { PgBench, sqliteStore } = require('./stores')
const { markdown } = require('./report')

const ROOT = path.join(__dirname, '..')
const OURS = path.join(__dirname, 'ours.js')
const BASELINE = path.join(process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target'), 'release', 'duroxide-bench-baseline')

/** Options both sides run with: 4 orchestration / 8 worker slots, 10 ms poll, small pools. */
const COMMON = Object.freeze({ orchestrationConcurrency: 4, workerConcurrency: 8, pollMs: 10 })
const PG_POOL_MAX = 5

// Each entry expands to one or more cases: { workload, store, ...params }.
const SUITE = {
  hello: (q) => both({ n: q ? 20 : 200 }),
  chain: (q) => (q ? [10, 40] : [100, 400]).flatMap((n) => both({ n })),
  fanout: (q) => both({ n: q ? 30 : 300 }),
  payload: (q) => both({ n: q ? 3 : 20, bytes: 256 * 1024 }),
  idle: (q) => [
    { store: 'postgres', processes: 1, runtimes: 1, seconds: q ? 2 : 10 },
    { store: 'postgres', processes: 4, runtimes: 4, seconds: q ? 2 : 10 },
  ],
  memory: (q) => [{ store: 'sqlite', n: q ? 400 : 10000, batch: q ? 100 : 1000 }],
}
const EXTRA = {
  convoy: ['convoy.js'],
  'soak-sqlite': ['soak-sqlite.js'],
  'soak-memory': ['soak-memory.js'],
  'timing-faults': ['timing-faults.js'],
  'timing-shutdown': ['timing-shutdown.js'],
}

/**
 * Pairs run per case of `workload` unless `--repeat` says otherwise. A timed
 * workload's single run moves by about ±20% on a shared host (the crate's
 * own hello has taken 0.6 to 1.3 s on one machine), and a run of hello or
 * chain 100 is under a second, so they report the median of three pairs;
 * idle (10 s a side) and memory (minutes a side) are steady enough in one.
 */
const defaultRepeat = (workload) => (workload === 'idle' || workload === 'memory' ? 1 : 3)

function both(params) {
  return [{ store: 'sqlite', ...params }, { store: 'postgres', ...params }]
}

/** Workloads that take a size; `backlog` runs only as a scale run. */
const SCALABLE = new Set(['fanout', 'chain', 'backlog'])
const DEFAULT_BACKLOG = (q) => (q ? 200 : 2000)

/** The cases of a scale run of `workload` at size `n`: half of it, then it, on each store. */
function scaleCases(workload, n) {
  const small = Math.max(1, Math.floor(n / 2))
  return [small, n].flatMap((size) => both({ n: size, scale: n }))
}

function parseArgs(argv) {
  const args = { workloads: [], sizes: {}, quick: false, markdown: false, repeat: null, store: null, build: true, baseline: true, oursOptions: undefined }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (SCALABLE.has(a) && /^[0-9]+$/.test(argv[i + 1] || '')) {
      args.sizes[a] = Number(argv[++i])
      if (args.sizes[a] < 2) throw new Error(`the size of ${a} must be at least 2`)
      args.workloads.push(a)
    } else if (a === 'backlog') {
      args.sizes[a] = null
      args.workloads.push(a)
    } else if (a === '--no-baseline') args.baseline = false
    else if (a === '--quick') args.quick = true
    else if (a === '--markdown') args.markdown = true
    else if (a === '--no-build') args.build = false
    else if (a === '--repeat') args.repeat = Number(argv[++i])
    else if (a === '--store') args.store = argv[++i]
    else if (a === '--ours-options') args.oursOptions = JSON.parse(argv[++i])
    else if (a in SUITE || a in EXTRA) args.workloads.push(a)
    else throw new Error(`unknown argument '${a}'; workloads: ${[...Object.keys(SUITE), 'backlog', ...Object.keys(EXTRA)].join(', ')} (fanout, chain and backlog take a size: fanout 20000); flags: --quick --markdown --no-build --no-baseline --repeat N --store sqlite|postgres --ours-options JSON`)
  }
  if (args.repeat !== null && (!Number.isInteger(args.repeat) || args.repeat < 1)) throw new Error('--repeat must be an integer >= 1')
  if (args.store && args.store !== 'sqlite' && args.store !== 'postgres') throw new Error(`--store must be sqlite or postgres, got '${args.store}'`)
  if (args.workloads.length === 0) args.workloads = Object.keys(SUITE)
  return args
}

const log = (msg) => process.stderr.write(`bench: ${msg}\n`)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]
const round = (x, digits = 0) => Number(x.toFixed(digits))

/**
 * The machine's busy CPU time so far in ms, all processes and cores (Linux
 * /proc/stat: user, nice, system, irq, softirq, steal); null elsewhere.
 */
function busyCpuMs() {
  try {
    const [user, nice, system, , , irq, softirq, steal] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
    // /proc/stat counts in USER_HZ ticks, 100 a second on Linux.
    return (user + nice + system + irq + softirq + (steal || 0)) * 10
  } catch {
    return null
  }
}

/** CPU time process `pid` has used so far in ms (Linux /proc/<pid>/stat: utime + stime); null elsewhere. */
function processCpuMs(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return null
  }
}

/** CPU time so far of the machine and of process `pid`, in ms. */
const cpuNow = (pid) => ({ machine: busyCpuMs(), process: processCpuMs(pid) })

/** `to - from` for each of cpuNow's readings; a reading that failed is null. */
function cpuSpent(from, to) {
  const spent = (a, b) => (a === null || b === null ? null : b - a)
  return { machine: spent(from.machine, to.machine), process: spent(from.process, to.process) }
}

/**
 * Starts one side's program on a spec; `lines` collects its stdout lines
 * other than the `{"timed":true}` mark, and `cpu.spent` the CPU time of the
 * machine and of the program itself from that mark to the next line (the
 * result).
 */
function launch(side, spec) {
  const env = { ...process.env, DUROXIDE_PG_POOL_MAX: String(PG_POOL_MAX) }
  const child =
    side === 'ours'
      ? spawn(process.execPath, ['--expose-gc', OURS, JSON.stringify(spec)], { env, stdio: ['pipe', 'pipe', 'pipe'] })
      : spawn(BASELINE, [JSON.stringify(spec)], { env, stdio: ['pipe', 'pipe', 'pipe'] })
  const lines = []
  const cpu = { from: null, spent: null }
  const stderrTail = []
  let partial = ''
  child.stdout.on('data', (chunk) => {
    const parts = (partial + chunk).split('\n')
    partial = parts.pop()
    for (const line of parts.filter(Boolean)) {
      if (line === '{"timed":true}') {
        cpu.from = cpuNow(child.pid)
        continue
      }
      if (cpu.from !== null && cpu.spent === null) cpu.spent = cpuSpent(cpu.from, cpuNow(child.pid))
      lines.push(line)
    }
  })
  child.stderr.on('data', (chunk) => {
    stderrTail.push(String(chunk))
    if (stderrTail.length > 20) stderrTail.shift()
  })
  const exited = new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('exit', (code, signal) => {
      if (code === 0) resolve()
      else reject(new Error(`${side} ${spec.workload} on ${spec.store} exited with ${code ?? signal}:\n${stderrTail.join('').slice(-3000)}`))
    })
  })
  return { child, lines, cpu, exited }
}

/** An error's first line and the last line its process wrote (its own error), for a table cell. */
function brief(err) {
  const lines = String(err && err.message ? err.message : err)
    .replace(/\x1b\[[0-9;]*m/g, '')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
  const text = lines.length > 1 ? `${lines[0]} ${lines[lines.length - 1]}` : lines[0] || 'failed'
  return text.replace(/\|/g, '/').slice(0, 300)
}

/**
 * Runs one timed (or memory) measurement on a fresh store; returns the
 * child's result object, with `cpuMs` and `processCpuMs` (the busy CPU time
 * of the machine and of the child over the timed span; Linux) and, on
 * Postgres, `transactions` (the server's over the child's whole life, its
 * store set-up included).
 */
async function measure(side, c, pg) {
  const store = c.store === 'sqlite' ? sqliteStore() : pg.store()
  try {
    const before = c.store === 'postgres' ? pg.transactions() : null
    const run = launch(side, { ...COMMON, ...c, url: store.url, schema: store.schema })
    run.child.stdin.end()
    await run.exited
    const result = JSON.parse(run.lines[run.lines.length - 1])
    if (run.cpu.spent?.machine != null) result.cpuMs = run.cpu.spent.machine
    if (run.cpu.spent?.process != null) result.processCpuMs = run.cpu.spent.process
    if (before !== null) {
      // A server backend reports its counts as it exits, just after the child's connections close.
      await sleep(200)
      // Less one: the transaction of the query that read `before`.
      result.transactions = pg.transactions() - before - 1
    }
    return result
  } finally {
    store.remove()
  }
}

/** Transactions/s the database sees while `processes` × `runtimes` started runtimes wait. */
async function measureIdle(side, c, pg) {
  const store = pg.store()
  const runs = []
  try {
    for (let p = 0; p < c.processes; p++) runs.push(launch(side, { ...COMMON, workload: 'idle', store: 'postgres', url: store.url, schema: store.schema, runtimes: c.runtimes }))
    const failed = Promise.race(runs.map((r) => r.exited)).then(() => {
      throw new Error(`${side} idle process exited early`)
    })
    while (!runs.every((r) => r.lines.includes('{"ready":true}'))) await Promise.race([sleep(50), failed])
    await sleep(1000) // past start-up work, and a stats flush interval
    const before = pg.transactions()
    const t0 = performance.now()
    await Promise.race([sleep(c.seconds * 1000), failed])
    const after = pg.transactions()
    const seconds = (performance.now() - t0) / 1000
    failed.catch(() => {})
    for (const r of runs) r.child.stdin.end()
    await Promise.all(runs.map((r) => r.exited))
    return { tps: (after - before) / seconds }
  } finally {
    for (const r of runs) if (r.child.exitCode === null) r.child.kill()
    store.remove()
  }
}

/**
 * Times a timed workload's baseline run is tried again after it failed. The
 * crate's own SQLite store fails orchestrations with "database is locked"
 * now and then (hello 200 in some runs, the memory workload in most); a run
 * that completes is a valid time, and the row says how many failed first.
 * The memory workload (minutes a run) is not tried again.
 */
const BASELINE_RETRIES = 2

/** Both sides on case `c`, `repeat` times, alternating which goes first. */
async function pair(c, index, repeat, pg, withBaseline = true) {
  const got = { ours: [], baseline: [], baselineFailures: 0 }
  const sides = withBaseline ? ['baseline', 'ours'] : ['ours']
  for (let r = 0; r < repeat; r++) {
    const order = (index + r) % 2 === 0 ? sides : [...sides].reverse()
    for (const side of order) {
      const tries = side === 'baseline' && c.workload !== 'memory' ? 1 + BASELINE_RETRIES : 1
      for (let attempt = 1; attempt <= tries; attempt++) {
        const t0 = performance.now()
        try {
          got[side].push(c.workload === 'idle' ? await measureIdle(side, c, pg) : await measure(side, c, pg))
        } catch (err) {
          // Our side's numbers still print, next to the baseline's failure.
          // Our failures fail the case.
          if (side === 'ours' || c.workload === 'idle') throw err
          got.baselineError = got.baselineError || brief(err)
          got.baselineFailures++
          log(`  baseline failed (attempt ${attempt} of ${tries}): ${brief(err)}`)
          continue
        }
        log(`  ${side}: ${JSON.stringify(got[side][got[side].length - 1])} (${((performance.now() - t0) / 1000).toFixed(1)} s wall)`)
        break
      }
    }
  }
  // A case with no baseline time has no ratio: the run fails (unless it
  // was not asked for).
  if (got.baseline.length === 0 && withBaseline) process.exitCode = 1
  if (!withBaseline) got.baselineError = 'not run (--no-baseline)'

  return got
}

/** The JSON line of one case: ours, the baseline's, and the ratio (> 1: ours is better). */
function resultLine(c, got) {
  const params = { ...c }
  delete params.workload
  delete params.store
  const line = { workload: c.workload, store: c.store, ...params, runs: got.ours.length }
  // A baseline that failed every run: ours alone, and no ratio.
  const noBaseline = got.baseline.length === 0
  if (noBaseline) got.baseline = [{ rssFirstMb: NaN, rssLastMb: NaN, ms: NaN }]
  const withBaseline = (out) => {
    if (!noBaseline) return got.baselineFailures > 0 ? { ...out, baseline_failed_runs: got.baselineFailures, baseline_error: got.baselineError } : out
    const kept = Object.fromEntries(Object.entries(out).filter(([k]) => !k.startsWith('baseline_') && k !== 'ratio'))
    if (c.workload === 'memory') kept.ratio = out.ratio
    return { ...kept, baseline_error: got.baselineError }
  }
  return withBaseline(measuredLine(c, got, line))
}

function measuredLine(c, got, line) {
  if (c.workload === 'memory') {
    const first = median(got.ours.map((g) => g.rssFirstMb))
    const last = median(got.ours.map((g) => g.rssLastMb))
    const baseFirst = median(got.baseline.map((g) => g.rssFirstMb))
    const baseLast = median(got.baseline.map((g) => g.rssLastMb))
    // V8 sizes its young generation up under allocation (up to 2 × 16 MiB
    // semi-spaces on Node 20) and keeps it: RSS outside the V8 heap is what
    // the rest of the process (the native module, the stores) holds.
    const v8First = median(got.ours.map((g) => g.v8FirstMb))
    const v8Last = median(got.ours.map((g) => g.v8LastMb))
    delete line.batch
    return {
      ...line,
      ours_rss_first_mb: round(first, 1),
      ours_rss_last_mb: round(last, 1),
      ratio: round(last / first, 3),
      ours_v8_heap_first_mb: round(v8First, 1),
      ours_v8_heap_last_mb: round(v8Last, 1),
      ours_outside_v8_ratio: round((last - v8Last) / (first - v8First), 3),
      baseline_rss_first_mb: round(baseFirst, 1),
      baseline_rss_last_mb: round(baseLast, 1),
      baseline_ratio: round(baseLast / baseFirst, 3),
      first_batch: c.batch,
      last_batch: c.batch,
    }
  }
  if (c.workload === 'idle') {
    const ours = median(got.ours.map((g) => g.tps))
    const base = median(got.baseline.map((g) => g.tps))
    return { ...line, ours_tps: round(ours, 1), baseline_tps: round(base, 1), ratio: round(base / Math.max(ours, 0.1), 2) }
  }
  const ours = median(got.ours.map((g) => g.ms))
  const base = median(got.baseline.map((g) => g.ms))
  const out = { ...line, ours_ms: round(ours), baseline_ms: round(base), ratio: round(base / ours, 2) }
  if (c.workload === 'chain') {
    out.ours_step_ms = round(ours / c.n, 2)
    out.baseline_step_ms = round(base / c.n, 2)
    for (const side of ['ours', 'baseline']) {
      const first = got[side].map((g) => g.firstTenthStepMs).filter((x) => x !== undefined)
      const last = got[side].map((g) => g.lastTenthStepMs).filter((x) => x !== undefined)
      if (first.length === 0 || last.length === 0) continue
      out[`${side}_first_tenth_step_ms`] = round(median(first), 2)
      out[`${side}_last_tenth_step_ms`] = round(median(last), 2)
      out[`${side}_tenths_growth`] = round(median(last) / median(first), 2)
    }
  }
  if (c.workload === 'backlog') {
    out.ours_turns_per_s = round(c.n / (ours / 1000))
    out.baseline_turns_per_s = round(c.n / (base / 1000))
    for (const side of ['ours', 'baseline']) {
      const kb = got[side].map((g) => g.waitingKbPerInstance).filter((x) => x !== undefined)
      if (kb.length > 0) out[`${side}_waiting_kb_per_instance`] = round(median(kb), 2)
    }
  }
  return { ...out, ...perActivity(c, got) }
}

/**
 * What each activity of the workload (n of them in every timed workload)
 * cost the machine: busy CPU ms over the timed span, every process
 * included, and of that the side's own process; on Postgres, the server's
 * transactions. Less noisy than the
 * times on a shared host, and they say where a ratio comes from.
 */
function perActivity(c, got) {
  const out = {}
  for (const side of ['ours', 'baseline']) {
    const cpu = got[side].map((g) => g.cpuMs).filter((x) => x !== undefined)
    if (cpu.length > 0) out[`${side}_cpu_ms_per_activity`] = round(median(cpu) / c.n, 2)
    const own = got[side].map((g) => g.processCpuMs).filter((x) => x !== undefined)
    if (own.length > 0) out[`${side}_process_cpu_ms_per_activity`] = round(median(own) / c.n, 2)
    const tx = got[side].map((g) => g.transactions).filter((x) => x !== undefined)
    if (tx.length > 0) out[`${side}_transactions_per_activity`] = round(median(tx) / c.n, 1)
  }
  return out
}

/**
 * The growth of a scale run, once its larger size ran: time at the size ÷
 * time at half of it, for each side (2 is linear: a flat cost per turn).
 */
function growthLine(c, results) {
  const at = (n) => results.find((r) => r.workload === c.workload && r.store === c.store && r.scale === c.scale && r.n === n && !r.growth_of)
  const small = at(Math.max(1, Math.floor(c.scale / 2)))
  const large = at(c.scale)
  if (!small || !large || small.error || large.error) return null
  const line = { workload: c.workload, store: c.store, growth_of: `${small.n} -> ${large.n}`, ours_growth: round(large.ours_ms / small.ours_ms, 2) }
  if (Number.isFinite(large.baseline_ms) && Number.isFinite(small.baseline_ms)) line.baseline_growth = round(large.baseline_ms / small.baseline_ms, 2)
  return line
}

function buildBaseline() {
  log('building the Rust baseline (cargo build --release -p duroxide-bench-baseline)')
  execFileSync('cargo', ['build', '--release', '-p', 'duroxide-bench-baseline'], { cwd: ROOT, stdio: ['ignore', process.stderr, process.stderr] })
}

/**
 * The module the bench loads must be the release build: `npm test` and
 * `npm run quickstart` build debug into the same file, and a debug module
 * runs several times slower (a whole `--no-build` run once measured one).
 */
function assertReleaseModule() {
  const target = process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target')
  const loaded = fs.readdirSync(ROOT).filter((f) => f.startsWith('duroxide-node.') && f.endsWith('.node'))
  const releases = fs.existsSync(target)
    ? fs
        .readdirSync(target)
        .map((dir) => path.join(target, dir, 'release', 'libduroxide_node.so'))
        .filter((f) => fs.existsSync(f))
    : []
  const release = releases.map((f) => fs.readFileSync(f))
  const isRelease = (f) => {
    const bytes = fs.readFileSync(path.join(ROOT, f))
    return release.some((r) => r.equals(bytes))
  }
  if (loaded.length === 0 || !loaded.every(isRelease)) {
    throw new Error(
      `the native module (${loaded.join(', ') || 'none'}) is not the release build in ${target}: ` +
        'npm test and npm run quickstart build debug into the same file; run `npm run bench` (it builds release) instead of `--no-build`',
    )
  }
}

function describeRun(args, pg) {
  const cpus = os.cpus()
  const commit = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim()
  const rustc = spawnSync('rustc', ['--version'], { encoding: 'utf8' }).stdout.trim()
  return {
    date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
    machine: `${cpus.length} × ${cpus[0] ? cpus[0].model.trim() : 'unknown CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB RAM, ${os.type()} ${os.release()}`,
    software: `Node ${process.version}, ${rustc}, Postgres ${pg ? pg.version() : 'n/a'}`,
    build: `release, commit ${commit || 'unknown'}`,
    repeat: args.repeat ?? Object.fromEntries(Object.keys(SUITE).map((w) => [w, defaultRepeat(w)])),
    quick: args.quick,
    options: `${COMMON.orchestrationConcurrency} orchestration / ${COMMON.workerConcurrency} worker slots, ${COMMON.pollMs} ms poll, Postgres pool ${PG_POOL_MAX}`,
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2))
  const emit = (obj) => (args.markdown ? process.stderr : process.stdout).write(JSON.stringify(obj) + '\n')
  for (const name of args.workloads.filter((w) => w in EXTRA)) {
    for (const file of EXTRA[name]) {
      log(`== bench/${file}`)
      const r = spawnSync(process.execPath, [path.join(__dirname, file)], { stdio: ['ignore', process.stderr, process.stderr] })
      if (r.status !== 0) throw new Error(`bench/${file} exited with ${r.status ?? r.signal}`)
    }
  }
  const cases = args.workloads
    .filter((w) => w in SUITE || w in args.sizes)
    .flatMap((w) => {
      if (!(w in args.sizes)) return SUITE[w](args.quick).map((c) => ({ workload: w, ...c }))
      return scaleCases(w, args.sizes[w] ?? DEFAULT_BACKLOG(args.quick)).map((c) => ({ workload: w, ...c }))
    })
    .filter((c) => !args.store || c.store === args.store)
    .map((c) => (args.oursOptions ? { ...c, oursOptions: args.oursOptions } : c))
  if (cases.length === 0) return
  assertReleaseModule()
  if (args.build && args.baseline) buildBaseline()
  const pg = cases.some((c) => c.store === 'postgres') ? new PgBench() : null
  const results = []
  try {
    for (let i = 0; i < cases.length; i++) {
      const c = cases[i]
      log(`${c.workload} on ${c.store} ${JSON.stringify(c)}`)
      let line
      try {
        const repeat = args.repeat ?? (c.scale ? 1 : defaultRepeat(c.workload))
        line = resultLine(c, await pair(c, i, repeat, pg, args.baseline))
      } catch (err) {
        // One side crashing (the crate's SQLite store once failed an
        // orchestration with "database is locked") costs its row, not the
        // rows already measured; the run still exits non-zero.
        log(`${err && err.stack ? err.stack : err}`)
        const { workload, store, ...params } = c
        line = { workload, store, ...params, error: brief(err) }
        process.exitCode = 1
      }
      results.push(line)
      emit(line)
      const growth = c.scale && c.n === c.scale ? growthLine(c, results) : null
      if (growth) {
        results.push(growth)
        emit(growth)
      }
    }
    if (args.markdown) process.stdout.write(markdown(results, describeRun(args, pg)))
  } finally {
    if (pg) pg.close()
  }
}

main().catch((err) => {
  process.stderr.write(`bench: ${err && err.stack ? err.stack : err}\n`)
  process.exit(1)
})
