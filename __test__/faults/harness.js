'use strict'
// Parent-side helpers of the fault suite: fleet members as child processes
// (killed with the test if it fails), effect files, and history checks.
const fs = require('node:fs')
const { isDeepStrictEqual } = require('node:util')
const os = require('node:os')
const path = require('node:path')
const { fork, execFile, spawn } = require('node:child_process')
const { psql, pgSchema, DATABASE_URL, Client } = require('../helpers')

const WORKER = path.join(__dirname, 'workers', 'fleet-worker.js')
const STDERR_CAP = 4 * 1024 * 1024

/** True when the long (benchmark) form of the soak tests should run. */
const SOAK = process.env.DUROXIDE_SOAK === '1'

/** A fleet member process (workers/fleet-worker.js unless `script` says otherwise). */
class Worker {
  constructor(t, cfg, { name = 'worker', env = {}, execArgv = [], script = WORKER } = {}) {
    this.name = name
    this.messages = []
    this.stderr = ''
    this.waiters = []
    this.child = fork(script, [], {
      env: { ...process.env, ...env, DX_FAULT: JSON.stringify(cfg) },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      execArgv,
    })
    this.pid = this.child.pid
    this.child.stderr.setEncoding('utf8')
    this.child.stderr.on('data', (d) => {
      this.stderr += d
      if (this.stderr.length > STDERR_CAP) this.stderr = this.stderr.slice(-STDERR_CAP / 2)
    })
    this.child.on('message', (m) => {
      m.at = Date.now()
      this.messages.push(m)
      for (const w of [...this.waiters]) if (w.pred(m)) w.resolve(m)
    })
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.exit = { code, signal, at: Date.now() }
        for (const w of [...this.waiters]) w.reject(new Error(`${this.name} (pid ${this.pid}) exited (${code ?? signal}) while a test waited for a message; stderr tail:\n${this.stderr.slice(-3000)}`))
        resolve(this.exit)
      })
    })
    if (t) t.after(() => this.kill('SIGKILL'))
  }

  get alive() {
    return this.child.exitCode === null && this.child.signalCode === null
  }

  /** Resolves with the first message (past or future) matching `pred` (a type string or a function). */
  waitFor(pred, timeoutMs = 60000) {
    const match = typeof pred === 'string' ? (m) => m.type === pred : pred
    const past = this.messages.find(match)
    if (past) return Promise.resolve(past)
    if (!this.alive) return Promise.reject(new Error(`${this.name} is not running; stderr tail:\n${this.stderr.slice(-3000)}`))
    return new Promise((resolve, reject) => {
      const w = { pred: match }
      const timer = setTimeout(() => done(reject, new Error(`${this.name}: no matching message within ${timeoutMs} ms; stderr tail:\n${this.stderr.slice(-3000)}`)), timeoutMs)
      const done = (fn, v) => {
        clearTimeout(timer)
        this.waiters = this.waiters.filter((x) => x !== w)
        fn(v)
      }
      w.resolve = (m) => done(resolve, m)
      w.reject = (e) => done(reject, e)
      this.waiters.push(w)
    })
  }

  ready(timeoutMs = 60000) {
    return this.waitFor((m) => m.type === 'ready' || m.type === 'connect-failed', timeoutMs).then((m) => {
      if (m.type !== 'ready') throw new Error(`${this.name} could not connect: [${m.code}] ${m.message}`)
      return m
    })
  }

  send(msg) {
    this.child.send(msg)
  }

  kill(signal = 'SIGKILL') {
    if (this.alive) this.child.kill(signal)
    return this.exited
  }

  /** Graceful stop: shutdown(timeoutMs), then the process must exit on its own. */
  async stop(timeoutMs = 5000, exitWithinMs = 15000) {
    if (!this.alive) return { exit: this.exit }
    this.send({ type: 'shutdown', timeoutMs })
    const stopped = await this.waitFor('stopped', timeoutMs + 30000)
    const exit = await Promise.race([
      this.exited,
      new Promise((r) => setTimeout(() => r(null), exitWithinMs).unref()),
    ])
    return { stopped, exit }
  }

  /** Lines of stderr matching `re`. */
  grep(re) {
    return this.stderr.split('\n').filter((l) => re.test(l))
  }
}

