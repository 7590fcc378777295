// duroxide-node/testing: the replay check's calls and the shapes they resolve with.
import { Client, Runtime, SqliteProvider } from 'duroxide-node'
import type { ExportedHistory, HistoryEvent } from 'duroxide-node'
import { importHistory, replayHistory, replayInstances } from 'duroxide-node/testing'
import type { InstanceReplayResult, ReplayDivergence, ReplayResult } from 'duroxide-node/testing'

export async function useReplay(): Promise<void> {
  const provider = await SqliteProvider.inMemory()
  const runtime = new Runtime(provider)
  const client = new Client(provider)

  const exported: ExportedHistory = await client.exportHistory('i1')
  const older: ExportedHistory = await client.exportHistory('i1', 1)
  const entries: HistoryEvent[] = await client.readExecutionHistory('i1', 1)
  const a: ReplayResult = await replayHistory(runtime, exported)
  const b: ReplayResult = await replayHistory(runtime, entries, { instanceId: 'i1', executionId: 1 })
  const c: ReplayResult = await replayHistory(runtime, JSON.stringify(older))
  const imported: ExportedHistory = importHistory(JSON.stringify(exported))
  if (!a.ok && a.divergence) {
    const d: ReplayDivergence = a.divergence
    const index: number = d.index
    const eventId: number = d.eventId
    const recorded: HistoryEvent | undefined = d.recorded
    const scheduled: string | undefined = d.scheduled?.kind
    const message: string = d.message
    void index, eventId, recorded, scheduled, message
  }
  const all: InstanceReplayResult[] = await replayInstances(provider, runtime, { status: 'Running', limit: 10 })
  const first: string | undefined = all[0]?.instanceId
  // @ts-expect-error a status outside the four is refused
  await replayInstances(provider, runtime, { status: 'Done' })
  // @ts-expect-error a history is an export, its JSON text or readExecutionHistory entries
  await replayHistory(runtime, 42)
  // @ts-expect-error replayHistory takes the runtime first
  await replayHistory(exported)
  void b, c, imported, first
}
