// The ESM view of duroxide-node/testing: named imports and the default export.
import testing, { importHistory, replayHistory, replayInstances } from 'duroxide-node/testing'
import type { ReplayResult } from 'duroxide-node/testing'

export function esmTesting(): void {
  const same: typeof replayHistory = testing.replayHistory
  const pending: Promise<ReplayResult> | undefined = undefined
  void same, pending, importHistory, replayInstances
}
