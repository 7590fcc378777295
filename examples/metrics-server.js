// Metrics: a runtime whose Prometheus metrics are served at /metrics.
//   node examples/metrics-server.js
//   curl http://127.0.0.1:9464/metrics
//
// Environment:
//   STORE_URL    sqlite:<file> (default sqlite:./.metrics-example/metrics.db)
//                or a postgres:// URL
//   STORE_SCHEMA Postgres schema (default: the provider's default)
//   PORT         port to listen on (default 9464; 0 picks a free one)
//   HOST         address to listen on (default 127.0.0.1)
//
// It registers a small greeting orchestration; start instances of 'Hello'
// with any client on the same store. Prints `listening on <url>` once ready
// and stops cleanly on SIGTERM/SIGINT.
'use strict'
const http = require('node:http')
const path = require('node:path')
const fs = require('node:fs')
const { SqliteProvider, PostgresProvider, Runtime } = require('..')

async function openStore(url, schema) {
  if (url.startsWith('postgres')) {
    return schema ? PostgresProvider.connectWithSchema(url, schema) : PostgresProvider.connect(url)
  }
  return SqliteProvider.open(url)
}

async function main() {
  let url = process.env.STORE_URL
  if (!url) {
    const dir = path.join(process.cwd(), '.metrics-example')
    fs.mkdirSync(dir, { recursive: true })
    url = `sqlite:${path.join(dir, 'metrics.db')}`
  }
  const provider = await openStore(url, process.env.STORE_SCHEMA)

  const runtime = new Runtime(provider, { dispatcherPollIntervalMs: 10 })
  runtime.registerActivity('Greet', async (ctx, name) => `Hello, ${name}!`)
  runtime.registerOrchestration('Hello', function* (ctx, name) {
    return yield ctx.scheduleActivity('Greet', name)
  })
  await runtime.start()

  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/metrics') {
      // Prometheus text exposition format 0.0.4.
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' })
      res.end(runtime.metricsText())
    } else if (req.method === 'GET' && req.url === '/health') {
      const health = runtime.health()
      res.writeHead(health.status === 'ok' ? 200 : 503, { 'content-type': 'application/json' })
      res.end(JSON.stringify(health))
    } else {
      res.writeHead(404).end()
    }
  })
  const port = Number(process.env.PORT ?? 9464)
  server.listen(port, process.env.HOST ?? '127.0.0.1', () => {
    const { address, port: bound } = server.address()
    console.log(`listening on http://${address}:${bound}/metrics`)
  })

  const stop = async () => {
    server.close()
    await runtime.shutdown(2000)
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
