'use strict'
// Opens the store a command works on, from --database-url/--schema or the
// DUROXIDE_DATABASE_URL/DUROXIDE_SCHEMA environment variables, through the
// package's public providers. Opening never changes a store: a SQLite file
// that does not exist is an error (the provider would create it), and
// Postgres is opened with `migrations: 'verifyOnly'` (no schema is created,
// no migration applied).
const fs = require('node:fs')
const { SqliteProvider, PostgresProvider, NotFoundError, ProviderError } = require('../..')
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
  if (!/^(sqlite:|postgres(ql)?:\/\/)/i.test(url)) {
    // Only the scheme is shown: the rest of a URL may carry a password.
    const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)
    throw new UsageError(
      `${command.name}: the store URL must start with sqlite: or postgres://, got ${scheme ? `a '${scheme[0]}' URL` : 'no scheme'}`,
      command.usage,
    )
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
  try {
    const provider = schema === undefined
      ? await PostgresProvider.connect(url, options)
      : await PostgresProvider.connectWithSchema(url, schema, options)
    return { provider, backend: 'postgres' }
  } catch (err) {
    // duroxide-pg words this for library users (MigrationPolicy::...); an
    // operator most likely named the wrong schema.
    if (err.code === 'ERR_PROVIDER' && /migrations not initialized/.test(err.message)) {
      throw new ProviderError(
        `no duroxide store in schema '${schema ?? 'public'}' (check --schema or DUROXIDE_SCHEMA; the CLI creates and migrates nothing): ${err.message}`,
        { cause: err },
      )
    }
    throw err
  }
}

module.exports = { storeTarget, openStore, sqliteFilePath }
