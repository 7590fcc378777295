'use strict'
// How long Runtime.shutdown takes, on both stores, for the cases the tests
// only order (__test__/runtime.lifecycle.test.js: an idle shutdown(60000)
// returns before half its timeout). Baseline from the same run: shutdown(0)
// of an identical idle runtime. A ratio near 1 means shutdown(timeout) does
// not wait for its timeout when nothing is in flight.
//
//   node bench/timing-shutdown.js [--rounds 5]
const { performance } = require('node:perf_hooks')
const { Runtime, Client } = require('..')
const { sqliteFile, pgSchema, uniqueName, FAST } = require('../__test__/helpers')

const rounds = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 5

function median(values) {
  const v = [...values].sort((a, b) => a - b)
  return v[Math.floor(v.length / 2)]
}

/** Starts a runtime on `provider`, optionally runs one orchestration, then times shutdown(timeoutMs). */
async function timeShutdown(provider, timeoutMs, withWork) {
  const rt = new Runtime(provider, FAST)
  rt.registerActivity('A', async () => 'a')
  rt.registerOrchestration('O', function* (ctx) { return yield ctx.scheduleActivity('A') })
  await rt.start()
  if (withWork) {
    const client = new Client(provider)
    const id = uniqueName('bench-shutdown')
    await client.startOrchestration(id, 'O')
    await client.waitForOrchestration(id, 30000)
  }
  const t0 = performance.now()
  await rt.shutdown(timeoutMs)
  return performance.now() - t0
}

async function main() {
  for (const [kind, open] of [['sqlite', sqliteFile], ['postgres', pgSchema]]) {
    const cleanups = []
    const store = await open({ after: (fn) => cleanups.push(fn) })
    try {
      for (const withWork of [false, true]) {
        const base = []
        const long = []
        for (let i = 0; i < rounds; i++) {
          base.push(await timeShutdown(store.provider, 0, withWork))
          long.push(await timeShutdown(store.provider, 60000, withWork))
        }
        const b = median(base)
        const l = median(long)
        console.log(`${kind}, ${withWork ? 'after one orchestration' : 'idle'}: shutdown(60000) median ${l.toFixed(1)} ms, ` +
          `shutdown(0) median ${b.toFixed(1)} ms, ratio ${(l / b).toFixed(2)} (${rounds} rounds)`)
      }
    } finally {
      for (const fn of cleanups.reverse()) await fn()
    }
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
