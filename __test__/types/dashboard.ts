// The web dashboard: createDashboard's options and the handler it returns.
import { createServer } from 'node:http'
import { Runtime, SqliteProvider, createDashboard } from 'duroxide-node'
import type { DashboardHandler, DashboardOptions } from 'duroxide-node'

export async function dashboard(): Promise<void> {
  const provider = await SqliteProvider.inMemory()
  const runtime = new Runtime(provider)
  const options: DashboardOptions = { basePath: '/duroxide', readOnly: true, token: 'a-long-enough-token', runtime, label: 'sqlite:app.db' }
  const handler: DashboardHandler = createDashboard(provider, options)
  createServer(handler)
  // Connect-style mounting passes `next`.
  handler(undefined as never, undefined as never, () => undefined)
  // @ts-expect-error readOnly is a boolean
  createDashboard(provider, { readOnly: 'yes' })
  // @ts-expect-error the first argument is a provider
  createDashboard({}, {})
}
