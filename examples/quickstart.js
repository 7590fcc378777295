// Quickstart: a durable greeting on an embedded SQLite file. No server needed.
//   npm run quickstart
'use strict'
const path = require('node:path')
const fs = require('node:fs')
const { SqliteProvider, Runtime, Client } = require('..')

async function main() {
  const dir = path.join(__dirname, '..', '.quickstart')
  fs.mkdirSync(dir, { recursive: true })
  const provider = await SqliteProvider.open(`sqlite:${path.join(dir, 'quickstart.db')}`)

  const runtime = new Runtime(provider, { dispatcherPollIntervalMs: 10 })
  runtime.registerActivity('Greet', async (ctx, name) => `Hello, ${name}!`)
  runtime.registerOrchestration('HelloWorld', function* (ctx, name) {
    const greeting = yield ctx.scheduleActivity('Greet', name)
    yield ctx.scheduleTimer(10)
    return greeting
  })
  await runtime.start()

  const client = new Client(provider)
  const instanceId = `hello-${Date.now()}`
  await client.startOrchestration(instanceId, 'HelloWorld', 'duroxide')
  const result = await client.waitForOrchestration(instanceId, 30000)
  console.log(`${instanceId}: ${result.status} -> ${JSON.stringify(result.output)}`)

  await runtime.shutdown(1000)
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
