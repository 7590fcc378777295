'use strict'
// RuntimeOptions from JavaScript: validation at construction, what
// effectiveOptions() reports, the legacy tag-filter form, and two options
// (orchestratorLockTimeoutMs, maxAttempts) whose effect is visible in outcomes.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { backends, FAST, uniqueName, Client } = require('./helpers')
const { openStore } = require('./fixtures/store')
const { Runtime, SqliteProvider, MAX_WORKER_TAGS } = require('..')

// The table of options.md: every crate option and its default.
const CRATE_DEFAULTS = {
  orchestrationConcurrency: 2,
  workerConcurrency: 2,
  dispatcherPollIntervalMs: 100,
  dispatcherLongPollTimeoutMs: 30000,
  orchestratorLockTimeoutMs: 5000,
  orchestratorLockRenewalBufferMs: 2000,
  workerLockTimeoutMs: 30000,
  workerLockRenewalBufferMs: 5000,
  maxAttempts: 10,
  activityCancellationGracePeriodMs: 10000,
  unregisteredBackoff: { baseDelayMs: 1000, maxDelayMs: 60000 },
  supportedReplayVersions: null,
  sessionLockTimeoutMs: 30000,
  sessionLockRenewalBufferMs: 5000,
  sessionIdleTimeoutMs: 300000,
  sessionCleanupIntervalMs: 300000,
  maxSessionsPerRuntime: 10,
  workerNodeId: null,
  workerTagFilter: 'defaultOnly',
  logFormat: 'pretty',
  logLevel: 'info',
  serviceName: 'duroxide',
  serviceVersion: null,
  gaugePollIntervalMs: 60000,
}

let memory
const provider = async () => (memory ??= await SqliteProvider.inMemory())

/** Asserts `new Runtime(p, options)` throws ERR_INVALID_OPTION with a message matching every pattern. */
async function rejects(options, ...patterns) {
  const p = await provider()
  let error
  try {
    new Runtime(p, options)
  } catch (err) {
    error = err
  }
  assert.ok(error, `expected ${JSON.stringify(options)} to be refused`)
  assert.equal(error.code, 'ERR_INVALID_OPTION', error.message)
  assert.equal(error.name, 'InvalidOptionError')
  for (const p of patterns) assert.match(error.message, p)
}

