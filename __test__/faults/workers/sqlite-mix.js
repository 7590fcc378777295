'use strict'
// The SQLite contention workload in one process, as an embedded-SQLite user
// runs it: one Runtime and a Client on the same file, N orchestrations mixing
// hello, fan-out of 20 and timers, started `batch` at a time so client writes
// collide with the runtime's fetches and acks. Config in DX_FAULT:
// { url, count, batch, orchestrationConcurrency, workerConcurrency }.
// Reports { type: 'result', ... } over IPC; start calls that reject are in
// `rejected`.
const { SqliteProvider, Runtime, Client } = require('../../..')
const { register } = require('./catalog')

const cfg = JSON.parse(process.env.DX_FAULT)

function shapeOf(i) {
  if (i % 3 === 0) return ['FanOut', { n: 20 }]
  if (i % 3 === 1) return ['Timed', { ms: 20 + (i % 7) * 40 }]
  return ['Hello', `n${i}`]
}

async function main() {
  const provider = await SqliteProvider.open(cfg.url)
  const rt = new Runtime(provider, {
    orchestrationConcurrency: cfg.orchestrationConcurrency,
    workerConcurrency: cfg.workerConcurrency,
    dispatcherPollIntervalMs: 5,
  })
  register(rt, {})
  await rt.start()
  const client = new Client(provider)
  const t0 = Date.now()
  const ids = []
  const rejected = []
  const refused = new Set()
  for (let first = 0; first < cfg.count; first += cfg.batch) {
    const starts = []
    for (let i = first; i < Math.min(cfg.count, first + cfg.batch); i++) {
      const [name, input] = shapeOf(i)
      const id = `mix-${i}`
      ids.push(id)
      starts.push(client.startOrchestration(id, name, input).catch((err) => {
        refused.add(id)
        rejected.push(`${id}: [${err.code}] ${err.message}`)
      }))
    }
    await Promise.all(starts)
  }
  const startedMs = Date.now() - t0
  const expected = cfg.count - rejected.length
  // Count terminal instances from the runtime's counters, then read every status.
  for (;;) {
    const m = rt.metricsSnapshot()
    if (m.orchCompletions + m.orchFailures >= expected) break
    await new Promise((r) => setTimeout(r, 100))
  }
  const durationMs = Date.now() - t0
  const failed = []
  const wrong = []
  for (let i = 0; i < ids.length; i++) {
    if (refused.has(ids[i])) continue
    const s = await client.getStatus(ids[i])
    if (s.status !== 'Completed') {
      failed.push(`${ids[i]}: ${s.status} ${s.error ?? ''}`)
      continue
    }
    const [name] = shapeOf(i)
    const out = JSON.parse(s.output)
    const ok = name === 'FanOut' ? out.length === 20 && out.every((o, k) => o === `f${k}:done`)
      : name === 'Timed' ? out === 'after-timer:done' : out === `hello-n${i}:done`
    if (!ok) wrong.push(`${ids[i]}: ${s.output}`)
  }
  const metrics = rt.metricsSnapshot()
  await rt.shutdown(5000)
  process.send({ type: 'result', count: cfg.count, startedMs, durationMs, rejected, failed, wrong, metrics })
  process.disconnect()
}

main().catch((err) => {
  process.stderr.write(`sqlite-mix failed: ${err && err.stack}\n`)
  process.exitCode = 1
  if (process.connected) process.disconnect()
})
