// Writing orchestrations and activities in TypeScript.
import { ActivityContext, OrchestrationContext, Runtime, SqliteProvider } from 'duroxide-node'
import type { ActivityTask, AllResult, RaceResult, Task, TaskResult } from 'duroxide-node'

interface Order {
  id: string
  amount: number
}

export async function register(): Promise<Runtime> {
  const rt = new Runtime(await SqliteProvider.inMemory())

  rt.registerActivity('Charge', async (ctx, order: Order) => {
    const fromCtx: ActivityContext = ctx
    const signal: AbortSignal = ctx.signal
    const session: string | null = ctx.sessionId
    const tag: string | null = ctx.tag()
    const id: string = ctx.instanceId
    const exec: number = ctx.executionId
    const names: string[] = [ctx.orchestrationName, ctx.orchestrationVersion, ctx.activityName, ctx.workerId]
    if (ctx.isCancelled()) throw new Error('cancelled')
    ctx.traceInfo(`charging ${order.amount}`)
    ctx.traceWarn('w')
    ctx.traceError('e')
    ctx.traceDebug('d')
    const status = await ctx.getClient().getStatus(ctx.instanceId)
    void fromCtx, signal, session, tag, id, exec, names, status
    return `receipt-${order.id}`
  })
  // Synchronous activities are fine too; the runtime awaits whatever comes back.
  rt.registerActivity('Double', (_ctx, n: number) => n * 2)

  // The shape TS users write: annotate the input, assign each `yield` where needed.
  rt.registerOrchestration('Checkout', function* (ctx, order: Order) {
    const receipt: string = yield ctx.scheduleActivity('Charge', order)
    yield ctx.scheduleTimer(1000)
    const approved: boolean = yield ctx.waitForEvent('Approved')
    const msg: { text: string } = yield ctx.dequeueEvent('inbox')
    const guid: string = yield ctx.newGuid()
    const now: number = yield ctx.utcNow()
    const child: number = yield ctx.scheduleSubOrchestration('Child', { n: 1 })
    yield ctx.scheduleSubOrchestrationWithId('Child', `${ctx.instanceId}-c`, 2)
    yield ctx.scheduleSubOrchestrationVersioned('Child', '2.0.0', 3)
    yield ctx.scheduleSubOrchestrationVersionedWithId('Child', '2.0.0', 'c-4', 4)
    yield ctx.startOrchestration('Audit', `audit-${guid}`, order)
    yield ctx.startOrchestrationVersioned('Audit', '1.0.0', `audit2-${guid}`, order)
    const other: string | null = yield ctx.getValueFromInstance('other', 'key')
    yield ctx.scheduleActivityOnSession('Charge', order, 'session-1')
    yield ctx.scheduleActivity('Charge', order, { sessionId: 'session-1' })
    yield ctx.scheduleActivityWithRetry('Charge', order, { maxAttempts: 3, timeoutMs: 5000, backoff: 'linear' })
    yield ctx.scheduleActivityWithRetry('Charge', order, { maxAttempts: 3, backoff: { kind: 'exponential', baseMs: 50, multiplier: 3, maxMs: 1000 } })
    yield ctx.scheduleActivityWithRetry('Charge', order, { maxAttempts: 2, totalTimeoutMs: 100, backoff: { kind: 'fixed', delayMs: 10 } })
    yield ctx.scheduleActivityWithRetryOnSession('Charge', order, { maxAttempts: 2 }, 'session-1')
    yield ctx.scheduleActivity('Render', order).withTag('gpu')
    yield ctx.scheduleActivity('NoInput')

    const results: AllResult[] = yield ctx.all([ctx.scheduleActivity('A', 1), ctx.scheduleTimer(5)])
    for (const r of results) {
      if ('ok' in r) ctx.traceInfo(String(r.ok))
      else ctx.traceWarn(r.err)
    }
    const winner: RaceResult = yield ctx.race(ctx.waitForEvent('Go'), ctx.scheduleTimer(60000))
    if (winner.index === 1) return { timedOut: true }
    yield ctx.race([ctx.scheduleTimer(1)])
    // all and race nest.
    yield ctx.all([ctx.race(ctx.scheduleTimer(1), ctx.waitForEvent('x')), ctx.all([])])

    ctx.setCustomStatus('working')
    const cs: string | null = ctx.getCustomStatus()
    ctx.resetCustomStatus()
    ctx.setValue('k', 'v')
    ctx.setValue('obj', { a: 1 })
    const v: string | null = ctx.getValue('k')
    ctx.clearValue('k')
    const all: Record<string, string> = ctx.getKvAllValues()
    const keys: string[] = ctx.getKvAllKeys()
    const len: number = ctx.getKvLength()
    const pruned: number = ctx.pruneKvValuesUpdatedBefore(now - 1000)
    ctx.clearAllValues()
    ctx.traceInfo('i')
    ctx.traceWarn('w')
    ctx.traceError('e')
    ctx.traceDebug('d')
    const meta: [string, number, string, string, boolean] = [ctx.instanceId, ctx.executionId, ctx.orchestrationName, ctx.orchestrationVersion, ctx.isReplaying]
    void approved, msg, child, other, cs, v, all, keys, len, pruned, meta
    return { receipt }
  })

  rt.registerOrchestrationVersioned('Loop', '2.0.0', function* (ctx, n: number) {
    if (n > 0) {
      yield ctx.continueAsNew(n - 1)
    }
    yield ctx.continueAsNewVersioned(n, '2.0.1')
    return n
  })
  // No yields at all is still a valid orchestration.
  rt.registerOrchestration('Const', function* () {
    return 42
  })
  // Registration chains.
  rt.registerActivityTyped('T', async () => 1)
    .registerOrchestrationTyped('T', function* () {})
    .registerOrchestrationVersionedTyped('T', '1.0.1', function* () {})

  // @ts-expect-error orchestrations are generator functions, not async functions
  rt.registerOrchestration('Async', async (ctx: OrchestrationContext) => ctx.instanceId)
  // @ts-expect-error only tasks may be yielded
  rt.registerOrchestration('YieldsNumber', function* () { yield 5 })
  // @ts-expect-error the activity function is required
  rt.registerActivity('Missing')
  // @ts-expect-error the version comes before the function
  rt.registerOrchestrationVersioned('V', function* () {})
  return rt
}

