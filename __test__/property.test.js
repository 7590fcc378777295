'use strict'
// Property-based tests (fast-check) of the client and orchestration-context
// APIs on both stores: arbitrary strings and JSON values as ids, names and
// payloads give either ERR_INVALID_ARGUMENT at the call, exactly when the
// identifier rule (modelled independently here) says so, or an exact round
// trip; and after every case an ordinary instance still completes.
//
// A fixed number of runs per property keeps each store well within CI's
// budget. A failure prints fast-check's seed and path; `FC_SEED=<seed>`
// replays that run.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fc = require('fast-check')
const { backends, scope, FAST, Client } = require('./helpers')
const { Runtime, MAX_IDENTIFIER_BYTES } = require('..')

const RUNS = Number(process.env.FC_RUNS || 50)
const SEED = process.env.FC_SEED === undefined ? Date.now() ^ (process.pid << 8) : Number(process.env.FC_SEED)

/** The identifier rule, written from its documentation rather than from the code. */
function isIdentifier(s) {
  return s.length > 0 && s.isWellFormed() && !/[\u0000-\u001f\u007f-\u009f]/.test(s) && Buffer.byteLength(s, 'utf8') <= MAX_IDENTIFIER_BYTES
}
/** Names are identifiers that are not blank (Unicode White_Space only). */
function isName(s) {
  return isIdentifier(s) && !/^\p{White_Space}*$/u.test(s)
}

/** One UTF-16 unit or code point, hostile ones often: controls, lone surrogates, astral, multibyte. */
const hostileUnit = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 0x9f }).filter((c) => c < 0x20 || c >= 0x7f).map((c) => String.fromCharCode(c)) },
  { weight: 1, arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)) },
  { weight: 1, arbitrary: fc.constantFrom(' ', '\u00a0', '\u2028', '\ufeff', '\u200b', '😀', '€', 'é', 'sub::') },
)
/** Short hostile strings, and long ones around the byte limit. */
const hostileString = fc.oneof(
  { weight: 8, arbitrary: fc.string({ unit: hostileUnit, maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom('a', 'é', '€', '😀'), minLength: 240, maxLength: 1000 }) },
)
/** Any value JSON carries, its strings hostile too. */
const jsonValue = fc.jsonValue({ maxDepth: 3, stringUnit: hostileUnit })

/** The value a JSON round trip gives (what the store must return). */
const viaJson = (v) => JSON.parse(JSON.stringify(v))

function register(rt) {
  rt.registerActivity('Echo', async (ctx, x) => x)
  rt.registerOrchestration('Echo', function* (ctx, x) {
    return x
  })
  rt.registerOrchestration('WaitFor', function* (ctx, name) {
    return yield ctx.waitForEvent(name)
  })
  // Each context call with an arbitrary argument, then the value through an activity.
  rt.registerOrchestration('Context', function* (ctx, { text, value }) {
    const tried = {}
    const attempt = (what, fn) => {
      try {
        fn()
        tried[what] = 'ok'
      } catch (err) {
        tried[what] = err.code
      }
    }
    attempt('activity', () => ctx.scheduleActivity(text, value))
    attempt('event', () => ctx.waitForEvent(text))
    attempt('queue', () => ctx.dequeueEvent(text))
    attempt('subName', () => ctx.scheduleSubOrchestration(text, value))
    attempt('subId', () => ctx.scheduleSubOrchestrationWithId('Echo', text, value))
    attempt('tag', () => ctx.scheduleActivity('Echo', value).withTag(text))
    attempt('session', () => ctx.scheduleActivityOnSession('Echo', value, text))
    attempt('key', () => ctx.setValue(text, 'v'))
    const echoed = yield ctx.scheduleActivity('Echo', value)
    const child = yield ctx.scheduleSubOrchestration('Echo', value)
    return { tried, echoed, child }
  })
}

/** What each context call must do with `text`: 'ok' or ERR_INVALID_ARGUMENT. */
function expectedTries(text) {
  const name = isName(text) ? 'ok' : 'ERR_INVALID_ARGUMENT'
  const subId = isIdentifier(text) && !text.startsWith('sub::') && !text.includes('::sub::') ? 'ok' : 'ERR_INVALID_ARGUMENT'
  return { activity: name, event: name, queue: name, subName: name, subId, tag: name, session: name, key: name }
}

/** Cases every run includes before the random ones: a refusal and an acceptance at least. */
const EXAMPLES = {
  string: ['plain', 'x\u0000y', '\u001b]0;title\u0007', 'lone \ud800', '€'.repeat(334), ' '],
  value: ['x\u0000y', { '\u0000': ['\udfff', '\u001b[2J', -1.5, null, true] }],
}

/**
 * Runs `property` over the examples and RUNS random cases with the shared
 * seed (fast-check's failure message carries the seed and the path). `tally`
 * counts refusals and acceptances, so a run that only ever hit one side fails.
 */
async function check(property, examples) {
  const tally = { refused: 0, accepted: 0 }
  await fc.assert(property(tally), { seed: SEED, numRuns: RUNS + examples.length, endOnFailure: true, examples })
  assert.ok(tally.refused > 0 && tally.accepted > 0, `refused ${tally.refused}, accepted ${tally.accepted}`)
}
const pairs = EXAMPLES.string.flatMap((s) => EXAMPLES.value.map((v) => [s, v]))
const singles = EXAMPLES.string.map((s) => [s])

