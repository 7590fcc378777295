'use strict'
// What the dashboard's pages read. The per-instance reads are the public
// Client's, the ones the CLI's `show` and `history` make; the list page and
// the overview's counts are the native client's read-only store queries
// (src/client/search.rs, src/client/overview.rs), which filter and count in
// the store instead of reading every instance.
//
// Stored values go to the page as text, cut to a size a page can hold; the
// page asks again with `full` to show one whole.
const native = require('../native')
const { Client } = require('../client')
const { nativeProviderOf } = require('../providers')
const { call, NotFoundError } = require('../errors')
const { mapLimited } = require('../cli/concurrent')
const { summary, failureMessage } = require('../cli/timeline')

/** Characters of a stored value the detail page gets before "show all". */
const DETAIL_CLIP = 4000
/** Characters of an event's data in a history page (10,000 events must stay light). */
const EVENT_CLIP = 240
/** Executions whose info the detail page reads (the newest ones). */
const MAX_EXECUTIONS = 100
/** Instances of a tree whose info is read; a larger tree is listed by id only. */
const MAX_TREE_INFOS = 200
/** Parents followed up to the root. */
const MAX_DEPTH = 64
/** The overview chart: buckets of 30 s over the last 15 minutes. */
const BUCKET_MS = 30_000
const BUCKETS = 30

/** `{ text, size, cut }`: `text` is at most `max` characters of `value`. */
function clipped(value, max) {
  if (value === undefined || value === null) return undefined
  const text = typeof value === 'string' ? value : JSON.stringify(value)
  return text.length > max ? { text: text.slice(0, max), size: text.length, cut: true } : { text, size: text.length, cut: false }
}

function compact(obj) {
  const out = {}
  for (const [k, v] of Object.entries(obj)) if (v !== undefined && v !== null) out[k] = v
  return out
}

/** The reads of one dashboard on one provider. */
class Reads {
  constructor(provider, runtime) {
    this.provider = provider
    this.runtime = runtime
    this.client = new Client(provider)
    this.search = new native.NativeClient(nativeProviderOf(provider, 'createDashboard()'))
  }

  async overview() {
    const [activity, queues, totals, setAside, fastPaths] = await Promise.all([
      call(() => this.search.storeActivity(BUCKET_MS, BUCKETS)),
      this.client.getQueueDepths(),
      this.client.getSystemMetrics(),
      this.client.listSetAside(),
      // Providers that report their fast store paths; nothing is shown for others.
      typeof this.provider.fastPaths === 'function' ? this.provider.fastPaths() : undefined,
    ])
    const out = {
      byStatus: { ...activity.byStatus },
      buckets: activity.buckets.map((b) => ({ ...b })),
      bucketMs: BUCKET_MS,
      queues: { ...queues, setAside: setAside.length },
      totals: { instances: totals.totalInstances, executions: totals.totalExecutions, events: totals.totalEvents },
    }
    if (fastPaths !== undefined) out.fastPaths = fastPaths
    if (this.runtime) {
      out.runtime = { health: this.runtime.health(), metrics: this.runtime.metricsSnapshot() }
    }
    return out
  }

