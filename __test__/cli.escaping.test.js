'use strict'
// Stored text never reaches an operator's terminal raw: an instance whose id,
// orchestration name, failure message, custom status, input and event data
// hold terminal escape sequences (`ESC ] 0 ; title BEL` retitles a terminal,
// `ESC [ 2 J` clears it) is listed, shown, raised on, cancelled, replayed and
// deleted through the CLI with not one raw control character in its text
// output, while `--json` gives back the exact stored strings.
//
// Such an id or name can no longer be created through the package (the
// identifier rule refuses it), but a store may hold one written by an older
// version or by another service; the test renames a finished instance with
// SQL to get there.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { backends, psql, Client } = require('./helpers')
const { openStore } = require('./fixtures/store')
const { Runtime } = require('..')
const { runCli } = require('./fixtures/cli-run')

const TITLE = '\u001b]0;pwned\u0007'
const CLEAR = '\u001b[2J'
const C1 = '\u009b31m' // the one-byte CSI of 8-bit terminals
const EVIL_ID = `${TITLE}evil${CLEAR}`
const EVIL_NAME = `Hostile${CLEAR}`
const MESSAGE = `${TITLE}card declined${CLEAR}${C1}\nforged line`

/** Control characters a terminal may act on, other than the line breaks of the output itself. */
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/

function register(rt) {
  rt.registerActivity('Charge', async (ctx, reason) => {
    throw new Error(reason)
  })
  rt.registerOrchestration('Hostile', function* (ctx, input) {
    ctx.setCustomStatus(`${TITLE}status${CLEAR}`)
    const reason = yield ctx.waitForEvent('go')
    return yield ctx.scheduleActivity('Charge', `${reason}${input.note}`)
  })
  rt.registerOrchestration('Waiter', function* (ctx) {
    return yield ctx.waitForEvent('go')
  })
}

/** Renames instance `from` to `to` and its orchestration to `name`, as a store written by another version could hold them. */
function rename(store, from, to, name) {
  const tables = ['executions', 'history', 'kv_store', 'kv_delta']
  if (store.schema) {
    const lit = (s) => `'${s.replace(/'/g, "''")}'`
    const q = (t) => `${store.schema}.${t}`
    psql([
      `UPDATE ${q('instances')} SET instance_id = ${lit(to)}, orchestration_name = ${lit(name)} WHERE instance_id = ${lit(from)}`,
      ...tables.map((t) => `UPDATE ${q(t)} SET instance_id = ${lit(to)} WHERE instance_id = ${lit(from)}`),
    ].join('; '))
  } else {
    // sqlite3 takes no parameters on the command line: the strings are built with char().
    const lit = (s) => `(${[...s].map((c) => `char(${c.codePointAt(0)})`).join(' || ')})`
    const sql = [
      `UPDATE instances SET instance_id = ${lit(to)}, orchestration_name = ${lit(name)} WHERE instance_id = ${lit(from)}`,
      ...tables.map((t) => `UPDATE ${t} SET instance_id = ${lit(to)} WHERE instance_id = ${lit(from)}`),
    ].join('; ')
    execFileSync('sqlite3', ['-cmd', '.timeout 5000', store.file, sql])
  }
}

