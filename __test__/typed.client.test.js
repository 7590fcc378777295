'use strict'
// The typed client: methods taking definitions reject ERR_NOT_FOUND for an
// instance that does not exist (the string-named ones keep resolving), waits
// end with their AbortSignal (ERR_ABORTED) and let the process exit, and
// client.list() pages through instances with filters. On SQLite and Postgres.
const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { backends, clientWithRuntime, coded, settlesWithin, sqliteFile } = require('./helpers')
const { Client, AbortError, AlreadyExistsError, DuroxideError, defineActivity, defineOrchestration, defineEvent, defineKey } = require('..')

const echo = defineActivity('Echo', async (ctx, x) => x)
const go = defineEvent('go')
const inbox = defineEvent('inbox')
const key = defineKey('k')
const waiter = defineOrchestration('Waiter', function* (ctx, n) {
  ctx.setCustomStatus('waiting')
  const got = yield* ctx.waitFor(go)
  return { n, got }
})
const quick = defineOrchestration('Quick', function* (ctx, n) {
  return yield* ctx.call(echo, n)
})

for (const [backend, open] of backends) {
  describe(`typed client on ${backend}`, () => {
    test('typed methods reject ERR_NOT_FOUND for a missing instance; string-named ones do not', async (t) => {
      const client = await clientWithRuntime(t, open, (rt) => rt.register(echo, waiter, quick))
      await assert.rejects(client.raise('ghost', go, { ok: true }), coded('ERR_NOT_FOUND', 'ghost', 'go'))
      await assert.rejects(client.enqueue('ghost', inbox, 1), coded('ERR_NOT_FOUND', 'ghost', 'inbox'))
      const h = client.handle(waiter, 'ghost')
      await assert.rejects(h.status(), coded('ERR_NOT_FOUND', 'ghost'))
      await assert.rejects(h.raise(go, 1), coded('ERR_NOT_FOUND', 'ghost'))
      await assert.rejects(h.cancel('x'), coded('ERR_NOT_FOUND', 'ghost'))
      await assert.rejects(h.value(key), coded('ERR_NOT_FOUND', 'ghost'))
      await assert.rejects(h.waitForStatusChange(0, { timeoutMs: 100 }), coded('ERR_NOT_FOUND', 'ghost'))
      await assert.rejects(h.result({ timeoutMs: 100 }), coded('ERR_NOT_FOUND', 'ghost'))
      // The string-named API keeps its behaviour: raising on nothing resolves.
      await client.raiseEvent('ghost', 'go', 1)
      await client.enqueueEvent('ghost', 'inbox', 1)
    })

    test('start rejects ERR_ALREADY_EXISTS for an id in use; ifExists: useExisting returns its handle', async (t) => {
      const client = await clientWithRuntime(t, open, (rt) => rt.register(echo, waiter, quick))
      const elsewhere = defineOrchestration('RunsElsewhere', function* () {})
      // Stored (it ran) and queued (no runtime runs it): both exist.
      await (await client.start(quick, 'dup-stored', 1)).result({ timeoutMs: 30000 })
      await client.start(elsewhere, 'dup-queued')
      for (const [id, def] of [['dup-stored', quick], ['dup-queued', elsewhere]]) {
        await assert.rejects(client.start(def, id, 2), (err) => {
          assert.ok(err instanceof AlreadyExistsError)
          assert.equal(err.code, 'ERR_ALREADY_EXISTS')
          assert.match(err.message, new RegExp(`instance '${id}' already exists .*ifExists: 'useExisting'`))
          return true
        })
        const again = await client.start(def, id, 2, { ifExists: 'useExisting' })
        assert.equal(again.instanceId, id)
      }
      assert.equal(await client.handle(quick, 'dup-stored').result(), 1, 'the first input stands')
      // Another orchestration under that id is refused even with useExisting.
      await assert.rejects(client.start(waiter, 'dup-stored', 1, { ifExists: 'useExisting' }), coded('ERR_ALREADY_EXISTS', "runs orchestration 'Quick'", "not 'Waiter'"))
      await assert.rejects(client.start(quick, 'x', 1, { ifExists: 'replace' }), coded('ERR_INVALID_ARGUMENT', 'ifExists', "'useExisting'"))
      await assert.rejects(client.start(quick, 'x', 1, { ifExist: 'reject' }), coded('ERR_INVALID_OPTION', 'ifExist', 'expected ifExists'))
      // The string-named start keeps resolving (drop-in); its input is dropped.
      await client.startOrchestration('dup-stored', 'Quick', 3)
      assert.equal((await client.waitForOrchestrationTyped('dup-stored', 20000)), 1)
    })

    test('a started instance exists for the typed methods before its first turn (Pending)', async (t) => {
      const client = await clientWithRuntime(t, open, (rt) => rt.register(echo, waiter, quick))
      // No runtime registers it, so its start stays queued: the instance has no status yet.
      const elsewhere = defineOrchestration('RunsElsewhere', function* () {})
      const pending = await client.start(elsewhere, 'pending-1')
      assert.deepEqual(await pending.status(), { status: 'Pending', customStatusVersion: 0 })
      assert.equal((await client.getStatus('pending-1')).status, 'NotFound', 'the string-named read says NotFound')
      await client.raise('pending-1', go, { early: true })
      await pending.enqueue(inbox, 1)

      const h = await client.start(waiter, 'w-1', 7)
      const first = await h.status()
      assert.ok(['Pending', 'Running'].includes(first.status), `status right after start: ${first.status}`)
      let s = await h.status()
      while (s.customStatus !== 'waiting') s = await h.waitForStatusChange(s.customStatusVersion, { timeoutMs: 20000 })
      await client.raise('w-1', go, { by: 'ann' })
      assert.deepEqual(await h.result({ timeoutMs: 30000 }), { n: 7, got: { by: 'ann' } })
    })

    test('an AbortSignal ends each wait with ERR_ABORTED', async (t) => {
      const client = await clientWithRuntime(t, open, (rt) => rt.register(echo, waiter, quick))
      await client.start(waiter, 'w-abort', 1)
      const abortedWith = (reason) => (err) => {
        assert.ok(err instanceof AbortError && err instanceof DuroxideError, `an AbortError, got ${err}`)
        assert.equal(err.code, 'ERR_ABORTED')
        assert.equal(err.name, 'AbortError')
        assert.equal(err.cause, reason)
        return true
      }
      const waits = [
        (signal) => client.waitForOrchestration('w-abort', { timeoutMs: 60000, signal }),
        (signal) => client.waitForStatusChange('w-abort', 99, { timeoutMs: 60000, signal }),
        (signal) => client.waitForValue('w-abort', 'never', { timeoutMs: 60000, signal }),
        (signal) => client.waitForOrchestrationTyped('w-abort', { timeoutMs: 60000, signal }),
        (signal) => client.handle(waiter, 'w-abort').result({ timeoutMs: 60000, signal }),
        (signal) => client.handle(waiter, 'w-abort').waitForStatusChange(99, { timeoutMs: 60000, signal }),
      ]
      for (const wait of waits) {
        const controller = new AbortController()
        const reason = new Error('shutting down')
        const pending = wait(controller.signal)
        setTimeout(() => controller.abort(reason), 50)
        await settlesWithin(assert.rejects(pending, abortedWith(reason)), 10000, 'an aborted wait')
      }
      // An already-aborted signal rejects at once.
      const reason = new Error('already')
      await assert.rejects(client.waitForOrchestration('w-abort', { signal: AbortSignal.abort(reason) }), abortedWith(reason))
      // The options form without a signal and the positional form still time out as before.
      await assert.rejects(client.waitForOrchestration('w-abort', { timeoutMs: 50 }), coded('ERR_TIMEOUT', 'w-abort'))
      await assert.rejects(client.waitForOrchestration('w-abort', 50), coded('ERR_TIMEOUT', 'w-abort'))
      await assert.rejects(client.waitForStatusChange('w-abort', 99, 10, 50), coded('ERR_TIMEOUT', 'w-abort'))
      await assert.rejects(client.waitForStatusChange('w-abort', 99, { pollIntervalMs: 10, timeoutMs: 50 }), coded('ERR_TIMEOUT', 'w-abort'))
      // With a signal that never fires, the deadline still applies, with the native wait's errors.
      const never = new AbortController().signal
      await assert.rejects(client.waitForOrchestration('w-abort', { timeoutMs: 50, signal: never }), coded('ERR_TIMEOUT', 'w-abort', 'within 50 ms'))
      await assert.rejects(client.waitForOrchestration('nobody', { timeoutMs: 50, signal: never }), coded('ERR_NOT_FOUND', 'nobody', 'not found'))
      await assert.rejects(client.waitForValue('w-abort', 'never', { timeoutMs: 50, signal: never }), coded('ERR_TIMEOUT', 'never'))
      await assert.rejects(client.waitForOrchestration('w-abort', { signal: 'nope' }), coded('ERR_INVALID_ARGUMENT', 'signal'))
      await assert.rejects(client.waitForOrchestration('w-abort', { timeout: 5 }), coded('ERR_INVALID_ARGUMENT', 'timeout'))
      // A wait with a signal still resolves when the instance completes.
      const done = await client.start(quick, 'q-1', 5)
      assert.equal(await done.result({ signal: never, timeoutMs: 30000 }), 5)
      const s = await client.waitForOrchestration('q-1', { signal: never })
      assert.equal(s.status, 'Completed')
      assert.equal(s.output, 5)
    })

    test('client.list pages through instances, filtered by status and name', async (t) => {
      const client = await clientWithRuntime(t, open, (rt) => rt.register(echo, waiter, quick))
      for (let i = 0; i < 5; i++) await (await client.start(quick, `list-q-${i}`, i)).result({ timeoutMs: 30000 })
      await client.start(waiter, 'list-w-0', 0)
      await client.handle(waiter, 'list-w-0').waitForStatusChange(0, { timeoutMs: 20000 })

      const collect = async (filter) => {
        const out = []
        for await (const info of client.list(filter)) out.push(info)
        return out
      }
      const all = await collect({ pageSize: 2 })
      assert.deepEqual(all.map((i) => i.instanceId).sort(), ['list-q-0', 'list-q-1', 'list-q-2', 'list-q-3', 'list-q-4', 'list-w-0'])
      const quicks = await collect({ name: 'Quick', pageSize: 4 })
      assert.equal(quicks.length, 5)
      assert.ok(quicks.every((i) => i.orchestrationName === 'Quick' && i.status === 'Completed'))
      const running = await collect({ status: 'Running' })
      assert.deepEqual(running.map((i) => i.instanceId), ['list-w-0'])
      assert.deepEqual(await collect({ status: 'Running', name: 'Quick' }), [])

      // Paging: the first page is read before the loop asks for more.
      const it = client.list({ pageSize: 1 })
      const first = await it.next()
      assert.equal(first.done, false)
      await it.return()

      assert.throws(() => client.list({ orchestration: 'Quick' }), coded('ERR_INVALID_OPTION', 'orchestration'))
      assert.throws(() => client.list({ pageSize: 0 }), coded('ERR_INVALID_OPTION', 'pageSize'))
      await assert.rejects(collect({ status: 'Sleeping' }), coded('ERR_INVALID_ARGUMENT', 'Sleeping'))
    })

    test('start refuses what is not an orchestration definition', async (t) => {
      const client = await clientWithRuntime(t, open, (rt) => rt.register(echo, quick))
      await assert.rejects(client.start('Quick', 'x', 1), coded('ERR_INVALID_ARGUMENT', 'defineOrchestration', 'string-named'))
      await assert.rejects(client.start(echo, 'x', 1), coded('ERR_INVALID_ARGUMENT', 'defineOrchestration'))
      await assert.rejects(client.raise('x', 'go', 1), coded('ERR_INVALID_ARGUMENT', 'defineEvent'))
      assert.throws(() => client.handle(quick, 5), coded('ERR_INVALID_ARGUMENT', 'instanceId'))
    })
  })
}

describe('abort and process exit', () => {
  for (const wait of ['orchestration', 'statusChange', 'value']) {
    test(`an aborted ${wait} wait lets the process exit at once (no native wait left behind)`, async (t) => {
      const store = await sqliteFile(t)
      const r = spawnSync(process.execPath, [path.join(__dirname, 'fixtures', 'abort-wait-child.js'), store.file, wait], {
        encoding: 'utf8',
        // The wait's own timeout is 60 s: a child still running at 30 s kept it.
        timeout: 30000,
      })
      assert.equal(r.signal, null, `the child was killed at the 30 s guard; stderr: ${r.stderr}`)
      assert.equal(r.status, 0, r.stderr)
      assert.match(r.stderr, /rejected ERR_ABORTED AbortError: .*app shutting down/)
    })
  }
})
