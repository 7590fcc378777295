'use strict'
// One bench workload run on duroxide-node, with the options bench/run.js
// gives. bench/baseline/src/main.rs is the same program written against the
// duroxide crate directly; keep the two in step (same handlers, same order of
// starts and waits, same timed span).
//
//   node bench/ours.js '<spec json>'
//
// spec: { workload, store: 'sqlite' | 'postgres', url, schema?, n, bytes?,
//         batch?, runtimes?, orchestrationConcurrency, workerConcurrency, pollMs,
//         oursOptions? (extra RuntimeOptions, for A/B runs of our own settings) }
// Timed workloads print {"timed": true} as their timed span starts and
// {"ms": elapsed} at its end, on stdout. `idle` starts `runtimes`
// runtimes, prints {"ready": true} and shuts them down when stdin closes.
// `chain` also prints the ms per step of its first and of its last tenth
// (`firstTenthStepMs`, `lastTenthStepMs`), from the times its activities ran.
// `backlog` starts `n` instances that wait for an event, waits until all
// wait (and prints the RSS they added), then raises each event once: the
// timed span runs from the first raise until all completed.
// `memory` runs `n` hello orchestrations in batches of `batch` and prints the
// RSS after the first and after the last batch, and the V8 heap's committed
// size at both points.
const { SqliteProvider, PostgresProvider, Runtime, Client } = require('..')

const WAIT_MS = 600000
const spec = JSON.parse(process.argv[2])
/** When each `Step` activity ran (performance.now()), for `chain`'s tenths. */
const stepTimes = []

function register(rt) {
  rt.registerActivity('Greet', async (ctx, name) => `Hello, ${name}!`)
  rt.registerActivity('Step', async (ctx, i) => {
    stepTimes.push(performance.now())
    return i + 1
  })
  rt.registerActivity('Echo', async (ctx, s) => 'y'.repeat(s.length))
  rt.registerOrchestration('Hello', function* (ctx, name) {
    return yield ctx.scheduleActivity('Greet', name)
  })
  rt.registerOrchestration('Chain', function* (ctx, n) {
    let v = 0
    for (let i = 0; i < n; i++) v = yield ctx.scheduleActivity('Step', v)
    return v
  })
  rt.registerOrchestration('Fanout', function* (ctx, n) {
    const results = yield ctx.all(Array.from({ length: n }, (_, i) => ctx.scheduleActivity('Greet', String(i))))
    return results.length
  })
  rt.registerOrchestration('Payload', function* (ctx, s) {
    return yield ctx.scheduleActivity('Echo', s)
  })
  rt.registerOrchestration('Wait', function* (ctx) {
    return yield ctx.waitForEvent('go')
  })
}

function open() {
  if (spec.store === 'sqlite') return SqliteProvider.open(spec.url)
  if (spec.store === 'postgres') return PostgresProvider.connectWithSchema(spec.url, spec.schema)
  throw new Error(`unknown store ${spec.store}`)
}

function newRuntime(provider) {
  const rt = new Runtime(provider, {
    orchestrationConcurrency: spec.orchestrationConcurrency,
    workerConcurrency: spec.workerConcurrency,
    dispatcherPollIntervalMs: spec.pollMs,
    logLevel: 'warn',
    ...spec.oursOptions,
  })
  register(rt)
  return rt
}

/**
 * Starts the instances one after another, then waits for each in turn. The
 * `{"timed":true}` line tells bench/run.js the timed span starts (it samples
 * the machine's CPU time there and at the result line).
 */
async function runTimed(client, orchestration, inputs, expect, prefix = orchestration) {
  process.stdout.write('{"timed":true}\n')
  const t0 = performance.now()
  for (let i = 0; i < inputs.length; i++) await client.startOrchestration(`${prefix}-${i}`, orchestration, inputs[i])
  for (let i = 0; i < inputs.length; i++) {
    const id = `${prefix}-${i}`
    const s = await client.waitForOrchestration(id, WAIT_MS)
    if (s.status !== 'Completed' || !expect(s.output)) throw new Error(`${id} ended unexpectedly: ${JSON.stringify(s).slice(0, 500)}`)
  }
  return performance.now() - t0
}

/**
 * ms per step over the first and over the last tenth of a chain, from the
 * times its `Step` activities ran.
 */
