// The typed API: definitions tie every call site to what was defined, and
// misuse does not compile (each @ts-expect-error must really be an error).
import {
  AbortError,
  Client,
  Runtime,
  SqliteProvider,
  defineActivity,
  defineEvent,
  defineKey,
  defineOrchestration,
  defineStatus,
} from 'duroxide-node'
import type { Jsonified, OrchestrationHandle, Registered, TypedOrchestrationStatus } from 'duroxide-node'

/** Compile-time equality: `Expect<Equal<A, B>>` fails unless A and B are the same type. */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false
type Expect<T extends true> = T

// ---- Jsonified: the types say what survives JSON ---------------------------------
type Sample = {
  when: Date
  n: number
  maybe?: string
  undef: string | undefined
  gone: undefined
  fn: () => void
  list: (string | undefined)[]
  nested: { at: Date }
}
type _j1 = Expect<
  Equal<
    Jsonified<Sample>,
    { when: string; n: number; list: (string | null)[]; nested: { at: string }; maybe?: string; undef?: string }
  >
>
type _j2 = Expect<Equal<Jsonified<unknown>, unknown>>
type _j3 = Expect<Equal<Jsonified<[Date, number]>, [string, number]>>
type _j4 = Expect<Equal<Jsonified<string | Date>, string>>
type _j5 = Expect<Equal<Jsonified<void>, null>>
type _j6 = Expect<Equal<Jsonified<string | undefined>, string | null>>
type _j7 = Expect<Equal<Jsonified<{ f(): void; n: bigint | number }>, { n: number }>>

// ---- the order-checkout flow of issue 11 -------------------------------------------
interface Order {
  id: string
  amount: number
}
interface Receipt {
  orderId: string
  chargedAt: Date
}

const charge = defineActivity('Charge', async (_ctx, o: Order): Promise<Receipt> => ({ orderId: o.id, chargedAt: new Date() }))
const approved = defineEvent<{ by: string }>('approved')
const progress = defineStatus<{ step: 'charging' | 'waiting' | 'done' }>()
const cartKey = defineKey<{ items: number }>('cart')

const refund = defineOrchestration('Refund', { version: '2.0.0' }, function* (ctx, r: Jsonified<Receipt>) {
  const again = yield* ctx.call(charge, { id: r.orderId, amount: -1 })
  return { refunded: again.orderId }
})

const checkout = defineOrchestration('Checkout', { status: progress }, function* (ctx, o: Order) {
  ctx.setCustomStatus(progress, { step: 'charging' })
  ctx.setValue(cartKey, { items: 2 })
  const cart: { items: number } | null = ctx.getValue(cartKey)

  const receipt = yield* ctx.call(charge, o)
  type _r = Expect<Equal<typeof receipt, { orderId: string; chargedAt: string }>>

  const [a, t] = yield* ctx.join([ctx.call(charge, o), ctx.timer(1000)])
  type _a = Expect<Equal<typeof a, Jsonified<Receipt>>>
  type _t = Expect<Equal<typeof t, null>>

  const settled = yield* ctx.all([ctx.call(charge, o), ctx.timer(5)])
  const s0 = settled[0]
  const firstOk: Jsonified<Receipt> | undefined = s0 && 'ok' in s0 ? s0.ok : undefined

  const first = yield* ctx.race(ctx.waitFor(approved), ctx.timer(60_000))
  if (first.index === 0) {
    const by: string = first.value.by
    void by
  } else {
    const fired: null = first.value
    void fired
  }

  const child = yield* ctx.callOrchestration(refund, receipt)
  const refunded: string = child.refunded
  yield* ctx.call(charge, o, { retry: { maxAttempts: 3 }, sessionId: 's' })
  yield* ctx.callOrchestration(refund, receipt, { instanceId: `${ctx.instanceId}-refund` })
  yield* ctx.startDetached(refund, 'detached-1', receipt)

  const status = ctx.getCustomStatus(progress)
  // A plain `yield` still works and is `any`, as before.
  const plain: number = yield ctx.utcNow()

  if (o.amount > 1000) {
    yield* ctx.continueAsNew({ id: o.id, amount: 1000 })
    // @ts-expect-error continue-as-new takes the orchestration's own input type
    yield* ctx.continueAsNew({ id: 1 })
  }

  // @ts-expect-error wrong activity input
  yield* ctx.call(charge, { id: 1, amount: 2 })
  // @ts-expect-error unknown option of call
  yield* ctx.call(charge, o, { retries: 3 })
  // @ts-expect-error a child orchestration's input is checked too
  yield* ctx.callOrchestration(refund, o)
  // @ts-expect-error status values are checked
  ctx.setCustomStatus(progress, { step: 'shipping' })
  // @ts-expect-error KV values are checked
  ctx.setValue(cartKey, { items: 'two' })
  // @ts-expect-error an activity is not an orchestration
  yield* ctx.callOrchestration(charge, o)

  void cart, firstOk, refunded, status, plain
  return { receipt }
})

