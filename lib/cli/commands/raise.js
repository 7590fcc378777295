'use strict'
// `raise <id> <event> [json]`: raises an event on a running instance.
const { RuntimeStateError } = require('../../..')
const { UsageError } = require('../errors')
const { fields } = require('../output')
const { isLive } = require('../statuses')

const command = {
  name: 'raise',
  summary: 'raise an event on a running instance (writes)',
  usage: `Usage: duroxide-node raise <instance-id> <event-name> [<json-data>]

  <json-data>   the event's data as JSON text (default: null), e.g. '{"approved":true}'

  The instance must exist and be Running: an event for a finished instance
  would be dropped.`,
  options: {},
  positionals: [
    { name: 'instance-id', required: true },
    { name: 'event-name', required: true },
    { name: 'json-data', required: false },
  ],

  prepare({ positionals }) {
    const text = positionals['json-data']
    if (text === undefined) return { data: null }
    try {
      return { data: JSON.parse(text) }
    } catch (err) {
      throw new UsageError(`raise: <json-data> is not JSON text (${err.message}): ${text}`, command.usage)
    }
  },

  async run({ client, positionals, prepared: { data } }) {
    const id = positionals['instance-id']
    const event = positionals['event-name']
    const info = await client.getInstanceInfo(id)
    if (!isLive(info.status)) {
      throw new RuntimeStateError(`instance '${id}' is ${info.status}; only a Running instance receives events`)
    }
    await client.raiseEvent(id, event, data)
    return { instanceId: id, eventName: event, data, raised: true }
  },

  render(r) {
    return fields([['raised', r.eventName], ['on', r.instanceId], ['data', JSON.stringify(r.data)]])
  },
}

module.exports = command
