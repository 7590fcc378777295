'use strict'
// The duroxide-node CLI's command line, run as a child process: help texts,
// usage errors (exit 2 with the usage text), a missing store that must not be
// created, and `replay` without its --module.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { runCli } = require('./fixtures/cli-run')

const COMMANDS = ['list', 'show', 'history', 'raise', 'cancel', 'delete', 'prune', 'stats', 'replay', 'set-aside', 'migrate', 'dashboard']

test('--help lists every command and exits 0; each command has its own --help', async () => {
  const r = await runCli(['--help'])
  assert.equal(r.code, 0, r.stderr)
  for (const c of COMMANDS) assert.match(r.stdout, new RegExp(`^  ${c}\\s+\\S`, 'm'), c)
  assert.match(r.stdout, /--database-url/)
  for (const c of COMMANDS) {
    const h = await runCli([c, '--help'])
    assert.equal(h.code, 0, `${c}: ${h.stderr}`)
    assert.match(h.stdout, new RegExp(`^Usage: duroxide-node ${c}\\b`), c)
    assert.match(h.stdout, /--json/, c)
  }
})

test('usage errors exit 2 with ERR_INVALID_ARGUMENT and the usage text on stderr', async () => {
  const cases = [
    [[], /no command given/, /Usage: duroxide-node <command>/],
    [['frobnicate'], /unknown command 'frobnicate'/, /Usage: duroxide-node <command>/],
    [['list', '--bogus', '--database-url', 'sqlite:/x.db'], /--bogus/, /Usage: duroxide-node list/],
    [['show', '--database-url', 'sqlite:/x.db'], /missing <instance-id>/, /Usage: duroxide-node show/],
    [['show', 'a', 'b', '--database-url', 'sqlite:/x.db'], /unexpected argument 'b'/, /Usage: duroxide-node show/],
    [['list'], /pass --database-url <url> or set DUROXIDE_DATABASE_URL/, /Usage: duroxide-node list/],
    [['list', '--limit', '-3', '--database-url', 'sqlite:/x.db'], /--limit/, /Usage: duroxide-node list/],
    [['history', 'a', '--execution', '0', '--database-url', 'sqlite:/x.db'], /--execution must be an integer >= 1, got '0'/, /Usage: duroxide-node history/],
    [['prune', '--completed-before', 'last tuesday', '--yes', '--database-url', 'sqlite:/x.db'], /ISO date .* got 'last tuesday'/, /Usage: duroxide-node prune/],
    [['prune', '--yes', '--database-url', 'sqlite:/x.db'], /missing --completed-before/, /Usage: duroxide-node prune/],
    [['prune', '--instances', '--keep-last', '2', '--completed-before', '1d', '--yes', '--database-url', 'sqlite:/x.db'], /--keep-last applies to executions/, /Usage: duroxide-node prune/],
    [['list', '--schema', 's', '--database-url', 'sqlite:/x.db'], /--schema applies to Postgres only/, /Usage: duroxide-node list/],
    [['list', '--database-url', 'mysql://root:secret@db/app'], /must start with sqlite: or postgres:\/\/, got a 'mysql:' URL/, /Usage: duroxide-node list/],
  ]
  for (const [args, message, usage] of cases) {
    const r = await runCli(args)
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
    assert.equal(r.stdout, '', args.join(' '))
    assert.match(r.stderr, /^duroxide-node: error \[ERR_INVALID_ARGUMENT\]: /, args.join(' '))
    assert.match(r.stderr, message, args.join(' '))
    assert.match(r.stderr, usage, args.join(' '))
  }
})

test('with --json a failure is one JSON document on stderr and nothing on stdout', async () => {
  const r = await runCli(['list', '--status', 'Sleeping', '--json', '--database-url', 'sqlite:/x.db'])
  assert.equal(r.code, 2)
  assert.equal(r.stdout, '')
  assert.equal(r.error.code, 'ERR_INVALID_ARGUMENT')
  assert.match(r.error.message, /--status must be one of Running, Completed, Failed, ContinuedAsNew, got 'Sleeping'/)
})

test('a SQLite file that does not exist is ERR_NOT_FOUND and is not created', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-absent-'))
  try {
    const file = path.join(dir, 'nothing.db')
    const r = await runCli(['stats', '--json'], { env: { DUROXIDE_DATABASE_URL: `sqlite:${file}` } })
    assert.equal(r.code, 1)
    assert.equal(r.error.code, 'ERR_NOT_FOUND')
    assert.ok(r.error.message.includes(file), r.error.message)
    assert.deepEqual(fs.readdirSync(dir), [])
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('replay without --module is a usage error (exit 2); the replays themselves are in cli.replay.test.js', async () => {
  const usage = await runCli(['replay', '--database-url', 'sqlite:/x.db'])
  assert.equal(usage.code, 2)
  assert.match(usage.stderr, /missing --module/)
  assert.match(usage.stderr, /Usage: duroxide-node replay/)
})
