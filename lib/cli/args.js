'use strict'
// Argument parsing: one parseArgs call per command over the options every
// command shares plus its own, turning parseArgs' complaints into UsageErrors
// that carry the command's usage text.
const { parseArgs } = require('node:util')
const { UsageError } = require('./errors')

/** Options every command accepts. */
const COMMON_OPTIONS = {
  'database-url': { type: 'string' },
  schema: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
}

const COMMON_HELP = `Store options (every command):
  --database-url <url>  sqlite:<file> or postgres://... (default: $DUROXIDE_DATABASE_URL)
  --schema <name>       Postgres schema (default: $DUROXIDE_SCHEMA, else public)
  --json                print one JSON document on stdout instead of a table
  -h, --help            show this help`

/**
 * Parses `argv` (the words after the command name) for `command`, whose
 * `options` are parseArgs option specs and `positionals` a list of
 * `{ name, required }`. Returns `{ values, positionals: { name: value } }`.
 */
function parseCommand(command, argv) {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      options: { ...COMMON_OPTIONS, ...(command.options || {}) },
      allowPositionals: true,
      strict: true,
    })
  } catch (err) {
    throw new UsageError(`${command.name}: ${err.message}`, command.usage)
  }
  const { values } = parsed
  if (values.help) return { values, positionals: {}, help: true }
  const specs = command.positionals || []
  if (parsed.positionals.length > specs.length) {
    const extra = parsed.positionals.slice(specs.length).map((p) => `'${p}'`).join(', ')
    throw new UsageError(`${command.name}: unexpected argument ${extra}`, command.usage)
  }
  const positionals = {}
  specs.forEach((spec, i) => {
    const v = parsed.positionals[i]
    if (v === undefined && spec.required) {
      throw new UsageError(`${command.name}: missing <${spec.name}>`, command.usage)
    }
    if (v !== undefined) positionals[spec.name] = v
  })
  return { values, positionals, help: false }
}

/** A non-negative integer option (`--limit 10`), or `fallback` when absent. */
function intOption(command, name, raw, { min = 0, fallback } = {}) {
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw) || Number(raw) < min || !Number.isSafeInteger(Number(raw))) {
    throw new UsageError(`${command.name}: --${name} must be an integer >= ${min}, got '${raw}'`, command.usage)
  }
  return Number(raw)
}

const DURATION = /^(\d+)(ms|s|m|h|d|w)$/
const UNIT_MS = { ms: 1, s: 1000, m: 60000, h: 3600000, d: 86400000, w: 604800000 }

/**
 * A point in time: an ISO 8601 date or date-time (`2026-01-31`,
 * `2026-01-31T12:00:00Z`) or an age (`30d`, `12h`, `15m`) meaning that long
 * before `now`. Returns epoch ms.
 */
function timeOption(command, name, raw, now = Date.now()) {
  const age = DURATION.exec(raw)
  if (age) return now - Number(age[1]) * UNIT_MS[age[2]]
  const ms = /^\d{4}-\d{2}-\d{2}/.test(raw) ? Date.parse(raw) : NaN
  if (Number.isNaN(ms)) {
    throw new UsageError(
      `${command.name}: --${name} must be an ISO date (2026-01-31, 2026-01-31T12:00:00Z) or an age (30d, 12h, 15m), got '${raw}'`,
      command.usage,
    )
  }
  return ms
}

module.exports = { parseCommand, intOption, timeOption, COMMON_HELP }
