'use strict'
// Item 8's workload in one process, as an embedded-SQLite user runs it: one
// Runtime (4 orchestration, 8 worker slots) and a Client on the same file,
// N orchestrations mixing hello, fan-out of 20 and timers. Config in
// DX_FAULT: { url, count }. Reports { type: 'result', ... } over IPC.
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
  const rt = new Runtime(provider, { orchestrationConcurrency: 4, workerConcurrency: 8, dispatcherPollIntervalMs: 10 })
  register(rt, {})
  await rt.start()
  const client = new Client(provider)
  const t0 = Date.now()
  const ids = []
  for (let i = 0; i < cfg.count; i++) {
    const [name, input] = shapeOf(i)
    const id = `mix-${i}`
    ids.push(id)
    await client.startOrchestration(id, name, input)
  }
  const startedMs = Date.now() - t0
  // Count terminal instances from the runtime's counters, then read every status.
  for (;;) {
    const m = rt.metricsSnapshot()
    if (m.orchCompletions + m.orchFailures >= cfg.count) break
    await new Promise((r) => setTimeout(r, 100))
  }
  const durationMs = Date.now() - t0
  const failed = []
  const wrong = []
  for (let i = 0; i < ids.length; i++) {
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
  process.send({ type: 'result', count: cfg.count, startedMs, durationMs, failed, wrong, metrics })
  process.disconnect()
}

main().catch((err) => {
  process.stderr.write(`sqlite-mix failed: ${err && err.stack}\n`)
  process.exitCode = 1
  if (process.connected) process.disconnect()
})
