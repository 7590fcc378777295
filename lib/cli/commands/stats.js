'use strict'
// `stats`: what the store can tell about the whole fleet: instance counts by
// status, totals and queue depths. The guard's health (poison messages,
// stuck locks) lives in each runtime and is not reachable from a client, so
// it is not shown here (docs/cli.md).
const { INSTANCE_STATUSES } = require('../statuses')
const { fields } = require('../output')

const command = {
  name: 'stats',
  summary: 'instance counts by status, totals and queue depths',
  usage: `Usage: duroxide-node stats

  Queue depths count messages waiting to be fetched (locked ones excluded).
  On Postgres due timers wait in the orchestrator queue (timerQueue is 0).`,
  options: {},
  positionals: [],

  async run({ client, backend }) {
    const [metrics, queues, setAside, ...lists] = await Promise.all([
      client.getSystemMetrics(),
      client.getQueueDepths(),
      client.listSetAside(),
      ...INSTANCE_STATUSES.map((s) => client.listInstancesByStatus(s)),
    ])
    const byStatus = Object.fromEntries(INSTANCE_STATUSES.map((s, i) => [s, lists[i].length]))
    return {
      backend,
      instances: { total: metrics.totalInstances, byStatus },
      totalExecutions: metrics.totalExecutions,
      totalEvents: metrics.totalEvents,
      queues,
      setAside: setAside.length,
    }
  },

  render(r) {
    return fields([
      ['backend', r.backend],
      ['instances', r.instances.total],
      ...INSTANCE_STATUSES.map((s) => [`  ${s}`, r.instances.byStatus[s]]),
      ['executions', r.totalExecutions],
      ['events', r.totalEvents],
      ['orchestrator queue', r.queues.orchestratorQueue],
      ['worker queue', r.queues.workerQueue],
      ['timer queue', r.queues.timerQueue],
      ['set aside', r.setAside],
    ])
  },
}

module.exports = command
