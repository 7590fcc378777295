// Order checkout in TypeScript with typed definitions: the compiler checks
// every input, output, event payload and custom status against the
// definitions, and `yield*` gives each step's result its type.
//   npx tsc -p examples/typescript && node examples/typescript/dist/checkout.js [sqlite-file]
import * as os from 'node:os'
import * as path from 'node:path'
import {
  Client,
  Runtime,
  SqliteProvider,
  defineActivity,
  defineEvent,
  defineOrchestration,
  defineStatus,
} from 'duroxide-node'
import type { Jsonified, Registered } from 'duroxide-node'

interface Order {
  id: string
  amount: number
}
interface Receipt {
  orderId: string
  amount: number
  chargedAt: Date // arrives as a string: see Jsonified<Receipt>
}

// ---- definitions -------------------------------------------------------------
const charge = defineActivity('Charge', async (_ctx, o: Order): Promise<Receipt> => ({
  orderId: o.id,
  amount: o.amount,
  chargedAt: new Date(),
}))
const refundCharge = defineActivity('RefundCharge', async (_ctx, r: Jsonified<Receipt>) => `refund-${r.orderId}`)
const approved = defineEvent<{ by: string }>('approved')
const progress = defineStatus<{ step: 'charging' | 'awaiting-approval' | 'done' }>()

const refund = defineOrchestration('Refund', function* (ctx, receipt: Jsonified<Receipt>) {
  const refundId = yield* ctx.call(refundCharge, receipt)
  return { refundId }
})

const checkout = defineOrchestration('Checkout', { status: progress }, function* (ctx, order: Order) {
  ctx.setCustomStatus(progress, { step: 'charging' })
  const receipt = yield* ctx.call(charge, order, { retry: { maxAttempts: 3 } }) // Jsonified<Receipt>
  // Both at once: the values come back as a tuple [Jsonified<Receipt>, null].
  const [audit] = yield* ctx.join([ctx.call(charge, { id: `${order.id}-audit`, amount: 0 }), ctx.timer(10)])

  ctx.setCustomStatus(progress, { step: 'awaiting-approval' })
  const first = yield* ctx.race(ctx.waitFor(approved), ctx.timer(60_000))
  ctx.setCustomStatus(progress, { step: 'done' })
  if (first.index === 1) {
    // No approval within a minute: undo the charge.
    const { refundId } = yield* ctx.callOrchestration(refund, receipt)
    return { status: 'refunded' as const, refundId }
  }
  return { status: 'approved' as const, by: first.value.by, receipt, auditOf: audit.orderId }
})

// ---- the app ---------------------------------------------------------------------
async function main(): Promise<void> {
  const file = process.argv[2] ?? path.join(os.tmpdir(), `duroxide-checkout-${process.pid}.db`)
  const provider = await SqliteProvider.open(`sqlite:${file}`)
  const runtime = new Runtime(provider, { dispatcherPollIntervalMs: 10 }).register(charge, refundCharge, refund, checkout)
  await runtime.start()

  // This client starts only what `runtime` registered.
  const client = new Client<Registered<typeof runtime>>(provider)
  const order: Order = { id: `order-${process.pid}`, amount: 42 }
  const h = await client.start(checkout, order.id, order)

  // Approve now: the event is kept until the orchestration waits for it.
  await client.raise(order.id, approved, { by: 'ann' })

  const out = await h.result({ signal: AbortSignal.timeout(30_000) })
  if (out.status === 'approved') {
    console.log(`${order.id}: approved by ${out.by}, charged ${out.receipt.amount} at ${out.receipt.chargedAt}`)
  } else {
    console.log(`${order.id}: refunded (${out.refundId})`)
  }
  await runtime.shutdown(1000)
}

main().catch((err: unknown) => {
  console.error(err)
  process.exitCode = 1
})
