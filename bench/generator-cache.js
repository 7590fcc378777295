'use strict'
// The generator cache: one orchestration running N sequential activities on a
// SQLite file (or a fresh Postgres schema with BENCH_BACKEND=postgres), with
// orchestrationCacheSize at its default and at 0 (every turn replays the
// generator from its first step), alternating, in the same run. Prints one
// JSON line per N with both times per step and their ratio.
//   node bench/generator-cache.js [N ...]   (default 100 400; BENCH_ROUNDS=1)
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const crypto = require('node:crypto')
const { execFileSync } = require('node:child_process')
const { SqliteProvider, PostgresProvider, Runtime, Client } = require('..')

const backend = process.env.BENCH_BACKEND === 'postgres' ? 'postgres' : 'sqlite'
const DATABASE_URL = process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/postgres'

/** A fresh store and the function that removes it. */
async function openStore() {
  if (backend === 'postgres') {
    const schema = `bench_cache_${crypto.randomBytes(4).toString('hex')}`
    const provider = await PostgresProvider.connectWithSchema(DATABASE_URL, schema)
    const drop = () => execFileSync('psql', [DATABASE_URL, '-q', '-c', `DROP SCHEMA IF EXISTS ${schema} CASCADE`], { stdio: 'ignore' })
    return { provider, drop }
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-cache-'))
  const provider = await SqliteProvider.open(`sqlite:${path.join(dir, 'b.db')}`)
  return { provider, drop: () => fs.rmSync(dir, { recursive: true, force: true }) }
}

async function chain(n, cacheSize) {
  const { provider, drop } = await openStore()
  try {
    const rt = new Runtime(provider, { dispatcherPollIntervalMs: 10, orchestrationCacheSize: cacheSize })
    rt.registerActivity('Inc', async (ctx, x) => x + 1)
    rt.registerOrchestration('Chain', function* (ctx, steps) {
      let x = 0
      for (let i = 0; i < steps; i++) x = yield ctx.scheduleActivity('Inc', x)
      return x
    })
    await rt.start()
    const client = new Client(provider)
    const t0 = process.hrtime.bigint()
    await client.startOrchestration('chain', 'Chain', n)
    const s = await client.waitForOrchestration('chain', 600000)
    const ms = Number(process.hrtime.bigint() - t0) / 1e6
    await rt.shutdown(1000)
    if (s.status !== 'Completed' || s.output !== n) throw new Error(`chain ${n} ended ${s.status}: ${s.error}`)
    return ms
  } finally {
    drop()
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

async function main() {
  const sizes = process.argv.slice(2).map(Number).filter((n) => n > 0)
  const rounds = Number(process.env.BENCH_ROUNDS || 1)
  for (const n of sizes.length ? sizes : [100, 400]) {
    const on = []
    const off = []
    for (let r = 0; r < rounds; r++) {
      on.push(await chain(n, 1000))
      off.push(await chain(n, 0))
    }
    const perStep = (xs) => +(median(xs) / n).toFixed(2)
    console.log(JSON.stringify({
      workload: `chain-${backend}-${n}`,
      cacheOnMs: Math.round(median(on)),
      cacheOffMs: Math.round(median(off)),
      cacheOnMsPerStep: perStep(on),
      cacheOffMsPerStep: perStep(off),
      speedup: +(median(off) / median(on)).toFixed(2),
    }))
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
