'use strict'
// `duroxide-node dashboard` as an operator runs it, in a child process:
// against a SQLite file like the quickstart's and against a Postgres schema,
// it prints the URL, serves the page and the API until SIGTERM, never
// creates or migrates a store, hides the password of the database URL,
// generates a token off loopback and refuses writes with --read-only.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { sqliteFile, pgSchema, psql, rowCounts, uniqueName, DATABASE_URL, Client } = require('./helpers')
const { openStore } = require('./fixtures/store')
const { Runtime } = require('..')
const { BIN } = require('./fixtures/cli-run')
const { api } = require('./fixtures/dashboard-serve')

const children = new Set()

/**
 * Starts the command; resolves `{ child, url, line, exit }` once it printed
 * its URL (or rejects with what it printed if it exited first). `exit`
 * resolves `{ code, stdout, stderr }`.
 */
function startDashboard(args, env = {}) {
  const childEnv = { ...process.env, ...env }
  if (!('DUROXIDE_DATABASE_URL' in env)) delete childEnv.DUROXIDE_DATABASE_URL
  if (!('DUROXIDE_SCHEMA' in env)) delete childEnv.DUROXIDE_SCHEMA
  const child = spawn(process.execPath, [BIN, 'dashboard', ...args], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  let stdout = ''
  let stderr = ''
  const exit = new Promise((resolve) => child.on('close', (code) => {
    children.delete(child)
    resolve({ code, stdout, stderr })
  }))
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      stdout += d
      const m = /^duroxide-node dashboard on (.*): (http:\/\/\S+)$/m.exec(stdout)
      if (m) resolve({ child, label: m[1], url: m[2], line: m[0], exit })
    })
    child.stderr.on('data', (d) => (stderr += d))
    exit.then((r) => reject(Object.assign(new Error(`dashboard exited ${r.code} before printing its URL: ${r.stderr}`), r)))
  })
}

async function stop(d) {
  d.child.kill('SIGTERM')
  return d.exit
}

let sqlite
let pg

before(async () => {
  // A store like the quickstart's: a file a runtime wrote, then closed.
  sqlite = await openStore(sqliteFile)
  pg = await openStore(pgSchema)
  for (const store of [sqlite, pg]) {
    const rt = new Runtime(store.provider, { dispatcherPollIntervalMs: 10 })
    rt.registerActivity('Greet', async (ctx, name) => `Hello, ${name}!`)
    rt.registerOrchestration('HelloWorld', function* (ctx, name) {
      return yield ctx.scheduleActivity('Greet', name)
    })
    rt.registerOrchestration('Wait', function* (ctx) {
      return yield ctx.waitForEvent('go')
    })
    await rt.start()
    const client = new Client(store.provider)
    await client.startOrchestration('hello-1', 'HelloWorld', 'duroxide')
    await client.waitForOrchestration('hello-1', 20000)
    await client.startOrchestration('wait-1', 'Wait', null)
    for (let i = 0; i < 200 && (await client.getStatus('wait-1')).status !== 'Running'; i++) await new Promise((r) => setTimeout(r, 20))
    await rt.shutdown(1000)
  }
})
after(async () => {
  for (const c of children) c.kill('SIGKILL')
  if (sqlite) await sqlite.release()
  if (pg) await pg.release()
})

test('on a SQLite file: prints the URL, serves the page and the API, stops on SIGTERM, writes nothing', async () => {
  const before = rowCounts(sqlite)
  const d = await startDashboard(['--database-url', sqlite.url])
  assert.match(d.url, /^http:\/\/127\.0\.0\.1:\d+\/$/)
  assert.equal(d.label, sqlite.url)
  const page = await fetch(d.url)
  assert.equal(page.status, 200)
  assert.match(await page.text(), /<script type="module" src="app.js">/)
  const list = await api(d.url, 'instances')
  assert.deepEqual(list.body.instances.map((i) => i.instanceId).sort(), ['hello-1', 'wait-1'])
  const detail = await api(d.url, 'instance', { query: { id: 'hello-1' } })
  assert.equal(detail.body.status.output.text, '"Hello, duroxide!"')
  const overview = await api(d.url, 'overview')
  assert.deepEqual(overview.body.byStatus, { running: 1, completed: 1, failed: 0, continuedAsNew: 0 })
  assert.equal(overview.body.queues.setAside, 0)
  const exit = await stop(d)
  assert.equal(exit.code, 0, exit.stderr)
  assert.deepEqual(rowCounts(sqlite), before)
})

