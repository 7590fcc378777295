'use strict'
// `history <id> [--execution N]`: the events of one execution (the current
// one unless --execution), as a timeline or, in --json, with `data` parsed.
const { NotFoundError } = require('../../..')
const { intOption } = require('../args')
const { table, parseStored, escapeControls } = require('../output')
const { timelineRows } = require('../timeline')

const command = {
  name: 'history',
  summary: "print an execution's history as a timeline",
  usage: `Usage: duroxide-node history <instance-id> [--execution <n>]

  --execution <n>   which execution (default: the current one)

  In --json, each event's data is the parsed JSON value (payloads included).`,
  options: { execution: { type: 'string' } },
  positionals: [{ name: 'instance-id', required: true }],

  prepare({ values }) {
    return { requested: intOption(command, 'execution', values.execution, { min: 1 }) }
  },

  async run({ client, positionals, prepared: { requested } }) {
    const id = positionals['instance-id']
    const executions = await client.listExecutions(id)
    if (executions.length === 0) throw new NotFoundError(`instance '${id}' not found`)
    const executionId = requested ?? executions[executions.length - 1]
    if (!executions.includes(executionId)) {
      throw new NotFoundError(`instance '${id}' has no execution ${executionId} (it has ${executions.join(', ')})`)
    }
    const events = (await client.readExecutionHistory(id, executionId)).map((e) =>
      e.data === undefined ? e : { ...e, data: parseStored(e.data) })
    return { instanceId: id, executionId, executions, events }
  },

  render(result) {
    const header = `${escapeControls(result.instanceId)}, execution ${result.executionId} of ${result.executions.length}, ${result.events.length} events\n`
    return header + table([
      { key: 'id', title: 'EVENT' },
      { key: 'at', title: 'TIME' },
      { key: 'offset', title: 'AFTER' },
      { key: 'kind', title: 'KIND' },
      { key: 'source', title: 'FOR' },
      { key: 'what', title: 'DETAILS' },
    ], timelineRows(result.events))
  },
}

module.exports = command
