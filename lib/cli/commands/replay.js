'use strict'
// `replay --module <file>`: the deploy gate. Replays stored instances against
// today's orchestration code (the module's `register(runtime)`) with
// `replayInstances` from `duroxide-node/testing`. That export is looked up
// when the command runs; a build without it reports ERR_NOT_AVAILABLE.
const path = require('node:path')
const { pathToFileURL } = require('node:url')
const { Runtime, InvalidArgumentError } = require('../../..')
const { INSTANCE_STATUSES, statusOption } = require('../statuses')
const { UsageError, NotAvailableError } = require('../errors')
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

  Needs duroxide-node/testing (replayInstances); exits 2 when this build has none.
  Nothing is executed or written: histories are only read and replayed.`,
  options: { module: { type: 'string' }, status: { type: 'string' }, limit: { type: 'string' } },
  positionals: [],

  prepare({ values }) {
    if (values.module === undefined) throw new UsageError('replay: missing --module <file>', command.usage)
    const status = statusOption(command, values.status)
    const limit = intOption(command, 'limit', values.limit, { min: 1 })
    const replayInstances = loadReplayInstances()
    if (!replayInstances) {
      throw new NotAvailableError(
        'replay is not available in this build: duroxide-node/testing with replayInstances is not installed',
      )
    }
    return { replayInstances, status, limit }
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
    const results = await prepared.replayInstances(provider, runtime, {
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
      at: x.divergence ? `#${x.divergence.index}` : '',
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

/** `replayInstances` of the package's testing export, or null when this build has none. */
function loadReplayInstances() {
  let testing
  try {
    // The package's own name: resolves through package.json "exports".
    testing = require('duroxide-node/testing')
  } catch (err) {
    // Only the export itself missing means "not in this build"; a testing
    // module that fails to load is a bug to report, not hide.
    const missing = err && (err.code === 'ERR_PACKAGE_PATH_NOT_EXPORTED' ||
      (err.code === 'MODULE_NOT_FOUND' && String(err.message).includes('duroxide-node/testing')))
    if (missing) return null
    throw err
  }
  return typeof testing.replayInstances === 'function' ? testing.replayInstances : null
}

module.exports = command