/**
 * The first message matching `pred` from any of `workers` (polled, so a member
 * that dies meanwhile does not reject anything). Resolves { worker, message }.
 */
async function firstMessage(workers, pred, { timeoutMs = 60000, what = 'message' } = {}) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    for (const w of workers) {
      const m = w.messages.find(pred)
      if (m) return { worker: w, message: m }
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** A temp directory for effect files, removed with the test. */
function effectsDir(t, prefix = 'dxfx') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`))
  if (t) t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

/**
 * A fleet on a fresh Postgres schema: the schema, a client on it, and the
 * config its workers share (the schema's url and name, `options`, and unless
 * `effects` is false a fresh effects directory).
 */
async function pgFleet(t, prefix, options, { effects = true } = {}) {
  const pg = await pgSchema(t, prefix)
  const client = new Client(pg.provider)
  const cfg = { backend: 'postgres', url: pg.url, schema: pg.schema, options }
  if (effects) cfg.effectsDir = effectsDir(t)
  return { pg, client, cfg }
}

/**
 * The history of an instance's execution as [{ eventId, kind, sourceEventId }].
 * Uses client.readExecutionHistory when the client has it; otherwise reads
 * the schema's history table (Postgres only).
 */
async function historyOf(client, schema, instanceId, executionId = 1) {
  if (typeof client.readExecutionHistory === 'function') {
    const events = await client.readExecutionHistory(instanceId, executionId)
    return events.map((e) => ({ eventId: e.eventId, kind: e.kind, sourceEventId: e.sourceEventId ?? null }))
  }
  const id = instanceId.replace(/'/g, "''")
  const out = psql(`SELECT event_data FROM ${schema}.history WHERE instance_id = '${id}' AND execution_id = ${executionId} ORDER BY event_id`)
  return out.split('\n').filter(Boolean).map((l) => {
    const e = JSON.parse(l)
    return { eventId: e.event_id, kind: e.type, sourceEventId: e.source_event_id }
  })
}

const COMPLETION_KINDS = new Set(['ActivityCompleted', 'ActivityFailed'])

/**
 * Checks one execution's history: event ids unique, every scheduled activity
 * completed exactly once, no completion without its schedule, at most one
 * terminal event, and (when given) exactly `activities` activity completions.
 * Returns problems as strings (empty when clean).
 */
function historyProblems(instanceId, events, activities) {
  const problems = []
  const ids = new Set()
  const scheduled = new Set()
  const completions = new Map()
  for (const e of events) {
    if (ids.has(e.eventId)) problems.push(`${instanceId}: event id ${e.eventId} appears twice`)
    ids.add(e.eventId)
    if (e.kind === 'ActivityScheduled') scheduled.add(e.eventId)
    if (COMPLETION_KINDS.has(e.kind)) completions.set(e.sourceEventId, (completions.get(e.sourceEventId) || 0) + 1)
  }
  for (const [source, n] of completions) {
    if (n > 1) problems.push(`${instanceId}: activity ${source} completed ${n} times`)
    if (!scheduled.has(source)) problems.push(`${instanceId}: completion for unscheduled activity ${source}`)
  }
  const terminal = events.filter((e) => e.kind === 'OrchestrationCompleted' || e.kind === 'OrchestrationFailed')
  if (terminal.length > 1) problems.push(`${instanceId}: ${terminal.length} terminal events`)
  if (terminal.length === 1) {
    for (const s of scheduled) if (!completions.has(s)) problems.push(`${instanceId}: activity ${s} never completed`)
  }
  const completed = events.filter((e) => e.kind === 'ActivityCompleted').length
  if (activities !== undefined && completed !== activities) {
    problems.push(`${instanceId}: ${completed} activity completions in history, expected ${activities}`)
  }
  return problems
}

/**
 * Waits for every instance of `expected` (Map id -> expected output) and
 * returns the problems: not Completed, a different output, or a history that
 * fails historyProblems. `extra(id, want, events)` may add more per instance.
 */
async function completionProblems(client, schema, expected, extra = () => []) {
  const statuses = await waitAll(client, [...expected.keys()], 120000)
  const problems = []
  for (const [id, want] of expected) {
    const s = statuses.get(id)
    if (s.status !== 'Completed') problems.push(`${id}: ${s.status} ${s.error ?? ''}`)
    else if (!isDeepStrictEqual(s.output, want)) problems.push(`${id}: output ${JSON.stringify(s.output)}, expected ${JSON.stringify(want)}`)
    const events = await historyOf(client, schema, id)
    problems.push(...historyProblems(id, events, want.length), ...extra(id, want, events))
  }
  return problems
}

/** Waits for every instance to be terminal; returns Map(id -> status). */
async function waitAll(client, ids, timeoutMs = 120000) {
  const out = new Map()
  await Promise.all(ids.map(async (id) => out.set(id, await client.waitForOrchestration(id, timeoutMs))))
  return out
}

/** psql without blocking the event loop (for monitors that run during a test). */
function psqlAsync(sql) {
  return new Promise((resolve, reject) => {
    execFile('psql', [DATABASE_URL, '-v', 'ON_ERROR_STOP=1', '-At', '-c', sql], { encoding: 'utf8' }, (err, out) => {
      if (err) reject(err)
      else resolve(out.trim())
    })
  })
}

/**
 * A side connection (its own psql process) that holds the session advisory
 * lock duroxide-pg's fetch takes for `instanceId`
 * (pg_advisory_xact_lock(hashtext(instance_id))) until released. Resolves once
 * the lock is granted.
 */
async function holdInstanceLock(t, instanceId) {
  const app = `dxf_hold_${process.pid}_${Date.now()}`
  const id = instanceId.replace(/'/g, "''")
  const child = spawn('psql', [DATABASE_URL, '-v', 'ON_ERROR_STOP=1', '-At'], {
    env: { ...process.env, PGAPPNAME: app },
    stdio: ['pipe', 'ignore', 'inherit'],
  })
  const exited = new Promise((r) => child.on('exit', r))
  t.after(() => child.kill('SIGKILL'))
  child.stdin.write(`SELECT pg_advisory_lock(hashtext('${id}'));\n`)
  const deadline = Date.now() + 20000
  for (;;) {
    const granted = await psqlAsync(`SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
      WHERE a.application_name = '${app}' AND l.locktype = 'advisory' AND l.granted`)
    if (granted === '1') break
    if (Date.now() > deadline) throw new Error('the side connection never got the advisory lock')
    await new Promise((r) => setTimeout(r, 50))
  }
  return {
    async release() {
      child.stdin.end(`SELECT pg_advisory_unlock(hashtext('${id}'));\n`)
      await exited
    },
  }
}

/** Reports a measured number with the test (TAP diagnostic). */
function report(t, text) {
  t.diagnostic(text)
}

/** Least-squares slope of ys over xs. */
function slope(xs, ys) {
  const n = xs.length
  const mx = xs.reduce((a, b) => a + b, 0) / n
  const my = ys.reduce((a, b) => a + b, 0) / n
  let num = 0
  let den = 0
  for (let i = 0; i < n; i++) {
    num += (xs[i] - mx) * (ys[i] - my)
    den += (xs[i] - mx) ** 2
  }
  return den === 0 ? 0 : num / den
}

module.exports = { Worker, SOAK, firstMessage, psqlAsync, holdInstanceLock, effectsDir, pgFleet, historyOf, historyProblems, completionProblems, waitAll, slope, report }
