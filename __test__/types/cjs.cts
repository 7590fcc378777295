// The CommonJS view: `require('duroxide-node')` in a .cts file.
import duroxide = require('duroxide-node')

export async function cjs(): Promise<duroxide.EffectiveOptions> {
  const provider: duroxide.Provider = await duroxide.SqliteProvider.inMemory()
  const rt = new duroxide.Runtime(provider, { workerConcurrency: 1 })
  rt.registerOrchestration('Hello', function* (ctx, name: string) {
    const greeting: string = yield ctx.scheduleActivity('Greet', name)
    return greeting
  })
  rt.registerActivity('Greet', async (_ctx, name: string) => `Hello, ${name}!`)
  const status = await new duroxide.Client(provider).getStatus('x')
  const s: duroxide.OrchestrationStatusName = status.status
  void s
  // @ts-expect-error CommonJS consumers see the same closed option set
  new duroxide.Runtime(provider, { workerConcurency: 1 })
  return rt.effectiveOptions()
}
