'use strict'
// One fleet member for the fault tests, started with child_process.fork.
// Config arrives as JSON in DX_FAULT:
//   { backend: 'postgres' | 'sqlite', url, schema?, options?, effectsDir?, codeVersion?, connectOptions? }
// It connects, registers the catalog, starts, and reports { type: 'ready' }.
// Commands over IPC: { type: 'shutdown', timeoutMs }, { type: 'block', ms },
// { type: 'metrics' }. After shutdown it disconnects IPC and exits on its own:
// a live handle left behind by the runtime would keep it running, which the
// tests notice.
const { SqliteProvider, PostgresProvider, Runtime } = require('../../..')
const { register, busyWait } = require('./catalog')

const cfg = JSON.parse(process.env.DX_FAULT)

function send(msg) {
  if (process.connected) process.send(msg)
}

async function connect() {
  if (cfg.backend === 'sqlite') return SqliteProvider.open(cfg.url)
  return PostgresProvider.connectWithSchema(cfg.url, cfg.schema, cfg.connectOptions)
}

async function main() {
  const t0 = Date.now()
  let provider
  try {
    provider = await connect()
  } catch (err) {
    send({ type: 'connect-failed', code: err.code, message: err.message })
    process.disconnect()
    return
  }
  const rt = new Runtime(provider, cfg.options || {})
  register(rt, { effectsDir: cfg.effectsDir, send, codeVersion: cfg.codeVersion, seen: new Set() })
  if (typeof rt.on === 'function') {
    for (const name of ['poison', 'lockLost', 'livelock']) {
      rt.on(name, (ev) => send({ type: 'runtime-event', name, event: ev }))
    }
  }
  await rt.start()
  send({ type: 'ready', pid: process.pid, startMs: Date.now() - t0 })

  process.on('message', async (msg) => {
    if (msg.type === 'block') {
      send({ type: 'blocking', ms: msg.ms, t: Date.now() })
      busyWait(msg.ms)
      send({ type: 'unblocked', t: Date.now() })
    } else if (msg.type === 'metrics') {
      send({ type: 'metrics', metrics: rt.metricsSnapshot() })
    } else if (msg.type === 'shutdown') {
      const s0 = Date.now()
      await rt.shutdown(msg.timeoutMs)
      send({ type: 'stopped', elapsedMs: Date.now() - s0, metrics: rt.metricsSnapshot() })
      process.disconnect()
    }
  })
}

main().catch((err) => {
  process.stderr.write(`fleet-worker failed: ${err && err.stack}\n`)
  process.exitCode = 1
  if (process.connected) process.disconnect()
})