for (const [kind, open] of backends) {
  describe(`properties on ${kind} (seed ${SEED})`, () => {
    let client
    let n = 0
    const t = scope()
    after(() => t.close())

    before(async () => {
      const store = await open(t)
      const rt = new Runtime(store.provider, { ...FAST, orchestrationConcurrency: 4, workerConcurrency: 4 })
      register(rt)
      await rt.start()
      t.after(() => rt.shutdown(1000))
      client = new Client(store.provider)
    })

    /** An ordinary instance still completes (the store took no harm). */
    async function ordinaryCompletes() {
      const id = `ordinary-${n++}`
      await client.startOrchestration(id, 'Echo', id)
      const s = await client.waitForOrchestration(id, 30000)
      assert.equal(s.status, 'Completed', `${id}: ${s.error}`)
      assert.equal(s.output, id)
    }

    /** `call()` rejects with ERR_INVALID_ARGUMENT when `valid` is false, and resolves otherwise; counted in `tally`. */
    async function refusedUnless(valid, call, what, tally) {
      let err
      try {
        await call()
      } catch (e) {
        err = e
      }
      tally[err ? 'refused' : 'accepted']++
      if (valid) assert.equal(err, undefined, `${what}: a valid value was refused: ${err && err.message}`)
      else assert.equal(err && err.code, 'ERR_INVALID_ARGUMENT', `${what}: expected a refusal at the call, got ${err ? err.code : 'acceptance'}`)
      return !err
    }

    test('client: an arbitrary instance id and input are refused at the call or round-trip exactly', async () => {
      await check((tally) => fc.asyncProperty(hostileString, jsonValue, async (raw, input) => {
        // Distinct per case; a generated sub:: id is reserved either way.
        const id = `${n++}:${raw}`
        const valid = isIdentifier(id) && !id.includes('::sub::')
        if (await refusedUnless(valid, () => client.startOrchestration(id, 'Echo', input), 'startOrchestration instanceId', tally)) {
          const s = await client.waitForOrchestration(id, 30000)
          assert.equal(s.status, 'Completed', s.error)
          assert.deepStrictEqual(s.output, viaJson(input))
          assert.equal((await client.getInstanceInfo(id)).instanceId, id)
        }
        await ordinaryCompletes()
      }), pairs)
    })

    test('client: an arbitrary orchestration name is refused at the call, or registered and run as given', async () => {
      // Starts go to a store of their own with no runtime yet: a name no
      // handler has would wait there, so each one taken is registered after.
      const names = await open(t)
      const namesClient = new Client(names.provider)
      const taken = new Map()
      await check((tally) => fc.asyncProperty(hostileString, async (name) => {
        const id = `name-${n++}`
        if (await refusedUnless(isName(name), () => namesClient.startOrchestration(id, name, null), 'startOrchestration name', tally)) {
          taken.set(id, name)
        }
        await ordinaryCompletes()
      }), singles)
      const rt = new Runtime(names.provider, FAST)
      for (const name of new Set(taken.values())) {
        rt.registerOrchestration(name, function* (ctx) {
          return ctx.orchestrationName
        })
      }
      await rt.start()
      t.after(() => rt.shutdown(1000))
      for (const [id, name] of taken) {
        const s = await namesClient.waitForOrchestration(id, 30000)
        assert.equal(s.output, name)
        assert.equal((await namesClient.getInstanceInfo(id)).orchestrationName, name)
      }
    })

    test('client: an arbitrary event name and data are refused at the call or delivered exactly', async () => {
      await check((tally) => fc.asyncProperty(hostileString, jsonValue, async (name, data) => {
        const id = `event-${n++}`
        if (!isName(name)) {
          await refusedUnless(false, () => client.raiseEvent(id, name, data), 'raiseEvent eventName', tally)
          await refusedUnless(false, () => client.enqueueEvent(id, name, data), 'enqueueEvent queueName', tally)
        } else {
          tally.accepted++
          await client.startOrchestration(id, 'WaitFor', name)
          await waitSubscribed(id)
          await client.raiseEvent(id, name, data)
          const s = await client.waitForOrchestration(id, 30000)
          assert.equal(s.status, 'Completed', s.error)
          assert.deepStrictEqual(s.output, viaJson(data))
        }
        await ordinaryCompletes()
      }), pairs)
    })

    test('context: every call refuses an arbitrary identifier at the call or takes it; values round-trip', async () => {
      await check((tally) => fc.asyncProperty(hostileString, jsonValue, async (text, value) => {
        const id = `context-${n++}`
        await client.startOrchestration(id, 'Context', { text, value })
        const s = await client.waitForOrchestration(id, 30000)
        assert.equal(s.status, 'Completed', s.error)
        const expected = expectedTries(text)
        assert.deepStrictEqual(s.output.tried, expected)
        for (const outcome of Object.values(expected)) tally[outcome === 'ok' ? 'accepted' : 'refused']++
        assert.deepStrictEqual(s.output.echoed, viaJson(value))
        assert.deepStrictEqual(s.output.child, viaJson(value))
        await ordinaryCompletes()
      }), pairs)
    })

    /** Until the instance waits for its event (one raised earlier may be dropped). */
    async function waitSubscribed(id) {
      for (let i = 0; i < 1500; i++) {
        const h = await client.readExecutionHistory(id, 1).catch(() => [])
        if (h.some((e) => e.kind === 'ExternalSubscribed')) return
        await new Promise((r) => setTimeout(r, 10))
      }
      throw new Error(`${id} never waited for its event`)
    }
  })
}
