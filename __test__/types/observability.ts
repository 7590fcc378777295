// Observability: metricsText, initTracing's sink, ctx.log and trace context.
import { Client, Runtime, SqliteProvider, defineOrchestration, initTracing } from 'duroxide-node'
import type { LogRecord, LogSinkStats, StartOptions, TraceContext } from 'duroxide-node'

export async function observability(): Promise<string> {
  const seen: LogRecord[] = []
  const stats: LogSinkStats = initTracing({ sink: (r) => seen.push(r), logLevel: 'debug' })
  const dropped: number = stats.droppedRecords
  void dropped
  const nothing: void = initTracing({ logFile: '/tmp/x.log' })
  void nothing
  // @ts-expect-error a sink takes one record
  initTracing({ sink: (a: LogRecord, b: LogRecord) => void [a, b] })

  const provider = await SqliteProvider.inMemory()
  const rt = new Runtime(provider)
  rt.registerOrchestration('O', function* (ctx) {
    ctx.log.info('started', { orderId: 1 })
    const t: TraceContext | null = ctx.traceContext
    // @ts-expect-error fields are an object
    ctx.log.warn('bad', 'fields')
    return t?.traceparent ?? null
  })
  rt.registerActivity('A', async (ctx) => {
    ctx.log.error('failed', { err: new Error('x') })
    return ctx.traceContext?.tracestate ?? null
  })
  const options: StartOptions = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }
  await new Client(provider).startOrchestration('i', 'O', null, options)
  // @ts-expect-error unknown start option
  await new Client(provider).startOrchestration('i', 'O', null, { traceParent: 'x' })
  const level: LogRecord['level'] = seen[0]?.level ?? 'info'
  void level
  return rt.metricsText()
}

const checkout = defineOrchestration('Checkout', function* (_ctx, order: { id: string }) {
  return order.id
})
export async function typedStart(client: Client): Promise<void> {
  await client.start(checkout, 'c-1', { id: 'o' }, { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' })
  // @ts-expect-error unknown start option
  await client.start(checkout, 'c-1', { id: 'o' }, { traceParent: 'x' })
}
