'use strict'
// An activity or orchestration name this runtime has no handler for: the
// first occurrence per name is an 'unregistered' runtime event naming the
// instance and the name, and health() is degraded saying so; the instance
// stays Running (a fleet may still have a worker with the handler).
const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const { backends, startRuntime, uniqueName, eventually, sleep } = require('./helpers')
const { Client } = require('..')

// Short backoff, so the same message is fetched again within the test.
const OPTIONS = { unregisteredBackoff: { baseDelayMs: 20, maxDelayMs: 50 }, maxAttempts: 1000 }

/** A runtime on a fresh store with `register`'s handlers, the 'unregistered' events it emits, and a client. */
async function watched(t, open, register) {
  const store = await open(t)
  const events = []
  const rt = await startRuntime(
    t,
    store.provider,
    (r) => {
      r.on('unregistered', (e) => events.push(e))
      register(r)
    },
    OPTIONS,
  )
  return { rt, events, client: new Client(store.provider) }
}

/** Waits of 300 ms on `id` time out, until one's message matches `pattern`. */
async function timesOutSaying(client, id, pattern) {
  let last = null
  try {
    await eventually(async () => {
      await assert.rejects(client.waitForOrchestration(id, 300), (err) => {
        assert.equal(err.code, 'ERR_TIMEOUT', err.message)
        last = err.message
        return true
      })
      return pattern.test(last)
    }, { what: `a timeout of ${id} matching ${pattern}` })
  } catch (err) {
    err.message += `; the last said: ${last}`
    throw err
  }
}

for (const [backend, open] of backends) {
  describe(`unregistered names (${backend})`, () => {
    test('an unregistered activity emits one event per name and degrades health; the instance stays Running', async (t) => {
      const { rt, events, client } = await watched(t, open, (r) => {
        r.registerOrchestration('CallsMissing', function* (ctx) {
          return yield ctx.scheduleActivity('ChargeCrad', null)
        })
      })
      assert.equal(rt.health().status, 'ok')
      const a = uniqueName('a')
      const b = uniqueName('b')
      await client.startOrchestration(a, 'CallsMissing', null)
      await eventually(() => events.length > 0, { what: 'the unregistered event' })
      await client.startOrchestration(b, 'CallsMissing', null)
      // Both messages keep being fetched and abandoned with the short backoff.
      await sleep(500)
      assert.equal(events.length, 1, 'one event per name')
      const e = events[0]
      assert.equal(e.type, 'unregistered')
      assert.equal(e.kind, 'activity')
      assert.equal(e.name, 'ChargeCrad')
      assert.equal(e.instanceId, a)
      assert.equal(e.queue, 'worker')
      assert.match(e.cause, /stays Running/)
      const health = rt.health()
      assert.equal(health.status, 'degraded')
      assert.ok(
        health.reasons.some((r) => r.includes("activity 'ChargeCrad'") && /instance '(a|b)_/.test(r)),
        JSON.stringify(health.reasons),
      )
      assert.equal((await client.getStatus(a)).status, 'Running')
    })

    test('a wait that runs out names the activity tried again and again, and the sub-orchestration nobody runs', async (t) => {
      const { client } = await watched(t, open, (r) => {
        r.registerOrchestration('CallsMissing', function* (ctx) {
          return yield ctx.scheduleActivity('ChargeCrad', null)
        })
        r.registerOrchestration('CallsMissingChild', function* (ctx) {
          return yield ctx.scheduleSubOrchestration('Refnud', null)
        })
      })
      const a = uniqueName('a')
      const b = uniqueName('b')
      await client.startOrchestration(a, 'CallsMissing', null)
      await client.startOrchestration(b, 'CallsMissingChild', null)
      // What the store shows depends on how far the runtime got (the first
      // turn, the first tries), so short waits are repeated until it is there.
      await timesOutSaying(client, a, new RegExp(`instance '${a}' did not finish within 300 ms: it waits for activity 'ChargeCrad', tried \\d+ times without a result.*no\\s+running worker registers`, 's'))
      await timesOutSaying(client, b, /it waits for sub-orchestration 'Refnud' \('[^']+'\), whose start waits in the queue: no runtime in this process registers 'Refnud'/)
    })

    // Regression: duroxide runs these as activities of its own ('__duroxide_syscall:...'),
    // which are in no registration yet always handled; they made every app degraded.
    test("ctx.newGuid(), ctx.utcNow() and getValueFromInstance are not unregistered names", async (t) => {
      const { rt, events, client } = await watched(t, open, (r) => {
        r.registerOrchestration('UsesSyscalls', function* (ctx) {
          const guid = yield ctx.newGuid()
          const now = yield ctx.utcNow()
          const missing = yield ctx.getValueFromInstance('nobody', 'k')
          return { guid: typeof guid, now: typeof now, missing }
        })
      })
      const id = uniqueName('s')
      await client.startOrchestration(id, 'UsesSyscalls', null)
      const s = await client.waitForOrchestration(id, 30000)
      assert.equal(s.status, 'Completed', s.error)
      assert.deepEqual(s.output, { guid: 'string', now: 'number', missing: null })
      assert.deepEqual(events, [])
      assert.deepEqual(rt.health(), { status: 'ok', reasons: [] })
    })

    test('an unregistered orchestration emits the event with kind orchestration', async (t) => {
      const { rt, events, client } = await watched(t, open, (r) => {
        r.registerOrchestration('Known', function* () {
          return 1
        })
      })
      const id = uniqueName('o')
      await client.startOrchestration(id, 'Unknwon', null)
      await eventually(() => events.length > 0, { what: 'the unregistered event' })
      assert.deepEqual(
        { type: events[0].type, kind: events[0].kind, name: events[0].name, instanceId: events[0].instanceId, queue: events[0].queue },
        { type: 'unregistered', kind: 'orchestration', name: 'Unknwon', instanceId: id, queue: 'orchestrator' },
      )
      assert.ok(rt.health().reasons.some((r) => r.includes(`instance '${id}'`) && r.includes("orchestration 'Unknwon'")))
      // A registered name raises nothing.
      const ok = uniqueName('k')
      await client.startOrchestration(ok, 'Known', null)
      assert.equal((await client.waitForOrchestration(ok, 30000)).status, 'Completed')
      assert.equal(events.length, 1)
    })
  })
}
