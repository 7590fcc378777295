'use strict'
// The CLI's entry: picks the command, parses its arguments, opens the store,
// runs the command and prints its result (a table, or one JSON document with
// --json). Exit codes: 0 done, 1 the command failed (the error's `code` is
// printed), 2 the command line is wrong.
const { parseCommand, COMMON_HELP } = require('./args')
const { storeTarget, openStore } = require('./store')
const { printJson, escapeControls } = require('./output')
const { UsageError, EXIT } = require('./errors')
const { Client } = require('../..')

const COMMANDS = [
  require('./commands/list'),
  require('./commands/show'),
  require('./commands/history'),
  require('./commands/raise'),
  require('./commands/cancel'),
  require('./commands/delete'),
  require('./commands/prune'),
  require('./commands/stats'),
  require('./commands/replay'),
  require('./commands/set-aside'),
  require('./commands/migrate'),
  require('./commands/dashboard'),
]

const USAGE = `Usage: duroxide-node <command> [options]

Inspect and operate duroxide-node instances in a SQLite or Postgres store.

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(10)} ${c.summary}`).join('\n')}

${COMMON_HELP}

Only raise, cancel, delete, prune, migrate and the dashboard's page (unless
--read-only) write; delete and prune ask first on a terminal and need --yes
otherwise. Run 'duroxide-node <command> --help' for
a command's options. Exit codes: 0 ok, 1 failed or diverged (replay), 2 usage.`

/**
 * Runs one command line. `io` = `{ stdin, stdout, stderr, env }`; resolves
 * with the exit code (bin/duroxide-node.js sets it).
 */
async function main(argv, io = process) {
  const env = io.env || process.env
  const wantsJson = argv.includes('--json')
  try {
    const [name, ...rest] = argv
    if (name === undefined) throw new UsageError('no command given', USAGE)
    if (name === '--help' || name === '-h' || name === 'help') {
      io.stdout.write(USAGE + '\n')
      return EXIT.OK
    }
    const command = COMMANDS.find((c) => c.name === name)
    if (!command) throw new UsageError(`unknown command '${name}'`, USAGE)
    const { values, positionals, help } = parseCommand(command, rest)
    if (help) {
      io.stdout.write(`${command.usage}\n\n${COMMON_HELP}\n`)
      return EXIT.OK
    }
    // Everything that can be checked without the store is, before it is opened.
    const prepared = command.prepare ? command.prepare({ values, positionals }) : undefined
    const target = storeTarget(values, command, env)
    const store = command.opensStore === false ? {} : await openStore(target, command)
    const client = store.provider && new Client(store.provider)
    const result = await command.run({
      client, provider: store.provider, backend: store.backend, target, values, positionals, prepared, io,
    })
    if (values.json) printJson(io.stdout, result)
    // Renders escape each field; this pass catches any text a render adds raw.
    else io.stdout.write(escapeControls(command.render(result), { keepNewlines: true }))
    return command.exitCode ? command.exitCode(result) : EXIT.OK
  } catch (err) {
    return reportError(err, wantsJson, io)
  }
}

/** Prints `err` on stderr (as JSON with --json) and returns its exit code. */
function reportError(err, wantsJson, io) {
  const code = (err && err.code) || 'ERR_INTERNAL'
  const message = err && err.message ? err.message : String(err)
  const usage = err instanceof UsageError ? err.usage : undefined
  if (wantsJson) {
    printJson(io.stderr, { error: { code, message } })
  } else {
    // Messages quote ids and names as the store holds them.
    io.stderr.write(`duroxide-node: error [${escapeControls(code)}]: ${escapeControls(message)}\n`)
  }
  // With --json stderr stays one JSON document; the message names the problem.
  if (usage && !wantsJson) io.stderr.write(`\n${usage}\n`)
  return err instanceof UsageError ? EXIT.USAGE : EXIT.FAILED
}

module.exports = { main, COMMANDS, USAGE }
