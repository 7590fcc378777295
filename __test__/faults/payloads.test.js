'use strict'
// Item 11: oversized and hostile payloads on both backends. 10 MiB activity
// input and output, lone UTF-16 surrogates, deeply nested JSON, and KV and
// custom-status values past the crate limits end in a coded error or a
// deterministic failure of the instance, never a crash, and the runtime keeps
// serving afterwards.
const test = require('node:test')
const assert = require('node:assert/strict')
const { MAX_KV_VALUE_BYTES, MAX_KV_KEYS, MAX_CUSTOM_STATUS_BYTES } = require('../..')
const { backends, startRuntime, Client } = require('../helpers')

const MIB10 = 10 * 1024 * 1024
const LONE = 'a\ud800b\udfffc'

function nested(depth) {
  let v = 0
  for (let i = 0; i < depth; i++) v = [v]
  return v
}
function depthOf(v) {
  let d = 0
  while (Array.isArray(v)) {
    v = v[0]
    d++
  }
  return d
}

function register(rt) {
  rt.registerActivity('Echo', async (ctx, x) => x)
  rt.registerActivity('Size', async (ctx, n) => 'y'.repeat(n))
  rt.registerActivity('Deep', async (ctx, n) => nested(n))
  rt.registerOrchestration('Big', function* (ctx, input) {
    const echoed = yield ctx.scheduleActivity('Echo', input)
    const made = yield ctx.scheduleActivity('Size', MIB10)
    return [echoed.length, echoed === input, made.length]
  })
  rt.registerOrchestration('Lone', function* (ctx, input) {
    // Raw text cannot hold a lone surrogate exactly: refused at the call.
    const refused = []
    try {
      ctx.setCustomStatus(input)
    } catch (err) {
      refused.push(err.code)
    }
    try {
      ctx.setValue('raw', input)
    } catch (err) {
      refused.push(err.code)
    }
    ctx.setValue('json', { s: input })
    const echoed = yield ctx.scheduleActivity('Echo', input)
    return { echoed, same: echoed === input, refused }
  })
  rt.registerOrchestration('DeepEcho', function* (ctx, input) {
    return depthOf(yield ctx.scheduleActivity('Echo', input))
  })
  rt.registerOrchestration('DeepResult', function* (ctx, depth) {
    try {
      return depthOf(yield ctx.scheduleActivity('Deep', depth))
    } catch (err) {
      return `failed: ${err.message}`
    }
  })
  rt.registerOrchestration('KvValue', function* (ctx, n) {
    ctx.setValue('k', 'v'.repeat(n))
    yield ctx.scheduleTimer(1)
    return 'stored'
  })
  rt.registerOrchestration('KvKeys', function* (ctx, n) {
    for (let i = 0; i < n; i++) ctx.setValue(`k${i}`, 'v')
    yield ctx.scheduleTimer(1)
    return 'stored'
  })
  rt.registerOrchestration('Status', function* (ctx, n) {
    ctx.setCustomStatus('s'.repeat(n))
    yield ctx.scheduleTimer(1)
    return 'stored'
  })
}

for (const [kind, open] of backends) {
  test(`hostile payloads on ${kind}: coded errors or deterministic failures, never a crash`, { timeout: 240000 }, async (t) => {
    const store = await open(t)
    const rt = await startRuntime(t, store.provider, register)
    const client = new Client(store.provider)
    const run = async (id, name, input) => {
      await client.startOrchestration(id, name, input)
      return client.waitForOrchestration(id, 120000)
    }

    // 10 MiB in and out of an activity.
    const big = await run('big', 'Big', 'x'.repeat(MIB10))
    assert.equal(big.status, 'Completed', big.error)
    assert.deepEqual(big.output, [MIB10, true, MIB10])

    // Lone surrogates survive JSON payloads exactly; raw text (custom status,
    // a string KV value) refuses them with a code instead of changing them.
    const lone = await run('lone', 'Lone', LONE)
    assert.equal(lone.status, 'Completed', lone.error)
    assert.deepEqual(lone.output, { echoed: LONE, same: true, refused: ['ERR_INVALID_ARGUMENT', 'ERR_INVALID_ARGUMENT'] })
    assert.equal(lone.customStatus, undefined)
    assert.equal(await client.getValue('lone', 'raw'), null)
    assert.deepEqual(JSON.parse(await client.getValue('lone', 'json')), { s: LONE })
    // An id is an identifier: a lone surrogate in it is refused at the call
    // (two such ids would otherwise become the same stored id).
    const oddId = `id-${LONE}`
    await assert.rejects(client.startOrchestration(oddId, 'DeepEcho', 1), (err) => {
      assert.equal(err.code, 'ERR_INVALID_ARGUMENT')
      assert.match(err.message, /instanceId/)
      return true
    })

    // Deeply nested JSON: as deep as JSON.stringify goes, it round-trips;
    // deeper, the caller gets ERR_INVALID_ARGUMENT or the activity fails with
    // a message the orchestration can catch.
    const deep = await run('deep', 'DeepEcho', nested(2000))
    assert.equal(deep.status, 'Completed', deep.error)
    assert.equal(deep.output, 2000)
    await assert.rejects(client.startOrchestration('too-deep', 'DeepEcho', nested(200000)), (err) => {
      assert.equal(err.code, 'ERR_INVALID_ARGUMENT')
      assert.match(err.message, /input cannot be encoded as JSON/)
      return true
    })
    assert.equal((await client.getStatus('too-deep')).status, 'NotFound')
    const deepResult = await run('deep-result', 'DeepResult', 200000)
    assert.equal(deepResult.status, 'Completed')
    assert.match(deepResult.output, /^failed: result of activity 'Deep' cannot be encoded as JSON/)

    // Past the crate limits: the instance fails with a message naming the limit.
    const limits = [
      ['kv-value', 'KvValue', MAX_KV_VALUE_BYTES + 1, /KV value for key 'k' \(\d+ bytes\) exceeds limit \(65536 bytes\)/],
      ['kv-keys', 'KvKeys', MAX_KV_KEYS + 1, /KV key count \(151\) exceeds limit \(150\)/],
      ['status', 'Status', MAX_CUSTOM_STATUS_BYTES + 1, /Custom status size \(\d+ bytes\) exceeds limit \(262144 bytes\)/],
    ]
    for (const [id, name, n, re] of limits) {
      const s = await run(id, name, n)
      assert.equal(s.status, 'Failed', `${id}: ${s.status}`)
      assert.match(s.error, re)
    }
    // At the limits exactly, everything is stored.
    for (const [id, name, n] of [['kv-value-max', 'KvValue', MAX_KV_VALUE_BYTES], ['kv-keys-max', 'KvKeys', MAX_KV_KEYS], ['status-max', 'Status', MAX_CUSTOM_STATUS_BYTES]]) {
      const s = await run(id, name, n)
      assert.equal(s.status, 'Completed', `${id}: ${s.error}`)
    }

    // Still serving.
    const after = await run('after', 'DeepEcho', nested(3))
    assert.equal(after.output, 3)
    // Before the store is removed (t.after hooks run in order of registration).
    await rt.shutdown(5000)
  })
}
