'use strict'
// `cancel <id> [--reason]`: requests cancellation of a running instance.
const { RuntimeStateError } = require('../../..')
const { fields } = require('../output')
const { isLive } = require('../statuses')

const command = {
  name: 'cancel',
  summary: 'request cancellation of a running instance (writes)',
  usage: `Usage: duroxide-node cancel <instance-id> [--reason <text>]

  --reason <text>   recorded with the cancellation

  The instance (and its sub-orchestrations) ends as Failed once a runtime
  processes the request. Only a Running instance can be cancelled.`,
  options: { reason: { type: 'string' } },
  positionals: [{ name: 'instance-id', required: true }],

  async run({ client, values, positionals }) {
    const id = positionals['instance-id']
    const info = await client.getInstanceInfo(id)
    if (!isLive(info.status)) {
      throw new RuntimeStateError(`instance '${id}' is ${info.status}; only a Running instance can be cancelled`)
    }
    await client.cancelInstance(id, values.reason)
    return { instanceId: id, cancelRequested: true, ...(values.reason === undefined ? {} : { reason: values.reason }) }
  },

  render(r) {
    return fields([['cancel requested', r.instanceId], ['reason', r.reason]])
  },
}

module.exports = command
