'use strict'
// Item 10's process: N orchestrations with activities through one Runtime,
// in batches, sampling heap (after a full GC) and RSS after each batch; then
// shutdown. Run with --expose-gc. Config in DX_FAULT: { url, schema, count, batch }.
// Reports { type: 'sample' } per batch and { type: 'stopped' } after shutdown,
// then disconnects IPC and must exit on its own: any ThreadsafeFunction, timer
// or socket left referenced by the library keeps it alive.
const { PostgresProvider, Runtime, Client } = require('../../..')
const { register } = require('./catalog')

const cfg = JSON.parse(process.env.DX_FAULT)
const PAYLOAD = 'p'.repeat(1024)

async function main() {
  const provider = await PostgresProvider.connectWithSchema(cfg.url, cfg.schema)
  const rt = new Runtime(provider, { orchestrationConcurrency: 4, workerConcurrency: 8, dispatcherPollIntervalMs: 5 })
  register(rt, {})
  await rt.start()
  const client = new Client(provider)
  process.send({ type: 'ready' })

  let started = 0
  const t0 = Date.now()
  while (started < cfg.count) {
    const ids = []
    for (let i = 0; i < cfg.batch && started < cfg.count; i++, started++) {
      ids.push(`mem-${started}`)
    }
    await Promise.all(ids.map((id) => client.startOrchestration(id, 'FanOut', { n: 2, ms: 0, pad: PAYLOAD })))
    for (;;) {
      const m = rt.metricsSnapshot()
      if (m.orchCompletions + m.orchFailures >= started) break
      await new Promise((r) => setTimeout(r, 20))
    }
    global.gc()
    const mem = process.memoryUsage()
    process.send({ type: 'sample', done: started, heapUsed: mem.heapUsed, rss: mem.rss, external: mem.external, t: Date.now() - t0 })
  }
  const metrics = rt.metricsSnapshot()
  await rt.shutdown(5000)
  // Let callbacks already queued (immediates) run before looking.
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r))
  const handles = process.getActiveResourcesInfo().filter((r) => r !== 'PipeWrap' && r !== 'TTYWrap')
  process.send({ type: 'stopped', metrics, handles, elapsedMs: Date.now() - t0 })
  process.disconnect()
}

main().catch((err) => {
  process.stderr.write(`memory-soak failed: ${err && err.stack}\n`)
  process.exitCode = 1
  if (process.connected) process.disconnect()
})