/** Typed variants keep result types where TypeScript can see them. */
export function* typed(ctx: OrchestrationContext): Generator<Task, string, any> {
  const charge = ctx.scheduleActivityTyped<Order, string>('Charge', { id: 'o1', amount: 5 })
  const tagged: Task<string> = charge.withTag('gpu')
  const receipt: TaskResult<typeof charge> = yield tagged
  const len: TaskResult<Task<number>> = receipt.length

  const retried: Task<number> = ctx.scheduleActivityWithRetryTyped<string, number>('Len', 'abc', { maxAttempts: 2 })
  ctx.scheduleActivityOnSessionTyped<string, number>('Len', 'abc', 's')
  ctx.scheduleActivityWithRetryOnSessionTyped<string, number>('Len', 'abc', { maxAttempts: 2 }, 's')
  const sub: Task<Order> = ctx.scheduleSubOrchestrationTyped<number, Order>('Child', 1)
  ctx.scheduleSubOrchestrationWithIdTyped<number, Order>('Child', 'c1', 1)
  const ev: Task<{ ok: boolean }> = ctx.waitForEventTyped<{ ok: boolean }>('Approved')
  const dq: Task<string> = ctx.dequeueEventTyped<string>('inbox')
  const started: Task<null> = ctx.startOrchestrationTyped('Audit', 'a1', { id: 'o1' })
  ctx.startOrchestrationVersionedTyped('Audit', '1.0.0', 'a2', { id: 'o1' })

  const both = ctx.allTyped([retried, sub] as const)
  const pair: TaskResult<typeof both> = yield both
  const first: AllResult<number> = pair[0]
  const second: AllResult<Order> = pair[1]
  const raced = ctx.raceTyped(ev, dq)
  const r: TaskResult<typeof raced> = yield raced
  const rv: { ok: boolean } | string = r.value
  const fromArray: Task<RaceResult<string>> = ctx.raceTyped([dq, dq])
  void len, first, second, rv, started, fromArray

  // @ts-expect-error withTag returns a plain task: one tag per activity
  charge.withTag('a').withTag('b')
  // @ts-expect-error retried activities cannot be tagged
  ctx.scheduleActivityWithRetry('A', 1, { maxAttempts: 2 }).withTag('gpu')
  // @ts-expect-error only activities can be tagged
  ctx.scheduleTimer(10).withTag('gpu')
  // @ts-expect-error the typed input is checked
  ctx.scheduleActivityTyped<Order, string>('Charge', { id: 'o1' })
  // @ts-expect-error a number is not a task
  ctx.all([1, 2])
  // @ts-expect-error race needs at least one task
  ctx.race()
  // @ts-expect-error maxAttempts is required
  ctx.scheduleActivityWithRetry('A', 1, { timeoutMs: 5 })
  // @ts-expect-error unknown backoff name
  ctx.scheduleActivityWithRetry('A', 1, { maxAttempts: 2, backoff: 'random' })
  // @ts-expect-error delays are numbers of ms
  ctx.scheduleTimer('1s')
  // @ts-expect-error the session id is required
  ctx.scheduleActivityOnSession('A', 1)
  // @ts-expect-error custom status is a string
  ctx.setCustomStatus({ step: 1 })
  // @ts-expect-error a hand-made object is not a task
  const fake: Task<string> = { descriptor: { kind: 'timer' } }
  // @ts-expect-error contexts are made by the runtime
  new OrchestrationContext()
  void fake
  return receipt
}

export function activityTasks(ctx: OrchestrationContext): ActivityTask<any>[] {
  return [ctx.scheduleActivity('A'), ctx.scheduleActivityOnSession('A', null, 's')]
}
