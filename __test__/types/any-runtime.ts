// A `Runtime` written without type arguments is any runtime: one that
// registered typed definitions is accepted wherever a runtime is taken.
import { Runtime, SqliteProvider, defineActivity, defineOrchestration } from 'duroxide-node'
import type { ExportedHistory, Registered } from 'duroxide-node'
import { TestEnv, replayHistory, replayInstances } from 'duroxide-node/testing'

const greet = defineActivity('Greet', async (_ctx, name: string) => `hi ${name}`)
const hello = defineOrchestration('Hello', function* (ctx, name: string) {
  return yield* ctx.call(greet, name)
})

export async function anyRuntime(h: ExportedHistory): Promise<void> {
  const provider = await SqliteProvider.inMemory()
  let runtime: Runtime
  runtime = new Runtime(provider).register(greet, hello)
  const registered = new Runtime(provider).register(greet, hello)
  runtime = registered
  await replayHistory(new Runtime(provider).register(greet, hello), h)
  await replayInstances(provider, registered)

  const env = await TestEnv.create()
  const fromEnv: Runtime = env.runtime.register(greet, hello)
  await replayHistory(env.runtime, h)
  await replayHistory(fromEnv, h)
  function setUp(rt: Runtime): Runtime {
    return rt
  }
  setUp(registered)
  setUp(env.runtime)

  // What a runtime registered still types its client.
  const only: Registered<typeof registered> = hello
  // @ts-expect-error an activity definition is not an orchestration it registered
  const notAnOrchestration: Registered<typeof registered> = greet
  void runtime, only, notAnOrchestration
}
