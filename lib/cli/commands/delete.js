'use strict'
// `delete <id> [--force]`: deletes a root instance with its sub-orchestrations.
const { RuntimeStateError, InvalidArgumentError } = require('../../..')
const { AbortedError } = require('../errors')
const { confirm } = require('../confirm')
const { fields } = require('../output')
const { isLive } = require('../statuses')

const command = {
  name: 'delete',
  summary: 'delete an instance and its sub-orchestrations (destructive)',
  usage: `Usage: duroxide-node delete <instance-id> [--force] [--yes]

  --force   also delete a Running instance
  --yes     do not ask; required when stdin/stderr is not a terminal`,
  options: { force: { type: 'boolean' }, yes: { type: 'boolean', short: 'y' } },
  positionals: [{ name: 'instance-id', required: true }],

  async run({ client, values, positionals, io }) {
    const id = positionals['instance-id']
    const info = await client.getInstanceInfo(id)
    // Checked before asking: a prompt the store would then refuse helps no one.
    if (info.parentInstanceId !== undefined) {
      throw new InvalidArgumentError(`instance '${id}' is a sub-orchestration of '${info.parentInstanceId}'; delete its root instead`)
    }
    if (isLive(info.status) && !values.force) {
      throw new RuntimeStateError(`instance '${id}' is Running; pass --force to delete it anyway`)
    }
    const tree = await client.getInstanceTree(id)
    const what = `Delete ${info.status} instance '${id}'${tree.size > 1 ? ` and ${tree.size - 1} sub-orchestration(s)` : ''}?`
    if (!(await confirm(command, values, what, io))) throw new AbortedError('delete: not confirmed; nothing was deleted')
    const result = await client.deleteInstance(id, Boolean(values.force))
    return { instanceId: id, ...result }
  },

  render(r) {
    return fields([
      ['deleted', r.instanceId],
      ['instances', r.instancesDeleted],
      ['executions', r.executionsDeleted],
      ['events', r.eventsDeleted],
      ['queue messages', r.queueMessagesDeleted],
    ])
  },
}

module.exports = command
