'use strict'
// `raise <id> <event> [json] [--strict]`: raises an event on a running
// instance, where it waits for it: an open one-shot wait (`waitForEvent`)
// gets it directly; otherwise it is kept in the instance's mailbox for the
// name, where `ctx.waitFor` (and `dequeue`) takes it, unless the instance only
// ever waited for that name one-shot, whose events are dropped when nothing
// waits (duroxide's semantics for `raiseEvent`). An instance that waits for
// nothing of that name gets a warning naming what it does wait for; with
// --strict the raise is refused instead.
const { RuntimeStateError } = require('../../..')
const { call } = require('../../errors')
const { nativeClient } = require('../../client-typed')
const { UsageError } = require('../errors')
const { fields } = require('../output')
const { isLive } = require('../statuses')
const { checkedIdentifier } = require('../../validate')

/** What the instance waits for, in words. */
function waitsFor({ events, mailboxes }) {
  const names = [...events, ...mailboxes].map((n) => `'${n}'`)
  return names.length === 0 ? 'no event' : [...new Set(names)].join(', ')
}

const command = {
  name: 'raise',
  summary: 'raise an event on a running instance (writes)',
  usage: `Usage: duroxide-node raise <instance-id> <event-name> [<json-data>] [--strict]

  <json-data>   the event's data as JSON text (default: null), e.g. '{"approved":true}'
  --strict      refuse (exit 1) when the instance is not waiting for <event-name>

  The instance must exist and be Running: an event for a finished instance
  would be dropped. An event the instance is not waiting for is raised with a
  warning naming what it waits for; it is kept until the instance waits for
  it with ctx.waitFor (typed) or dequeueEvent, and dropped by waitForEvent.`,
  options: { strict: { type: 'boolean' } },
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

  async run({ client, positionals, values, prepared: { data }, io }) {
    const id = positionals['instance-id']
    const event = checkedIdentifier('eventName', positionals['event-name'])
    const info = await client.getInstanceInfo(id)
    if (!isLive(info.status)) {
      throw new RuntimeStateError(`instance '${id}' is ${info.status}; only a Running instance receives events`)
    }
    const waiting = await call(() => client[nativeClient]().waitingFor(id, 'raise'))
    const waited = waiting.events.includes(event) || waiting.mailboxes.includes(event)
    let warning
    if (!waited) {
      const what = `instance '${id}' is not waiting for '${event}' (it waits for ${waitsFor(waiting)})`
      if (values.strict) throw new RuntimeStateError(`${what}; nothing was raised (--strict)`)
      warning = what
    }
    // A one-shot wait open now, or (waiting for nothing of the name) an
    // instance that only ever waited one-shot for it: raiseEvent, as before.
    const oneShot = waiting.events.includes(event) || (!waited && waiting.oneShotNames.includes(event))
    if (oneShot) await client.raiseEvent(id, event, data)
    else await client.enqueueEvent(id, event, data)
    const delivery = waited ? 'to the open wait' : oneShot ? 'dropped unless a wait opens first' : 'kept until waited for'
    if (warning && !values.json) io.stderr.write(`duroxide-node: warning: ${warning}; raised anyway (${delivery})\n`)
    const result = { instanceId: id, eventName: event, data, raised: true, delivery, waitsFor: { events: waiting.events, mailboxes: waiting.mailboxes } }
    if (warning) result.warning = warning
    return result
  },

  render(r) {
    return fields([['raised', r.eventName], ['on', r.instanceId], ['data', JSON.stringify(r.data)], ['delivery', r.delivery]])
  },
}

module.exports = command
