'use strict'
// The fetch cap (maxConcurrentOrchestrationFetches, src/guard/fetch_gate.rs)
// against the fetch convoy (issue 5): one run of a fleet with the cap at 1
// and one with it off, on their own schemas, each sampled from Postgres while
// it works. With the cap, no process ever has more orchestration fetches
// inside duroxide-pg's fetch_orchestration_item than it has runtimes; without
// it, the dispatchers of a runtime pile into that call together. Both runs
// must complete every orchestration without deadlocks or lost locks: those
// hold with the cap off too at this size, so they are outcome checks, not the
// cap's proof. Speed (fetch p99, throughput with the cap on and off) is the
// benchmark's business: `node bench/convoy.js`.
//
// The fleet runs with `fastPaths: false`: it polls and its Postgres fetches
// are the crate's, which wait for a held instance. With wake-ups, woken
// dispatchers look at the store one at a time (src/providers/wakeup/signal.rs),
// and fetches that try the instance lock take the next instance instead of
// queueing (src/providers/pg_functions/fetch_turn.sql). So at this size the
// uncapped runtimes no longer pile into the fetch; a fleet of the crate's
// polling fetches still does, and the cap must hold it there.
//
// The pile is a sampled maximum. Over 4 s of load the uncapped fleet's read
// 4 or 5 in 3 of 20 runs on a 2-vCPU host (debug build), failing the check
// though the fleet piled up at other moments; over 8 s it read 7 to 11 in 6
// runs.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const { runConvoy, format } = require('../bench/convoy')
const { DATABASE_URL } = require('./helpers')

const FLEET = { fastPaths: false, processes: 2, runtimes: 2, slots: 8, poolMax: 12, rate: 10, seconds: 8, turnMs: 20, steps: 2, timeoutMs: 60000 }
const RUNTIMES = FLEET.processes * FLEET.runtimes

/**
 * Samples, until stopped, how many sessions are inside `schema`'s
 * orchestration fetch at once (the sampler's own session excluded): the
 * crate's fetch_orchestration_item (the fleet runs without fast paths), or
 * the tail fetch of fetch_turn.sql, with one
 * psql session fed a query per answer. Resolves the largest count seen and
 * the number of samples.
 */
function fetchesInFlight(schema) {
  const sql = `SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() ` +
    `AND (query LIKE 'SELECT * FROM ${schema}.fetch_orchestration_item(%' ` +
    `OR query LIKE '%FROM ${schema}.duroxide_node_fetch_turn_%');\n`
  const psql = spawn('psql', [DATABASE_URL, '-At', '-v', 'ON_ERROR_STOP=1'], { stdio: ['pipe', 'pipe', 'inherit'] })
  let max = 0
  let samples = 0
  let stopping = false
  let partial = ''
  psql.stdout.setEncoding('utf8')
  psql.stdout.on('data', (chunk) => {
    const lines = (partial + chunk).split('\n')
    partial = lines.pop()
    for (const line of lines) {
      max = Math.max(max, Number(line))
      samples++
      if (!stopping) psql.stdin.write(sql)
    }
  })
  const exited = new Promise((resolve) => psql.on('exit', resolve))
  psql.stdin.write(sql)
  return {
    stop: async () => {
      stopping = true
      psql.stdin.end()
      await exited
      return { max, samples }
    },
  }
}

function completedCleanly(r, label) {
  assert.deepEqual(r.exitCodes, new Array(FLEET.processes).fill(0), `${label}: every process shut down cleanly`)
  assert.equal(r.failed, 0, `${label}: failed orchestrations`)
  assert.equal(r.completed, r.total, `${label}: ${r.completed} of ${r.total} completed`)
  assert.equal(r.deadlockLogLines, 0, `${label}: ${r.firstDeadlocks.join('\n')}`)
  assert.equal(r.deadlockRetries, 0, `${label}: deadlock retries`)
  assert.equal(r.invalidLockTokenAcks, 0, `${label}: invalid-lock acks`)
  assert.equal(r.poisonDispositions, 0, `${label}: poison`)
}

test('the fetch cap keeps one store fetch per runtime in flight on a fleet where the uncapped runtimes pile into the fetch', { timeout: 240000 }, async (t) => {
  const capped = await runConvoy({ ...FLEET, gate: 1, watch: fetchesInFlight })
  const open = await runConvoy({ ...FLEET, gate: 1000, watch: fetchesInFlight })
  for (const [label, r] of [['cap 1', capped], ['cap off', open]]) {
    t.diagnostic(`${label}: most fetches in flight at once ${r.watched.max} (${r.watched.samples} samples); ${format(r).split('\n').map((l) => l.trim()).join('; ')}`)
  }
  completedCleanly(capped, 'cap 1')
  completedCleanly(open, 'cap off')
  assert.ok(capped.watched.max >= 1, `the sampler saw fetches at all (${capped.watched.samples} samples)`)
  assert.ok(capped.watched.max <= RUNTIMES, `cap 1: at most one fetch per runtime (${RUNTIMES}), saw ${capped.watched.max}`)
  assert.ok(open.watched.max > RUNTIMES, `cap off: more than one fetch per runtime at once (over ${RUNTIMES}), saw ${open.watched.max}`)
})