function tenths(n) {
  const k = Math.max(1, Math.floor(n / 10))
  if (stepTimes.length < n || n < 2 * k + 1) return {}
  return {
    firstTenthStepMs: (stepTimes[k] - stepTimes[0]) / k,
    lastTenthStepMs: (stepTimes[n - 1] - stepTimes[n - 1 - k]) / k,
  }
}

/**
 * `n` instances waiting for an event, each raised once: the RSS the waiting
 * instances added (after a GC), and the time from the first raise until the
 * last instance completed.
 */
async function backlog(client) {
  const n = spec.n
  const before = memoryMb()
  for (let i = 0; i < n; i++) await client.startOrchestration(`Wait-${i}`, 'Wait', null)
  // Every instance has run its first turn (and waits) once the queue is empty.
  while ((await client.getQueueDepths()).orchestratorQueue > 0) await new Promise((r) => setTimeout(r, 50))
  await new Promise((r) => setTimeout(r, 200))
  const waiting = memoryMb()
  process.stdout.write('{"timed":true}\n')
  const t0 = performance.now()
  for (let i = 0; i < n; i++) await client.raiseEvent(`Wait-${i}`, 'go', i)
  for (let i = 0; i < n; i++) {
    const s = await client.waitForOrchestration(`Wait-${i}`, WAIT_MS)
    if (s.status !== 'Completed' || s.output !== i) throw new Error(`Wait-${i} ended unexpectedly: ${JSON.stringify(s).slice(0, 500)}`)
  }
  const ms = performance.now() - t0
  return { ms, waitingKbPerInstance: ((waiting.rss - before.rss) * 1024) / n }
}

function timed(client) {
  const n = spec.n
  switch (spec.workload) {
    case 'hello':
      return runTimed(client, 'Hello', Array.from({ length: n }, (_, i) => `user${i}`), (out) => out.startsWith('Hello, user'))
    case 'chain':
      return runTimed(client, 'Chain', [n], (out) => out === n)
    case 'fanout':
      return runTimed(client, 'Fanout', [n], (out) => out === n)
    case 'payload': {
      const input = 'x'.repeat(spec.bytes)
      return runTimed(client, 'Payload', Array.from({ length: n }, () => input), (out) => out.length === spec.bytes)
    }
    default:
      throw new Error(`unknown workload '${spec.workload}'`)
  }
}

/** RSS and the V8 heap's committed size (young generation included), after a GC. */
const memoryMb = () => {
  if (global.gc) global.gc()
  const m = process.memoryUsage()
  return { rss: m.rss / (1024 * 1024), v8: m.heapTotal / (1024 * 1024) }
}

async function memory(client) {
  const batches = Math.ceil(spec.n / spec.batch)
  let first = null
  let ms = 0
  for (let b = 0; b < batches; b++) {
    const inputs = Array.from({ length: spec.batch }, (_, i) => `user${b * spec.batch + i}`)
    ms += await runTimed(client, 'Hello', inputs, (out) => out.startsWith('Hello, user'), `mem${b}`)
    if (b === 0) first = memoryMb()
  }
  const last = memoryMb()
  return { rssFirstMb: first.rss, rssLastMb: last.rss, v8FirstMb: first.v8, v8LastMb: last.v8, ms }
}

async function idle(provider) {
  const runtimes = []
  for (let i = 0; i < (spec.runtimes || 1); i++) {
    const rt = newRuntime(provider)
    await rt.start()
    runtimes.push(rt)
  }
  process.stdout.write('{"ready":true}\n')
  // The parent measures while we wait; it closes our stdin to stop us.
  await new Promise((resolve) => {
    process.stdin.on('end', resolve)
    process.stdin.resume()
  })
  await Promise.all(runtimes.map((rt) => rt.shutdown(5000)))
}

async function main() {
  const provider = await open()
  if (spec.workload === 'idle') return idle(provider)
  const rt = newRuntime(provider)
  await rt.start()
  const client = new Client(provider)
  try {
    const result =
      spec.workload === 'memory'
        ? await memory(client)
        : spec.workload === 'backlog'
          ? await backlog(client)
          : { ms: await timed(client), ...(spec.workload === 'chain' ? tenths(spec.n) : {}) }
    process.stdout.write(JSON.stringify(result) + '\n')
  } finally {
    await rt.shutdown(5000)
  }
}

main().catch((err) => {
  process.stderr.write(`${err && err.stack ? err.stack : err}\n`)
  process.exit(1)
})
