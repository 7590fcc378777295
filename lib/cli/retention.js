'use strict'
// Execution pruning for `prune`, per instance. The store's own time filter
// cannot be used: duroxide-pg records no completion time for an execution
// that continued as new, so `pruneExecutionsBulk({}, { completedBefore })`
// never selects one on Postgres, and those are what piles up (one per turn
// of an eternal orchestration). Here such an execution counts as ended when
// the next one started; the old executions found that way are removed with
// `pruneExecutions(id, { keepLast })`, the current one always kept.

/** How many of the instance's oldest executions ended before `cutoffMs`. */
async function countEndedBefore(client, id, executions, cutoffMs) {
  const infos = new Map()
  const info = async (n) => {
    if (!infos.has(n)) infos.set(n, await client.getExecutionInfo(id, n))
    return infos.get(n)
  }
  let old = 0
  // The last execution is the current one: never pruned, never counted.
  for (let i = 0; i < executions.length - 1; i++) {
    const own = await info(executions[i])
    const ended = own.completedAt ?? (await info(executions[i + 1])).startedAt
    if (!(ended > 0 && ended < cutoffMs)) break
    old++
  }
  return old
}

/**
 * Prunes executions that ended before `completedBefore` from up to `limit`
 * instances, keeping at least `keepLast` per instance. If an instance
 * continues as new meanwhile, keepLast still keeps the newest ones, so at
 * worst one more finished execution goes.
 */
async function pruneOldExecutions(client, { completedBefore, keepLast = 1, limit = 1000 }) {
  const ids = (await client.listAllInstances()).slice(0, limit)
  const total = { instancesProcessed: 0, executionsDeleted: 0, eventsDeleted: 0 }
  for (const id of ids) {
    const executions = await client.listExecutions(id)
    if (executions.length <= 1) continue
    const old = await countEndedBefore(client, id, executions, completedBefore)
    const keep = Math.max(executions.length - old, keepLast)
    if (keep >= executions.length) continue
    const r = await client.pruneExecutions(id, { keepLast: keep })
    total.instancesProcessed += r.instancesProcessed
    total.executionsDeleted += r.executionsDeleted
    total.eventsDeleted += r.eventsDeleted
  }
  return total
}

module.exports = { pruneOldExecutions }