// An activity without a result yields null.
const notify = defineActivity('Notify', async (_ctx, _to: string): Promise<void> => {})
export const notifier = defineOrchestration('Notifier', function* (ctx, to: string) {
  const sent = yield* ctx.call(notify, to)
  type _s = Expect<Equal<typeof sent, null>>
  return sent
})

// An input type that does not survive JSON is refused at the definition.
// @ts-expect-error a Date input would arrive as a string
defineActivity('Dated', async (_ctx, at: Date) => at.getTime())
// @ts-expect-error orchestrations are generator functions
defineOrchestration('NotAGenerator', async (_ctx: unknown, o: Order) => o)

const notRegistered = defineOrchestration('Elsewhere', function* (_ctx, n: number) {
  return n
})

export async function typedClient(): Promise<void> {
  const provider = await SqliteProvider.inMemory()
  const rt = new Runtime(provider).register(charge, checkout, refund)
  await rt.start()

  const client = new Client<Registered<typeof rt>>(provider)
  const order: Order = { id: 'o-1', amount: 5 }
  const h = await client.start(checkout, 'order-1', order)
  const handle: OrchestrationHandle<typeof checkout> = h
  const out = await h.result({ signal: AbortSignal.timeout(60_000) })
  type _o = Expect<Equal<typeof out, { receipt: { orderId: string; chargedAt: string } }>>

  const s = await h.status()
  if (s.status === 'Completed') {
    const id: string = s.output.receipt.orderId
    void id
  }
  if (s.status === 'Running' && s.customStatus) {
    const step: 'charging' | 'waiting' | 'done' = s.customStatus.step
    void step
  }
  // @ts-expect-error output exists only on Completed
  void s.output
  const st: TypedOrchestrationStatus = s
  const changed = await h.waitForStatusChange(s.customStatusVersion, { signal: AbortSignal.timeout(1000), timeoutMs: 500 })
  const cart: { items: number } | null = await h.value(cartKey)
  const viaClient: { items: number } | null = await client.getValue('order-1', cartKey)

  await client.raise('order-1', approved, { by: 'ann' })
  await h.raise(approved, { by: 'bob' })
  // @ts-expect-error wrong event payload
  await client.raise('order-1', approved, { by: 42 })
  // @ts-expect-error the payload is required
  await client.raise('order-1', approved)
  // @ts-expect-error wrong orchestration input
  await client.start(checkout, 'order-2', { id: 'o-2' })
  // @ts-expect-error a definition the runtime did not register
  await client.start(notRegistered, 'n-1', 1)
  // @ts-expect-error a name is not a definition
  await client.start('Checkout', 'order-3', order)
  // @ts-expect-error an activity definition is not an orchestration
  await client.start(charge, 'order-4', order)
  // @ts-expect-error unknown wait option
  await h.result({ timeout: 5 })

  // Any definition works on an unparameterised client.
  const anyClient = new Client(provider)
  await anyClient.start(notRegistered, 'n-2', 2)

  for await (const info of client.list({ status: 'Completed', name: 'Checkout', pageSize: 50 })) {
    const name: string = info.orchestrationName
    void name
  }
  // @ts-expect-error unknown list filter
  client.list({ orchestration: 'Checkout' })

  // The string-named waits take an options object with a signal too.
  const controller = new AbortController()
  try {
    await client.waitForOrchestration('order-1', { signal: controller.signal })
    await client.waitForStatusChange('order-1', 0, { signal: controller.signal, pollIntervalMs: 10 })
    await client.waitForValue('order-1', 'k', { signal: controller.signal })
  } catch (err) {
    if (err instanceof AbortError) {
      const code: 'ERR_ABORTED' = err.code
      void code
    }
  }
  void handle, st, changed, cart, viaClient
  await rt.shutdown()
}
