'use strict'
// `set-aside`: the queue messages set aside because no fetch can read them
// (docs/api-reference.md, "Unreadable messages"). They stay in their queue and are
// never fetched; an operator reads why, fixes or deletes them.
const { table, clip } = require('../output')

const command = {
  name: 'set-aside',
  summary: 'queue messages set aside because no fetch can read them',
  usage: `Usage: duroxide-node set-aside

  Lists every message a runtime set aside because it does not parse as a
  duroxide work item or, on Postgres, holds U+0000: its queue, row id,
  instance, why, and the start of its stored text. Such a message stays in
  its queue and is never fetched; the other instances run on.`,
  options: {},
  positionals: [],

  async run({ client }) {
    return { messages: await client.listSetAside() }
  },

  render(r) {
    return table(
      [
        { key: 'queue', title: 'QUEUE' },
        { key: 'id', title: 'ID' },
        { key: 'instanceId', title: 'INSTANCE' },
        { key: 'reason', title: 'WHY' },
        { key: 'preview', title: 'TEXT' },
      ],
      r.messages.map((m) => ({ ...m, preview: clip(m.text, 60) })),
    )
  },
}

module.exports = command
