'use strict'
// Shared test fixtures: a private Postgres schema or SQLite file per test file,
// removed afterwards, and small wait helpers. Tests never time things; waits
// here only bound how long a broken test hangs.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const crypto = require('node:crypto')
const net = require('node:net')
const assert = require('node:assert/strict')
const { execFileSync } = require('node:child_process')
const { SqliteProvider, PostgresProvider, Runtime, Client, DuroxideError } = require('..')

// A test context's cleanups, run last-in first-out by one `after` hook.
const cleanups = new WeakMap()

/**
 * Registers cleanup with the test context. Cleanups run last-in first-out,
 * and all of them even if one throws: node:test runs `after` hooks in the
 * order they were added, which dropped a test's schema while the runtime
 * started on it still polled (CI saw DROP SCHEMA deadlock with a fetch).
 * Hook contexts (`before`) have no `after`, and Node 20 runs an `after()`
 * registered inside a hook as soon as the hook ends, so there the caller
 * must clean up itself (see fixtures/store.js).
 */
function onCleanup(t, fn) {
  if (t && typeof t.after === 'function') {
    let stack = cleanups.get(t)
    if (!stack) {
      stack = []
      cleanups.set(t, stack)
      t.after(async () => {
        let failure = null
        for (const cleanup of stack.reverse()) {
          try {
            await cleanup()
          } catch (err) {
            failure = failure || err
          }
        }
        if (failure) throw failure
      })
    }
    stack.push(fn)
  } else if (t !== null) throw new Error('pass a test context (t) or null and clean up yourself')
}

const DATABASE_URL = process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/postgres'

function uniqueName(prefix) {
  return `${prefix}_${process.pid}_${crypto.randomBytes(4).toString('hex')}`.toLowerCase()
}

/** Runs SQL against the test database with psql (no extra npm dependency). */
function psql(sql, { url = DATABASE_URL } = {}) {
  // client_min_messages: a DROP ... CASCADE notice per object is noise in test output.
  const env = { ...process.env, PGOPTIONS: `${process.env.PGOPTIONS || ''} -c client_min_messages=warning` }
  return execFileSync('psql', [url, '-v', 'ON_ERROR_STOP=1', '-At', '-c', sql], { encoding: 'utf8', env }).trim()
}

/** Runs SQL against a SQLite file with the sqlite3 shell, read-only (the runtime keeps writing). */
function sqliteQuery(file, sql) {
  return execFileSync('sqlite3', ['-readonly', '-cmd', '.timeout 5000', file, sql], { encoding: 'utf8' }).trim()
}

/** Rows in every table of a test store (`backends`), read with the database's own shell: proves a read-only call wrote nothing. */
function rowCounts(store) {
  const counts = {}
  if (store.schema) {
    const tables = psql(`SELECT table_name FROM information_schema.tables WHERE table_schema = '${store.schema}' ORDER BY 1`)
      .split('\n').filter(Boolean)
    for (const t of tables) counts[t] = Number(psql(`SELECT count(*) FROM ${store.schema}."${t}"`))
  } else {
    const tables = sqliteQuery(store.file, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY 1")
      .split('\n').filter(Boolean)
    for (const t of tables) counts[t] = Number(sqliteQuery(store.file, `SELECT count(*) FROM "${t}"`))
  }
  return counts
}

/**
 * A fresh Postgres schema for one test file; `drop()` removes it.
 * Usage: const pg = await pgSchema(t) (registers cleanup with t.after when given).
 */
async function pgSchema(t, prefix = 'dxt') {
  const schema = uniqueName(prefix)
  const provider = await PostgresProvider.connectWithSchema(DATABASE_URL, schema)
  const drop = () => psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  onCleanup(t, drop)
  return { schema, provider, drop, url: DATABASE_URL }
}

/** A fresh SQLite file in a temp dir; `remove()` deletes it and its WAL files. */
async function sqliteFile(t, prefix = 'dxt') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`))
  const file = path.join(dir, 'test.db')
  const provider = await SqliteProvider.open(`sqlite:${file}`)
  const remove = () => fs.rmSync(dir, { recursive: true, force: true })
  onCleanup(t, remove)
  return { file, dir, provider, remove, url: `sqlite:${file}` }
}

/** Both backends, for tests that must pass on each. */
const backends = [
  ['sqlite', (t) => sqliteFile(t)],
  ['postgres', (t) => pgSchema(t)],
]

/** Fast-polling options for tests. */
const FAST = Object.freeze({ dispatcherPollIntervalMs: 5 })

/**
 * Builds, registers and starts a runtime; shuts it down with the test.
 * `register(rt)` adds handlers before start.
 */
async function startRuntime(t, provider, register, options = {}) {
  const rt = new Runtime(provider, { ...FAST, ...options })
  register(rt)
  await rt.start()
  onCleanup(t, () => rt.shutdown(0))
  return rt
}

/**
 * Opens a store with `open` (a backends opener, or pgSchema / sqliteFile),
 * starts a runtime on it with `register`'s handlers, both cleaned up with
 * `t`, and returns a client on the store.
 */
async function clientWithRuntime(t, open, register, options) {
  const store = await open(t)
  await startRuntime(t, store.provider, register, options)
  return new Client(store.provider)
}

/** Polls `fn` until it returns a truthy value or `timeoutMs` passes. */
async function eventually(fn, { timeoutMs = 20000, intervalMs = 20, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await fn()
    if (v) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** Cleanup registry for suite hooks, whose context has no `after`: pass it as `t`, then `close()`. */
function scope() {
  const fns = []
  return { after: (fn) => fns.push(fn), close: async () => { for (const fn of fns.reverse()) await fn() } }
}

/**
 * For `assert.rejects`/`assert.throws`: the error is a DuroxideError with
 * `code`, its message names each of `parts`, and no panic leaked into it.
 */
function coded(code, ...parts) {
  return (err) => {
    assert.ok(err instanceof DuroxideError, `expected a DuroxideError, got ${err && err.constructor && err.constructor.name}: ${err}`)
    assert.equal(err.code, code, `expected ${code}, got ${err.code}: ${err.message}`)
    for (const p of parts) assert.ok(err.message.includes(p), `message '${err.message}' should mention '${p}'`)
    assert.ok(!/panic/i.test(err.message), `a panic reached the user: ${err.message}`)
    return true
  }
}

/** Fails if `promise` has not settled within `ms` (a hang guard, not a measurement). */
function settlesWithin(promise, ms, what) {
  let timer
  const guard = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms)
  })
  return Promise.race([promise, guard]).finally(() => clearTimeout(timer))
}

/** A local port where nothing listens. */
async function closedPort() {
  const server = net.createServer()
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return port
}

module.exports = {
  rowCounts,
  onCleanup,
  DATABASE_URL,
  uniqueName,
  psql,
  sqliteQuery,
  pgSchema,
  sqliteFile,
  backends,
  FAST,
  startRuntime,
  clientWithRuntime,
  eventually,
  sleep,
  scope,
  coded,
  settlesWithin,
  closedPort,
  Client,
}
