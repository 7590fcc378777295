'use strict'
// `show <id>`: one instance: its status with output or error, custom status,
// executions and tree of sub-orchestrations.
const { mapLimited } = require('../concurrent')
const { table, fields, when, clip, parseStored, escapeControls } = require('../output')

/** The status, with `(cancelled)` for a cancelled instance and the current execution's when they differ. */
function statusText(status, instance) {
  const shown = status.failure?.cancelled ? `${status.status} (cancelled)` : status.status
  return status.status === instance.status ? shown : `${shown} (current execution: ${instance.status})`
}

const command = {
  name: 'show',
  summary: 'show one instance: status, output or error, executions, tree',
  usage: `Usage: duroxide-node show <instance-id>

  In --json, status.output is the parsed output value; execution outputs stay
  the text the store holds (output, failure text or next input).`,
  options: {},
  positionals: [{ name: 'instance-id', required: true }],

  async run({ client, positionals }) {
    const id = positionals['instance-id']
    // getInstanceInfo first: it is the read that rejects ERR_NOT_FOUND.
    const instance = await client.getInstanceInfo(id)
    const [status, executionIds, tree] = await Promise.all([
      client.getStatus(id),
      client.listExecutions(id),
      client.getInstanceTree(id),
    ])
    if (status.output !== undefined) status.output = parseStored(status.output)
    const executions = await mapLimited(executionIds, 4, (n) => client.getExecutionInfo(id, n))
    return { instance, status, executions, tree }
  },

  render({ instance, status, executions, tree }) {
    let text = fields([
      ['instance', instance.instanceId],
      ['orchestration', `${instance.orchestrationName}@${instance.orchestrationVersion}`],
      ['status', statusText(status, instance)],
      ['output', status.output === undefined ? undefined : JSON.stringify(status.output)],
      ['cancelled', status.failure?.cancelled ? status.failure.reason : undefined],
      ['error', status.failure?.cancelled ? undefined : status.error],
      ['error category', status.errorCategory],
      ['custom status', status.customStatus === undefined ? undefined : `${status.customStatus} (version ${status.customStatusVersion})`],
      ['execution', instance.currentExecutionId],
      ['created', when(instance.createdAt)],
      ['updated', when(instance.updatedAt)],
      ['parent', instance.parentInstanceId],
    ])
    text += '\nExecutions\n'
    text += table([
      { key: 'executionId', title: 'EXEC' },
      { key: 'status', title: 'STATUS' },
      { key: 'events', title: 'EVENTS' },
      { key: 'started', title: 'STARTED' },
      { key: 'completed', title: 'COMPLETED' },
      { key: 'output', title: 'OUTPUT' },
    ], executions.map((e) => ({
      executionId: e.executionId,
      status: e.status,
      events: e.eventCount,
      started: when(e.startedAt),
      completed: when(e.completedAt),
      output: e.output === undefined ? undefined : clip(e.output, 60),
    })))
    text += `\nTree (${tree.size} instance${tree.size === 1 ? '' : 's'}, root ${escapeControls(tree.rootId)})\n`
    text += tree.allIds.map((i) => `  ${escapeControls(i)}${i === instance.instanceId ? '  (this)' : ''}`).join('\n') + '\n'
    return text
  },
}

module.exports = command
