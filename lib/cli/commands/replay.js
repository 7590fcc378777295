'use strict'
// `replay --module <file>`: the deploy gate. Replays stored instances against
// today's orchestration code (the module's `register(runtime)`) with
// `replayInstances` from `duroxide-node/testing`: histories are only read and
// replayed; no activity runs and nothing is written.
const path = require('node:path')
const { pathToFileURL } = require('node:url')
const { Runtime, InvalidArgumentError } = require('../../..')
const { INSTANCE_STATUSES, statusOption } = require('../statuses')
const { UsageError } = require('../errors')
const { replayInstances } = require('../../testing/replay')
const { intOption } = require('../args')
const { table } = require('../output')

const command = {
  name: 'replay',
  summary: "check stored instances still replay on today's code (exit 1 on divergence)",
  usage: `Usage: duroxide-node replay --module <file> [--status <status>] [--limit <n>]

  --module <file>     a module exporting register(runtime), the function the
                      application registers its orchestrations and activities with
  --status <status>   only instances whose current execution is ${INSTANCE_STATUSES.join(', ')}
  --limit <n>         at most n instances

  Replays the current execution of each instance against the module's code
  (replayInstances of duroxide-node/testing). Exit 1 when any diverges, 0 when
  all replay clean. Nothing is executed or written: histories are only read.`,
  options: { module: { type: 'string' }, status: { type: 'string' }, limit: { type: 'string' } },
  positionals: [],

  prepare({ values }) {
    if (values.module === undefined) throw new UsageError('replay: missing --module <file>', command.usage)
    const status = statusOption(command, values.status)
    const limit = intOption(command, 'limit', values.limit, { min: 1 })
    return { status, limit }
  },

  async run({ provider, values, prepared }) {
    const file = path.resolve(values.module)
    let mod
    try {
      mod = await import(pathToFileURL(file).href)
    } catch (err) {
      throw new InvalidArgumentError(`replay: cannot load --module '${file}': ${err.message}`, { cause: err })
    }
    const register = typeof mod.register === 'function' ? mod.register : mod.default && mod.default.register
    if (typeof register !== 'function') {
      throw new InvalidArgumentError(`replay: --module '${file}' exports no register(runtime) function`)
    }
    // Never started: it only holds today's registrations for the replay.
    const runtime = new Runtime(provider)
    await register(runtime)
    const { status, limit } = prepared
    const results = await replayInstances(provider, runtime, {
      ...(status === undefined ? {} : { status }),
      ...(limit === undefined ? {} : { limit }),
    })
    const diverged = results.filter((r) => !r.ok).length
    return { checked: results.length, diverged, results }
  },

  /** A divergence fails the command, so CI can gate a deploy on it. */
  exitCode(r) {
    return r.diverged > 0 ? 1 : 0
  },

  render(r) {
    const rows = r.results.map((x) => ({
      id: x.instanceId,
      exec: x.executionId,
      ok: x.ok ? 'ok' : 'DIVERGED',
      // Numbered as `history` numbers the same event.
      at: x.divergence ? `#${x.divergence.eventId}` : '',
      why: x.divergence ? x.divergence.message : '',
    }))
    return table([
      { key: 'id', title: 'INSTANCE' },
      { key: 'exec', title: 'EXEC' },
      { key: 'ok', title: 'REPLAY' },
      { key: 'at', title: 'AT' },
      { key: 'why', title: 'DIVERGENCE' },
    ], rows) + `${r.checked} checked, ${r.diverged} diverged\n`
  },
}

module.exports = command
