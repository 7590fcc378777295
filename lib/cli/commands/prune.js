'use strict'
// `prune --completed-before <when>`: retention. By default deletes old
// executions (continue-as-new leaves one per turn; the current one is always
// kept; lib/cli/retention.js); with --instances deletes whole terminal root
// instances instead.
const { UsageError, AbortedError } = require('../errors')
const { intOption, timeOption } = require('../args')
const { confirm } = require('../confirm')
const { pruneOldExecutions } = require('../retention')
const { fields, when } = require('../output')

const command = {
  name: 'prune',
  summary: 'delete old executions, or with --instances old finished instances (destructive)',
  usage: `Usage: duroxide-node prune --completed-before <when> [--keep-last <n>] [--limit <n>] [--instances] [--yes]

  --completed-before <when>  an ISO date/time (2026-01-31, 2026-01-31T12:00:00Z;
                             a date alone is UTC midnight) or an age (30d, 12h, 15m)
  --keep-last <n>            keep each instance's newest n executions (the
                             current one counts and is never pruned)
  --limit <n>                consider at most n instances (default 1000)
  --instances                delete whole Completed/Failed root instances whose
                             current execution completed before <when>, with their
                             sub-orchestrations (Running ones are skipped)
  --yes                      do not ask; required when stdin/stderr is not a terminal`,
  options: {
    'completed-before': { type: 'string' },
    'keep-last': { type: 'string' },
    limit: { type: 'string' },
    instances: { type: 'boolean' },
    yes: { type: 'boolean', short: 'y' },
  },
  positionals: [],

  prepare({ values }) {
    if (values['completed-before'] === undefined) throw new UsageError('prune: missing --completed-before <when>', command.usage)
    const completedBefore = timeOption(command, 'completed-before', values['completed-before'])
    const keepLast = intOption(command, 'keep-last', values['keep-last'], { min: 1 })
    const limit = intOption(command, 'limit', values.limit, { min: 1 })
    if (values.instances && keepLast !== undefined) {
      throw new UsageError('prune: --keep-last applies to executions, not to --instances', command.usage)
    }
    return { completedBefore, keepLast, limit }
  },

  async run({ client, values, io, prepared: { completedBefore, keepLast, limit } }) {
    const mode = values.instances ? 'instances' : 'executions'
    const question = values.instances
      ? `Delete finished root instances completed before ${when(completedBefore)}?`
      : `Delete executions completed before ${when(completedBefore)}${keepLast ? `, keeping each instance's newest ${keepLast}` : ''}?`
    if (!(await confirm(command, values, question, io))) throw new AbortedError('prune: not confirmed; nothing was deleted')
    const result = values.instances
      ? await client.deleteInstanceBulk({ ...(limit === undefined ? {} : { limit }), completedBefore })
      : await pruneOldExecutions(client, { completedBefore, keepLast, limit })
    return { mode, completedBefore: new Date(completedBefore).toISOString(), ...(keepLast === undefined ? {} : { keepLast }), ...result }
  },

  render(r) {
    return r.mode === 'instances'
      ? fields([
        ['completed before', r.completedBefore],
        ['instances deleted', r.instancesDeleted],
        ['executions deleted', r.executionsDeleted],
        ['events deleted', r.eventsDeleted],
        ['queue messages deleted', r.queueMessagesDeleted],
      ])
      : fields([
        ['completed before', r.completedBefore],
        ['keep last', r.keepLast],
        ['instances processed', r.instancesProcessed],
        ['executions deleted', r.executionsDeleted],
        ['events deleted', r.eventsDeleted],
      ])
  },
}

module.exports = command
