'use strict'
// `migrate`: duroxide-pg's migrations and the fast paths' functions, as an
// admin role runs them before an application whose role may not CREATE.
const { PostgresProvider } = require('../../..')
const { UsageError } = require('../errors')
const { fields, table } = require('../output')
const { intOption } = require('../args')

const command = {
  name: 'migrate',
  summary: 'create and migrate a Postgres schema, install the fast paths (writes)',
  usage: `Usage: duroxide-node migrate --database-url <postgres-url> [--schema <name>]
                           [--prune [--unused-for <ms>]] [--grant-to <role>]

  Creates the schema if needed, applies duroxide-pg's migrations and installs
  the functions of the store fast paths (docs/fast-paths.md). Run it as the
  schema's owner when the application's role may not CREATE there.

  --prune             also drop the functions of other package versions that
                      no provider used within --unused-for
  --unused-for <ms>   how long unused before --prune drops (default 86400000)
  --grant-to <role>   grant the role USAGE on the schema, DML on its tables,
                      its sequences, and EXECUTE on its functions`,
  options: {
    prune: { type: 'boolean' },
    'unused-for': { type: 'string' },
    'grant-to': { type: 'string' },
  },
  positionals: [],
  // It creates and migrates: it opens the store itself, not read-only.
  opensStore: false,

  prepare({ values }) {
    return { unusedForMs: intOption(command, 'unused-for', values['unused-for']) }
  },

  async run({ target, values, prepared }) {
    if (!/^postgres(ql)?:\/\//i.test(target.url)) {
      throw new UsageError('migrate: the store must be a postgres:// URL (SQLite needs no migration)', command.usage)
    }
    return PostgresProvider.migrate(target.url, {
      schema: target.schema,
      prune: values.prune,
      unusedForMs: prepared.unusedForMs,
      grantTo: values['grant-to'],
    })
  },

  render(r) {
    const out = fields([
      ['schema', r.schema],
      ['installed', r.installed.length ? r.installed.join(', ') : 'nothing (all present)'],
      ['functions', r.functions.join(', ')],
      ['granted to', r.grantedTo],
    ])
    if (r.pruned.length === 0) return out
    return out + '\npruned:\n' + table([{ key: 'signature', title: 'FUNCTION' }, { key: 'packageVersion', title: 'VERSION' }], r.pruned)
  },
}

module.exports = command
