// TestEnv from `duroxide-node/testing` (ESM types).
import { TestEnv } from 'duroxide-node/testing'
import type { TestDuration, TestEnvOptions } from 'duroxide-node/testing'
import type { Runtime, Client } from 'duroxide-node'

export async function testEnv(): Promise<Date | null> {
  const options: TestEnvOptions = { idleTimeoutMs: 1000, runtimeOptions: { workerConcurrency: 1 } }
  const env = await TestEnv.create(options)
  const rt: Runtime = env.runtime
  const client: Client = env.client
  void client
  rt.registerOrchestration('Week', function* (ctx) {
    yield ctx.scheduleTimer(7 * 24 * 3600_000)
    return 'done'
  })
  env.mockActivity('Send', async (_ctx, to: string) => `sent to ${to}`).mockActivity('Other', async () => 1)
  await env.start()
  const by: TestDuration = '1d'
  const now: Date = await env.advance(by)
  await env.advance(500)
  void now
  // @ts-expect-error a duration is a number or a string
  await env.advance({ days: 1 })
  // @ts-expect-error unknown option
  await TestEnv.create({ speed: 2 })
  const n: number = env.pendingTimers()
  void n
  await env.waitIdle()
  const jumped = await env.skipTime()
  await env.shutdown()
  return jumped ?? env.now()
}