test('never creates a store: a missing SQLite file or Postgres schema is an error and stays missing', async () => {
  const missing = path.join(path.dirname(sqlite.file), 'nope.db')
  await assert.rejects(startDashboard(['--database-url', `sqlite:${missing}`]), (err) => {
    assert.equal(err.code, 1)
    assert.match(err.stderr, /ERR_NOT_FOUND.*no SQLite store/)
    return true
  })
  assert.equal(fs.existsSync(missing), false)
  const schema = uniqueName('dxt_none')
  await assert.rejects(startDashboard(['--database-url', DATABASE_URL, '--schema', schema]), (err) => {
    assert.equal(err.code, 1)
    assert.match(err.stderr, /ERR_PROVIDER/)
    return true
  })
  assert.equal(psql(`SELECT count(*) FROM information_schema.schemata WHERE schema_name = '${schema}'`), '0')
})

test('on Postgres: the password of the URL is never shown, and the pages read the schema', async () => {
  const url = new URL(DATABASE_URL)
  url.password = 'pw-never-shown' // trust auth: accepted and ignored
  const d = await startDashboard(['--database-url', url.toString()], { DUROXIDE_SCHEMA: pg.schema })
  assert.doesNotMatch(d.line, /pw-never-shown/)
  assert.match(d.label, /:\*\*\*@/)
  assert.match(d.label, new RegExp(`schema ${pg.schema}`))
  const config = await api(d.url, 'config')
  assert.equal(config.body.backend, 'postgres')
  assert.doesNotMatch(JSON.stringify(config.body), /pw-never-shown/)
  const list = await api(d.url, 'instances', { query: { status: 'Running' } })
  assert.deepEqual(list.body.instances.map((i) => i.instanceId), ['wait-1'])
  const page = await (await fetch(d.url)).text()
  assert.doesNotMatch(page, /pw-never-shown/)
  assert.equal((await stop(d)).code, 0)
})

test('--read-only refuses writes; --host off loopback prints a URL with a generated token', async () => {
  const ro = await startDashboard(['--database-url', sqlite.url, '--read-only'])
  assert.match(ro.line, /\(read-only\)/)
  const refused = await api(ro.url, 'raise', { method: 'POST', body: { instanceId: 'wait-1', eventName: 'go' } })
  assert.deepEqual([refused.status, refused.body.error.code], [403, 'ERR_READ_ONLY'])
  assert.equal((await stop(ro)).code, 0)

  const open = await startDashboard(['--database-url', sqlite.url, '--host', '0.0.0.0'])
  const u = new URL(open.url)
  const token = u.searchParams.get('token')
  assert.ok(token && token.length >= 32, open.url)
  const base = `http://127.0.0.1:${u.port}/`
  assert.equal((await fetch(`${base}api/config`)).status, 401)
  assert.equal((await fetch(`${base}api/config`, { headers: { Authorization: `Bearer ${token}` } })).status, 200)
  assert.equal((await stop(open)).code, 0)
})

test('bad options are usage errors (exit 2); --help describes the command', async () => {
  for (const [args, message] of [
    [['--port', '70000'], /--port must be 0..65535/],
    [['--token', 'short'], /--token must be at least 16 characters/],
  ]) {
    await assert.rejects(startDashboard([...args, '--database-url', sqlite.url]), (err) => {
      assert.equal(err.code, 2)
      assert.match(err.stderr, message)
      return true
    })
  }
  const help = await new Promise((resolve) => {
    const c = spawn(process.execPath, [BIN, 'dashboard', '--help'])
    let out = ''
    c.stdout.on('data', (x) => (out += x))
    c.on('close', (code) => resolve({ code, out }))
  })
  assert.equal(help.code, 0)
  assert.match(help.out, /^Usage: duroxide-node dashboard/)
  assert.match(help.out, /--read-only/)
})
