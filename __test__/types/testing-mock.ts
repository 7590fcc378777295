// env.mockActivity(definition, fn): the mock is checked against the
// definition it replaces; the string form stays as loose as before.
import { defineActivity } from 'duroxide-node'
import { TestEnv } from 'duroxide-node/testing'

interface Mail {
  to: string
  subject: string
}
const send = defineActivity('Send', async (_ctx, mail: Mail): Promise<{ id: string }> => ({ id: mail.to }))

export async function typedMocks(): Promise<void> {
  const env = await TestEnv.create()
  env.runtime.register(send)
  env.mockActivity(send, async (_ctx, mail) => ({ id: `mock:${mail.to}` }))
  env.mockActivity(send, (_ctx, mail) => ({ id: mail.subject }))
  // @ts-expect-error the mock returns another shape than the activity
  env.mockActivity(send, async () => 'sent')
  // @ts-expect-error the mock reads a field the input does not have
  env.mockActivity(send, async (_ctx, mail) => ({ id: mail.from }))
  // @ts-expect-error the mock declares another input type
  env.mockActivity(send, async (_ctx, n: number) => ({ id: String(n) }))
  // The string form takes any function, as before.
  env.mockActivity('Send', async () => 'anything')
  await env.shutdown()
}