  /** One page of the list; `search` is already shaped for the native query (api.js). */
  async instances(search) {
    const page = await call(() => this.search.searchInstances(search))
    return { instances: page.instances.map(compact), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) }
  }

  async instance(id, full) {
    const max = full ? Infinity : DETAIL_CLIP
    const info = await this.client.getInstanceInfo(id)
    const [status, executionIds, kv, stats] = await Promise.all([
      this.client.getStatus(id),
      this.client.listExecutions(id),
      this.client.getKvAllValues(id),
      this.client.getOrchestrationStats(id),
    ])
    const shown = executionIds.slice(-MAX_EXECUTIONS)
    const executions = await mapLimited(shown, 4, (n) => this.client.getExecutionInfo(id, n))
    const failure = status.failure
      ? compact({
        ...status.failure,
        errorStack: clipped(status.failure.errorStack, max),
        details: clipped(status.failure.details, max),
      })
      : undefined
    return {
      info,
      status: compact({
        status: status.status,
        output: clipped(status.output, max),
        error: clipped(status.error, max),
        errorCategory: status.errorCategory,
        failure,
        customStatus: clipped(status.customStatus, max),
        customStatusVersion: status.customStatusVersion,
      }),
      executions: executions.map((e) => compact({ ...e, output: clipped(e.output, max) })),
      executionCount: executionIds.length,
      kv: Object.entries(kv).map(([key, value]) => ({ key, value: clipped(value, max) })),
      stats,
    }
  }

  /**
   * The instance's whole tree: its root (followed up through the parents)
   * and every descendant, with links both ways. Read apart from the detail,
   * only while the page shows it: a wide tree is one read per instance.
   */
  async tree(id) {
    const info = await this.client.getInstanceInfo(id)
    let root = info
    const path = [info.instanceId]
    while (root.parentInstanceId !== undefined && path.length < MAX_DEPTH) {
      root = await this.client.getInstanceInfo(root.parentInstanceId)
      path.unshift(root.instanceId)
    }
    const tree = await this.client.getInstanceTree(root.instanceId)
    const ids = tree.allIds.slice(0, MAX_TREE_INFOS)
    const nodes = await mapLimited(ids, 4, async (id) => {
      try {
        const i = await this.client.getInstanceInfo(id)
        return compact({ instanceId: id, orchestrationName: i.orchestrationName, status: i.status, parentInstanceId: i.parentInstanceId })
      } catch (err) {
        // Deleted between the tree read and this one.
        if (err.code === 'ERR_NOT_FOUND') return { instanceId: id }
        throw err
      }
    })
    return { rootId: tree.rootId, size: tree.size, path, nodes, truncated: tree.allIds.length > ids.length }
  }

  /**
   * One execution's history (default: the current one), each event with the
   * one-line summary the CLI's `history` prints and the fields the timeline
   * needs, its data cut to EVENT_CLIP characters.
   */
  async history(id, executionId) {
    const executions = await this.client.listExecutions(id)
    if (executions.length === 0) await this.client.getInstanceInfo(id)
    const n = executionId ?? executions[executions.length - 1]
    const events = await this.client.readExecutionHistory(id, n)
    const started = events.find((e) => e.kind === 'OrchestrationStarted')
    let input
    if (started && started.data !== undefined) {
      try {
        input = clipped(JSON.stringify(JSON.parse(started.data).input ?? null), DETAIL_CLIP)
      } catch {
        input = undefined
      }
    }
    return compact({ instanceId: id, executionId: n, executions, input, events: events.map(eventRow) })
  }

  /** One event with all of its data. */
  async event(id, executionId, eventId) {
    const events = await this.client.readExecutionHistory(id, executionId)
    const e = events.find((x) => x.eventId === eventId)
    if (!e) {
      throw new NotFoundError(`execution ${executionId} of instance '${id}' has no event ${eventId}`)
    }
    return { ...e, data: e.data === undefined ? undefined : clipped(e.data, Infinity) }
  }
}

/** What the page needs of one event (see `history`). */
function eventRow(e) {
  let data
  try {
    data = e.data === undefined ? undefined : JSON.parse(e.data)
  } catch {
    data = e.data
  }
  const row = {
    eventId: e.eventId,
    kind: e.kind,
    timestampMs: e.timestampMs,
    summary: clipped(summary(e.kind, data), EVENT_CLIP).text,
  }
  if (e.sourceEventId !== undefined) row.sourceEventId = e.sourceEventId
  if (data && typeof data === 'object') {
    if (typeof data.name === 'string') row.name = data.name
    if (typeof data.instance === 'string') row.instance = data.instance
    if (typeof data.fireAtMs === 'number') row.fireAtMs = data.fireAtMs
  }
  if (e.kind.endsWith('Failed')) row.error = clipped(failureMessage(data) ?? '', EVENT_CLIP).text
  if (e.data !== undefined) row.data = clipped(e.data, EVENT_CLIP)
  return row
}

module.exports = { Reads, clipped }
