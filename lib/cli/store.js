'use strict'
// Opens the store a command works on, from --database-url/--schema or the
// DUROXIDE_DATABASE_URL/DUROXIDE_SCHEMA environment variables, through the
// package's public providers. Opening never changes a store: a SQLite file
// that does not exist is an error (the provider would create it), and
// Postgres is opened with `migrations: 'verifyOnly'` (no schema is created,
// no migration applied).
const fs = require('node:fs')
const { SqliteProvider, PostgresProvider, NotFoundError } = require('../..')
const { UsageError } = require('./errors')

/** The file a `sqlite:` URL names, spelled as SqliteProvider.open reads it. */
function sqliteFilePath(url) {
  const rest = url.slice('sqlite:'.length).split('?')[0]
  return rest.startsWith('//') ? rest.slice(2) : rest
}

/** `{ url, schema }` from the options, falling back on the environment. */
function storeTarget(values, command, env = process.env) {
  const url = values['database-url'] ?? env.DUROXIDE_DATABASE_URL
  const schema = values.schema ?? (env.DUROXIDE_SCHEMA || undefined)
  if (!url) {
    throw new UsageError(`${command.name}: no store given: pass --database-url <url> or set DUROXIDE_DATABASE_URL`, command.usage)
  }
  return { url, schema }
}

/** `{ provider, backend }` for the target; rejects with the package's error codes. */
async function openStore({ url, schema }, command) {
  if (url.startsWith('sqlite:')) {
    if (schema !== undefined) {
      throw new UsageError(`${command.name}: --schema applies to Postgres only, not to '${url}'`, command.usage)
    }
    const file = sqliteFilePath(url)
    if (file && file !== ':memory:' && !fs.existsSync(file)) {
      throw new NotFoundError(`no SQLite store at '${file}' (from '${url}'); the CLI does not create stores`)
    }
    return { provider: await SqliteProvider.open(url), backend: 'sqlite' }
  }
  // Two connections: commands run their reads a few at a time.
  const options = { maxConnections: 2, migrations: 'verifyOnly' }
  const provider = schema === undefined
    ? await PostgresProvider.connect(url, options)
    : await PostgresProvider.connectWithSchema(url, schema, options)
  return { provider, backend: 'postgres' }
}

module.exports = { storeTarget, openStore, sqliteFilePath }
