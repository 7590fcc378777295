'use strict'
// The guard in front of destructive commands (delete, prune): `--yes` runs
// them; without it a terminal is asked, and anything else (a script, a pipe,
// CI) is refused, so that nothing is deleted by accident.
const readline = require('node:readline')
const { UsageError } = require('./errors')
const { escapeControls } = require('./output')

/** Resolves true to go ahead; throws a UsageError when there is no one to ask. */
async function confirm(command, values, question, io = process) {
  if (values.yes) return true
  if (!io.stdin.isTTY || !io.stderr.isTTY) {
    throw new UsageError(
      `${command.name} deletes stored data: pass --yes to run it without a terminal to confirm on`,
      command.usage,
    )
  }
  const rl = readline.createInterface({ input: io.stdin, output: io.stderr })
  try {
    const answer = await new Promise((resolve) => rl.question(`${escapeControls(question)} [y/N] `, resolve))
    return /^y(es)?$/i.test(answer.trim())
  } finally {
    rl.close()
  }
}

module.exports = { confirm }