for (const [kind, open] of backends) {
  describe(`cli output escaping on ${kind}`, () => {
    let store
    let rt
    let moduleFile
    let cli
    /** Every text (not --json) run, for the final count. */
    const texts = []
    const text = async (...args) => {
      const r = await cli(...args)
      texts.push({ args, ...r })
      return r
    }

    before(async () => {
      store = await openStore(open)
      rt = new Runtime(store.provider, { dispatcherPollIntervalMs: 20 })
      register(rt)
      await rt.start()
      const client = new Client(store.provider)
      await client.startOrchestration('hostile', 'Hostile', { note: `${C1}${CLEAR}` })
      await client.startOrchestration('waiter', 'Waiter', null)
      // The event data carries the message: raised once the instance waits.
      for (;;) {
        const s = await client.getStatus('hostile')
        if (s.customStatus !== undefined) break
        await new Promise((r) => setTimeout(r, 20))
      }
      await client.raiseEvent('hostile', 'go', MESSAGE)
      const s = await client.waitForOrchestration('hostile', 20000)
      assert.equal(s.status, 'Failed')
      assert.equal(s.error, `${MESSAGE}${C1}${CLEAR}`)
      rename(store, 'hostile', EVIL_ID, EVIL_NAME)
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-escape-'))
      moduleFile = path.join(dir, 'register.js')
      fs.writeFileSync(moduleFile, `module.exports.register = (rt) => rt.registerOrchestration('Waiter', function* (ctx) { return yield ctx.waitForEvent('go') })\n`)
      const env = store.schema ? { DUROXIDE_SCHEMA: store.schema } : {}
      cli = (...args) => runCli([...args, '--database-url', store.url], { env })
    })

    after(async () => {
      if (rt) await rt.shutdown(1000)
      if (store) await store.release()
    })

    test('list, show and history escape the id, name, failure, status, input and event data', async () => {
      const list = await text('list')
      assert.equal(list.code, 0, list.stderr)
      assert.ok(list.stdout.includes('\\u001b]0;pwned\\u0007evil\\u001b[2J'), list.stdout)
      assert.ok(list.stdout.includes('Hostile\\u001b[2J'), list.stdout)
      const show = await text('show', EVIL_ID)
      assert.equal(show.code, 0, show.stderr)
      assert.ok(show.stdout.includes('\\u001b]0;pwned\\u0007card declined\\u001b[2J\\u009b31m\\nforged line'), show.stdout)
      assert.ok(show.stdout.includes('\\u001b]0;pwned\\u0007status\\u001b[2J'), show.stdout)
      const history = await text('history', EVIL_ID)
      assert.equal(history.code, 0, history.stderr)
      assert.ok(history.stdout.includes('ExternalEvent'), history.stdout)
      assert.ok(history.stdout.includes('\\u001b]0;pwned'), history.stdout)
    })

    test('the commands that refuse it quote the id escaped on stderr', async () => {
      for (const args of [['raise', EVIL_ID, 'go', '1'], ['cancel', EVIL_ID], ['delete', EVIL_ID]]) {
        const r = await text(...args)
        assert.equal(r.code, args[0] === 'delete' ? 2 : 1, `${args[0]}: ${r.stderr}`)
        if (args[0] !== 'delete') assert.ok(r.stderr.includes("instance '\\u001b]0;pwned\\u0007evil\\u001b[2J' is Failed"), r.stderr)
      }
      // A control character in an argument is refused by the identifier rule.
      const raise = await text('raise', 'waiter', `go${CLEAR}`)
      assert.equal(raise.code, 1)
      assert.match(raise.stderr, /ERR_INVALID_ARGUMENT.*eventName has the control character U\+001B/)
      const ok = await text('raise', 'waiter', 'go', JSON.stringify(`${TITLE}${C1}`))
      assert.equal(ok.code, 0, ok.stderr)
      assert.ok(ok.stdout.includes('\\u009b'), ok.stdout)
    })

    test('stats and replay print escaped text too', async () => {
      const stats = await text('stats')
      assert.equal(stats.code, 0, stats.stderr)
      const replay = await text('replay', '--module', moduleFile)
      assert.ok(replay.stdout.includes('\\u001b]0;pwned\\u0007evil'), replay.stdout + replay.stderr)
    })

    test('--json keeps the exact stored strings, with no raw control character', async () => {
      const list = await cli('list', '--json')
      const row = list.json.instances.find((i) => i.orchestrationName === EVIL_NAME)
      assert.equal(row.instanceId, EVIL_ID)
      const show = await cli('show', EVIL_ID, '--json')
      assert.equal(show.json.status.error, `${MESSAGE}${C1}${CLEAR}`)
      assert.equal(show.json.status.customStatus, `${TITLE}status${CLEAR}`)
      const history = await cli('history', EVIL_ID, '--json')
      const event = history.json.events.find((e) => e.kind === 'ExternalEvent')
      assert.equal(event.data.data, MESSAGE)
      const failed = await cli('raise', EVIL_ID, 'go', '--json')
      assert.equal(failed.error.message, `instance '${EVIL_ID}' is Failed; only a Running instance receives events`)
      for (const r of [list, show, history, failed]) assert.doesNotMatch(r.stdout + r.stderr, RAW)
    })

    test('delete --yes removes it, and no text output held a raw control character', async () => {
      const del = await text('delete', EVIL_ID, '--yes')
      assert.equal(del.code, 0, del.stderr)
      assert.ok(del.stdout.includes('\\u001b]0;pwned\\u0007evil'), del.stdout)
      assert.ok(texts.length >= 9)
      for (const r of texts) {
        assert.doesNotMatch(r.stdout, RAW, `stdout of ${r.args[0]}`)
        assert.doesNotMatch(r.stderr, RAW, `stderr of ${r.args[0]}`)
      }
      const esc = texts.reduce((n, r) => n + (r.stdout + r.stderr).split('\u001b').length - 1, 0)
      assert.equal(esc, 0)
    })
  })
}
