// The ESM view of the package: named imports, the default export, and what is NOT exported.
import api, { Client, MAX_KV_KEYS, Runtime, SqliteProvider } from 'duroxide-node'
import type { RuntimeOptions } from 'duroxide-node'
// @ts-expect-error the napi-generated native classes are internal
import { NativeRuntime } from 'duroxide-node'
// @ts-expect-error the task brand is internal
import { taskResult } from 'duroxide-node'

export async function esm(): Promise<void> {
  const provider = await SqliteProvider.inMemory()
  const options: RuntimeOptions = { workerConcurrency: MAX_KV_KEYS > 0 ? 1 : 2 }
  const rt: Runtime = new api.Runtime(provider, options)
  const client: Client = new api.Client(provider)
  const n: number = api.MAX_WORKER_TAGS
  void rt, client, n, NativeRuntime, taskResult, Runtime
}