test('an unknown option is refused, naming it and suggesting the nearest valid name', async () => {
  await rejects({ orchestratorLockTimeout: 5000 }, /'orchestratorLockTimeout'/, /did you mean orchestratorLockTimeoutMs\?/)
  await rejects({ workerConcurency: 2 }, /'workerConcurency'/, /did you mean workerConcurrency\?/)
  await rejects({ unregisteredBackoff: { baseDelay: 5 } }, /unregisteredBackoff\.baseDelay'/, /did you mean unregisteredBackoff\.baseDelayMs\?/)
  await rejects({ completelyDifferent: 1 }, /'completelyDifferent'/, /valid names are .*maxAttempts/)
})

test('wrong types, negatives, zero concurrency and non-integers are refused, naming the field and value', async () => {
  await rejects({ workerConcurrency: '2' }, /workerConcurrency/, /'2'/)
  await rejects({ orchestrationConcurrency: -1 }, /orchestrationConcurrency/, /got -1/)
  await rejects({ orchestrationConcurrency: 0, workerConcurrency: 0 }, /both 0/)
  await rejects({ maxSessionsPerRuntime: 1.5 }, /maxSessionsPerRuntime/, /1\.5/)
  await rejects({ dispatcherPollIntervalMs: -1 }, /dispatcherPollIntervalMs/, /-1/)
  await rejects({ maxAttempts: 0 }, /maxAttempts/, /got 0/)
  await rejects({ workerLockTimeoutMs: true }, /workerLockTimeoutMs/, /true/)
  await rejects({ gaugePollIntervalMs: NaN }, /gaugePollIntervalMs/, /NaN/)
  await rejects({ dispatcherLongPollTimeoutMs: Infinity }, /dispatcherLongPollTimeoutMs/, /Infinity/)
  await rejects({ serviceName: 5 }, /serviceName/, /5/)
  await rejects({ unregisteredBackoff: 100 }, /unregisteredBackoff/, /100/)
  await rejects({ supportedReplayVersions: { min: '1.0', max: '2.0.0' } }, /supportedReplayVersions\.min/, /'1\.0'/)
  await rejects(42, /options must be an object/)
  await rejects([], /options must be an object/)
})

test('unknown enum strings and too many tags are refused', async () => {
  await rejects({ logFormat: 'xml' }, /logFormat/, /'xml'/)
  await rejects({ logLevel: 'loud' }, /logLevel/, /'loud'/)
  await rejects({ workerTagFilter: 'some' }, /workerTagFilter/, /'some'/)
  const tags = Array.from({ length: MAX_WORKER_TAGS + 1 }, (_, i) => `t${i}`)
  await rejects({ workerTagFilter: { tags } }, /workerTagFilter\.tags/, new RegExp(`1 to ${MAX_WORKER_TAGS}`))
  await rejects({ workerTagFilter: 'tags' }, /workerTagFilterTags/)
  await rejects({ workerTagFilter: { tags: [''] } }, /workerTagFilter\.tags\[0\]/)
})

test('leases the crate cannot honour are refused, naming both values; the ones it can are not', async () => {
  await rejects({ orchestratorLockTimeoutMs: 30000, orchestratorLockRenewalBufferMs: 30000 }, /orchestratorLockRenewalBufferMs must be smaller than orchestratorLockTimeoutMs/)
  await rejects({ orchestratorLockTimeoutMs: 500 }, /orchestratorLockTimeoutMs must be >= 2000 unless allowUnrenewableLocks/)
  // Under 15 s the buffer is ignored by duroxide, so neither of these is an error.
  assert.equal(new Runtime(await provider(), { workerLockTimeoutMs: 4000 }).effectiveOptions().lockRenewalIntervalsMs.worker, 2000)
  assert.equal(
    new Runtime(await provider(), { orchestratorLockTimeoutMs: 3000, orchestratorLockRenewalBufferMs: 3000 }).effectiveOptions().lockRenewalIntervalsMs.orchestrator,
    2000,
  )
})

test('effectiveOptions() lists every option with its default, before and after start', async () => {
  const rt = new Runtime(await provider())
  const before = rt.effectiveOptions()
  for (const [key, value] of Object.entries(CRATE_DEFAULTS)) assert.deepEqual(before[key], value, key)
  // What it reports is itself a valid options object.
  assert.deepEqual(new Runtime(await provider(), before).effectiveOptions(), before)
  await rt.start()
  try {
    assert.deepEqual(rt.effectiveOptions(), before)
  } finally {
    await rt.shutdown(0)
  }
  assert.deepEqual(rt.effectiveOptions(), before)
})

test('effectiveOptions() shows given values; undefined keeps the default', async () => {
  const given = {
    workerConcurrency: 7,
    orchestratorLockTimeoutMs: 9000,
    unregisteredBackoff: { baseDelayMs: 10 },
    supportedReplayVersions: { min: '1.0.0', max: '2.1.0' },
    workerNodeId: 'node-a',
    workerTagFilter: { defaultAnd: ['b', 'a'] },
    logFormat: 'json',
    logLevel: 'DEBUG',
    serviceVersion: '3.0.0',
    maxAttempts: undefined,
  }
  const eff = new Runtime(await provider(), given).effectiveOptions()
  assert.equal(eff.workerConcurrency, 7)
  assert.equal(eff.orchestratorLockTimeoutMs, 9000)
  assert.deepEqual(eff.unregisteredBackoff, { baseDelayMs: 10, maxDelayMs: 60000 })
  assert.deepEqual(eff.supportedReplayVersions, { min: '1.0.0', max: '2.1.0' })
  assert.equal(eff.workerNodeId, 'node-a')
  assert.deepEqual(eff.workerTagFilter, { defaultAnd: ['a', 'b'] })
  assert.equal(eff.logFormat, 'json')
  assert.equal(eff.logLevel, 'debug')
  assert.equal(eff.serviceVersion, '3.0.0')
  assert.equal(eff.maxAttempts, 10)
})

for (const [kind, open] of backends) {
  test(`the old flat workerTagFilter + workerTagFilterTags form routes tagged activities (${kind})`, async (t) => {
    const store = await openStore(open)
    const runtimes = []
    t.after(async () => {
      for (const rt of runtimes) await rt.shutdown(0)
      await store.release()
    })
    const make = async (name, options) => {
      const rt = new Runtime(store.provider, { ...FAST, ...options })
      rt.registerActivity('Who', async (ctx) => `${name}:${ctx.tag()}`)
      rt.registerOrchestration('Route', function* (ctx) {
        return yield ctx.all([
          ctx.scheduleActivity('Who').withTag('gpu'),
          ctx.scheduleActivity('Who').withTag('fpga'),
          ctx.scheduleActivity('Who'),
        ])
      })
      await rt.start()
      runtimes.push(rt)
      return rt
    }
    const gpu = await make('gpu', { workerTagFilter: 'tags', workerTagFilterTags: ['gpu'] })
    const mixed = await make('mixed', { workerTagFilter: 'defaultAnd', workerTagFilterTags: ['fpga'] })
    assert.deepEqual(gpu.effectiveOptions().workerTagFilter, { tags: ['gpu'] })
    assert.deepEqual(mixed.effectiveOptions().workerTagFilter, { defaultAnd: ['fpga'] })
    const client = new Client(store.provider)
    const id = uniqueName('route')
    await client.startOrchestration(id, 'Route')
    const s = await client.waitForOrchestration(id, 20000)
    assert.deepEqual(s.output, [{ ok: 'gpu:gpu' }, { ok: 'mixed:fpga' }, { ok: 'mixed:null' }])
  })
}

// Regression: `orchestrationConcurrency: 0` (a worker-only pod) and
// `workerConcurrency: 0` (an orchestrator-only one) were refused.
for (const [kind, open] of backends) {
  test(`a worker-only and an orchestrator-only runtime split the work between them (${kind})`, async (t) => {
    const store = await openStore(open)
    const runtimes = []
    t.after(async () => {
      for (const rt of runtimes) await rt.shutdown(0)
      await store.release()
    })
    const makeWith = async (pod, options) => {
      const rt = new Runtime(store.provider, { ...FAST, ...options })
      rt.registerActivity('Where', async () => pod)
      rt.registerOrchestration('Split', function* (ctx) {
        const a = yield ctx.scheduleActivity('Where')
        const b = yield ctx.scheduleActivity('Where').withTag('gpu')
        return { orchestratedBy: pod, untagged: a, gpu: b }
      })
      await rt.start()
      runtimes.push(rt)
      return rt
    }
    const orchestrator = await makeWith('orchestrator-pod', { workerConcurrency: 0 })
    const worker = await makeWith('worker-pod', { orchestrationConcurrency: 0, workerTagFilter: { defaultAnd: ['gpu'] } })
    assert.equal(orchestrator.effectiveOptions().workerConcurrency, 0)
    assert.equal(worker.effectiveOptions().orchestrationConcurrency, 0)
    const client = new Client(store.provider)
    const id = uniqueName('split')
    await client.startOrchestration(id, 'Split')
    const s = await client.waitForOrchestration(id, 20000)
    assert.deepEqual(s.output, { orchestratedBy: 'orchestrator-pod', untagged: 'worker-pod', gpu: 'worker-pod' })
  })
}

// ---- options that change outcomes ------------------------------------------------
// An orchestration turn that blocks the JS main thread for BLOCK_MS. With a
// lease shorter than that (and no renewal in time), the turn's lock expires,
// another dispatcher fetches the same message again (its attempt count grows),
// and the first turn's ack is refused. maxAttempts decides when such a message
// is poisoned (duroxide fails it once attempt_count > maxAttempts).
const BLOCK_MS = 1200
const block = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
const SHORT_LOCK = { orchestratorLockTimeoutMs: 300, allowUnrenewableLocks: true }

async function blockingRun(open, options, blockWhen, blockMs = BLOCK_MS) {
  const store = await openStore(open)
  let starts = 0
  const rt = new Runtime(store.provider, { ...FAST, ...options })
  rt.registerOrchestration('Blocking', function* () {
    starts += 1
    if (blockWhen(starts)) block(blockMs)
    return 'done'
  })
  await rt.start()
  try {
    const client = new Client(store.provider)
    const id = uniqueName('blocking')
    await client.startOrchestration(id, 'Blocking')
    const s = await client.waitForOrchestration(id, 30000)
    return { ...s, starts, metrics: rt.metricsSnapshot() }
  } finally {
    await rt.shutdown(0)
    await store.release()
  }
}

for (const [kind, open] of backends) {
  test(`with the default options the same blocking turn completes on the first attempt (${kind})`, async () => {
    const s = await blockingRun(open, {}, () => true)
    assert.deepEqual([s.status, s.output, s.starts], ['Completed', 'done', 1])
  })

  test(`a turn longer than a renewable lock keeps its lock by renewal and completes once (${kind})`, async () => {
    // 2000 ms leases renew every second while the turn blocks the JS thread.
    const s = await blockingRun(open, { orchestratorLockTimeoutMs: 2000, orchestratorLockRenewalBufferMs: 500 }, () => true, 2600)
    assert.deepEqual([s.status, s.output, s.starts], ['Completed', 'done', 1])
  })

  test(`a short orchestratorLockTimeoutMs makes the same turn retry; low maxAttempts poisons it (${kind})`, async () => {
    const s = await blockingRun(open, { ...SHORT_LOCK, maxAttempts: 2 }, () => true)
    assert.equal(s.status, 'Failed')
    assert.equal(s.errorCategory, 'poison')
    assert.match(s.error, /poison: orchestration .* exceeded 3 attempts \(max 2\)/)
    // Attempts 1 and 2 ran the turn; attempt 3 was poisoned before running it.
    assert.equal(s.starts, 2, `the message ran ${s.starts} time(s)`)
    assert.equal(s.metrics.orchPoison, 1)
  })

  test(`a short lock with the default maxAttempts retries the message until a turn fits the lease (${kind})`, async () => {
    const s = await blockingRun(open, SHORT_LOCK, (n) => n === 1)
    assert.deepEqual([s.status, s.output], ['Completed', 'done'])
    // At least the blocking turn and one that fit; other dispatchers may have
    // fetched the message again while the blocked thread could not run it.
    assert.ok(s.starts >= 2, `the message ran ${s.starts} time(s)`)
  })
}
