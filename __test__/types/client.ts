// Client calls and the shapes they resolve with.
import { Client, OrchestrationFailedError, SqliteProvider, TimeoutError } from 'duroxide-node'
import type {
  DeleteResult,
  ExecutionInfo,
  HistoryEvent,
  InstanceInfo,
  InstanceTree,
  OrchestrationStats,
  OrchestrationStatus,
  PruneResult,
  QueueDepths,
  SystemMetrics,
} from 'duroxide-node'

export async function useClient(): Promise<void> {
  const client = new Client(await SqliteProvider.inMemory())

  await client.startOrchestration('i1', 'Checkout')
  await client.startOrchestration('i1', 'Checkout', { id: 'o1' })
  await client.startOrchestrationVersioned('i2', 'Checkout', { id: 'o1' }, '2.0.0')
  await client.startOrchestrationTyped<{ id: string }>('i3', 'Checkout', { id: 'o1' })
  await client.startOrchestrationVersionedTyped('i4', 'Checkout', 1, '2.0.0')

  const s: OrchestrationStatus = await client.getStatus('i1')
  if (s.status === 'Completed') {
    const raw: string = s.output
    void raw
  } else if (s.status === 'Failed') {
    const why: string = s.error
    const original: string | undefined = s.failure.errorName
    const activity: string | undefined = s.failure.activityName
    void why, original, activity, s.failure.details, s.failure.message
  } else {
    // @ts-expect-error output exists only on Completed
    const none: NonNullable<typeof s.output> = 'x'
    void none
  }
  const unnarrowed: string | undefined = s.output // still compiles without narrowing
  const unnarrowedFailure: string | undefined = s.failure?.errorName
  void unnarrowed, unnarrowedFailure
  const version: number = s.customStatusVersion
  const done = await client.waitForOrchestration('i1')
  await client.waitForOrchestration('i1', 5000)
  const parsed: { receipt: string } = done.output
  const changed: OrchestrationStatus<string> = await client.waitForStatusChange('i1', version)
  await client.waitForStatusChange('i1', version, 100, 5000)
  const out = await client.waitForOrchestrationTyped<{ receipt: string }>('i1', 5000)
  const receipt: string = out.receipt

  await client.raiseEvent('i1', 'Approved')
  await client.raiseEvent('i1', 'Approved', true)
  await client.raiseEventTyped<boolean>('i1', 'Approved', true)
  await client.enqueueEvent('i1', 'inbox', { text: 'hi' })
  await client.enqueueEventTyped('i1', 'inbox', 'hi')
  await client.cancelInstance('i1')
  await client.cancelInstance('i1', 'operator request')

  const value: string | null = await client.getValue('i1', 'k')
  const waited: string = await client.waitForValue('i1', 'k', 1000)
  const kv: Record<string, string> = await client.getKvAllValues('i1')

  const metrics: SystemMetrics = await client.getSystemMetrics()
  const depths: QueueDepths = await client.getQueueDepths()
  const stats: OrchestrationStats | null = await client.getOrchestrationStats('i1')
  const ids: string[] = await client.listAllInstances()
  const running: string[] = await client.listInstancesByStatus('Running')
  const info: InstanceInfo = await client.getInstanceInfo('i1')
  const exec: ExecutionInfo = await client.getExecutionInfo('i1', info.currentExecutionId)
  const execs: number[] = await client.listExecutions('i1')
  const history: HistoryEvent[] = await client.readExecutionHistory('i1', 1)
  for (const e of history) {
    if (e.kind === 'ActivityCompleted' && e.sourceEventId !== undefined && e.data !== undefined) {
      const payload: unknown = JSON.parse(e.data)
      void payload
    }
  }
  const tree: InstanceTree = await client.getInstanceTree('i1')
  const del: DeleteResult = await client.deleteInstance('i1')
  await client.deleteInstance('i1', true)
  await client.deleteInstanceBulk()
  await client.deleteInstanceBulk({ instanceIds: ['a', 'b'], completedBefore: Date.now(), limit: 10 })
  const pruned: PruneResult = await client.pruneExecutions('i1')
  await client.pruneExecutions('i1', { keepLast: 2, completedBefore: new Date() })
  await client.pruneExecutionsBulk()
  await client.pruneExecutionsBulk({ limit: 5 }, { keepLast: 1 })

  const counts: number[] = [
    metrics.totalInstances, metrics.totalExecutions, metrics.runningInstances, metrics.completedInstances,
    metrics.failedInstances, metrics.totalEvents, depths.orchestratorQueue, depths.workerQueue, depths.timerQueue,
    tree.size, del.instancesDeleted, del.executionsDeleted, del.eventsDeleted, del.queueMessagesDeleted,
    pruned.instancesProcessed, pruned.executionsDeleted, pruned.eventsDeleted, exec.eventCount, exec.startedAt,
    info.createdAt, info.updatedAt,
  ]
  if (stats) counts.push(stats.historyEventCount, stats.historySizeBytes, stats.queuePendingCount, stats.kvUserKeyCount, stats.kvTotalValueBytes)
  const root: string = tree.rootId
  const all: string[] = tree.allIds
  const parent: string | undefined = info.parentInstanceId
  const completedAt: number | undefined = exec.completedAt
  void parsed, changed, receipt, value, waited, kv, ids, running, execs, counts, root, all, parent, completedAt

  try {
    await client.waitForOrchestrationTyped('i1', 10)
  } catch (err) {
    if (err instanceof OrchestrationFailedError) {
      const code: 'ERR_ORCHESTRATION_FAILED' = err.code
      void code
    } else if (err instanceof TimeoutError) {
      const code: 'ERR_TIMEOUT' = err.code
      void code
    }
  }

  // @ts-expect-error status names are the stored execution statuses
  await client.listInstancesByStatus('Done')
  // @ts-expect-error the instance id comes first and is a string
  await client.startOrchestration(1, 'Checkout')
  // @ts-expect-error the version is required for the versioned start
  await client.startOrchestrationVersioned('i2', 'Checkout', 1)
  // @ts-expect-error the status field is a known name
  const bad: OrchestrationStatus['status'] = 'Pending'
  // @ts-expect-error unknown filter field
  await client.deleteInstanceBulk({ status: 'Completed' })
  // @ts-expect-error the force flag is a boolean
  await client.deleteInstance('i1', 'yes')
  // @ts-expect-error a provider is required
  new Client()
  void bad
}
