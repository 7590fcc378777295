'use strict'
// Storage providers. One provider object may be shared by any number of
// Runtimes and Clients in the process.
const native = require('./native')
const { InvalidOptionError, InvalidArgumentError, call, describe } = require('./errors')
const { nonEmptyString } = require('./validate')

function checkOptions(where, options, known) {
  if (options === undefined || options === null) return undefined
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidOptionError(`${where} options must be an object, got ${describe(options)}`)
  }
  const out = {}
  for (const [key, value] of Object.entries(options)) {
    if (!Object.hasOwn(known, key)) {
      const names = Object.keys(known)
      const near = native.suggestOptionName(key, names)
      const hint = near ? `; did you mean ${near}?` : ''
      throw new InvalidOptionError(`${where}: unknown option '${key}'${hint} (known: ${names.join(', ')})`)
    }
    if (value === undefined) continue
    known[key](key, value)
    out[key] = value
  }
  return out
}

const positiveInt = (key, v) => {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 0xffffffff) {
    throw new InvalidOptionError(`${key} must be an integer >= 1, got ${describe(v)}`)
  }
}
const nonNegativeInt = (key, v) => {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0xffffffff) {
    throw new InvalidOptionError(`${key} must be a non-negative integer, got ${describe(v)}`)
  }
}
const string = (key, v) => {
  if (typeof v !== 'string' || v.length === 0) throw new InvalidOptionError(`${key} must be a non-empty string, got ${describe(v)}`)
}
const migrations = (key, v) => {
  if (v !== 'apply' && v !== 'verifyOnly') {
    throw new InvalidOptionError(`${key} must be 'apply' or 'verifyOnly', got ${describe(v)}`)
  }
}

const boolean = (key, v) => {
  if (typeof v !== 'boolean') throw new InvalidOptionError(`${key} must be true or false, got ${describe(v)}`)
}

// Every option name a provider constructor takes; `docs/fast-paths.md` has
// what `fastPaths` and `relaxedDurability` change.
const SQLITE_OPTIONS = { fastPaths: boolean, fallbackPollMs: positiveInt }
const POSTGRES_OPTIONS = { fastPaths: boolean, relaxedDurability: boolean, listen: boolean, fallbackPollMs: positiveInt }
const URL_OPTIONS = { maxConnections: positiveInt, migrations, ...POSTGRES_OPTIONS }
const MIGRATE_OPTIONS = { schema: string, prune: boolean, unusedForMs: nonNegativeInt, grantTo: string }
const ENTRA_OPTIONS = {
  audience: string,
  maxConnections: positiveInt,
  acquireTimeoutMs: nonNegativeInt,
  refreshIntervalMs: nonNegativeInt,
  ...POSTGRES_OPTIONS,
}


class SqliteProvider {
  /** @internal */
  constructor(handle) {
    this._native = handle
  }

  /**
   * `{ enabled, active, unavailable }`: the fast store paths this provider
   * uses, and why an enabled one cannot be used here (docs/fast-paths.md).
   */
  fastPaths() {
    return this._native.fastPaths()
  }

  /** Opens a `sqlite:` URL (`sqlite:./app.db`), creating the file if missing. */
  static async open(url, options) {
    nonEmptyString('url', url)
    const opts = checkOptions('SqliteProvider.open', options, SQLITE_OPTIONS)
    return new SqliteProvider(await call(() => native.openSqlite(url, opts)))
  }

  /** A private in-memory database. */
  static async inMemory(options) {
    const opts = checkOptions('SqliteProvider.inMemory', options, SQLITE_OPTIONS)
    return new SqliteProvider(await call(() => native.sqliteInMemory(opts)))
  }
}

class PostgresProvider {
  /** @internal */
  constructor(handle) {
    this._native = handle
  }

  /** As `SqliteProvider#fastPaths`. */
  fastPaths() {
    return this._native.fastPaths()
  }

  /**
   * Drops every table and function of the provider's schema (duroxide-pg's,
   * and the fast paths' functions), and the schema itself unless it is
   * `public`: all stored instances are gone. For tests and tear-downs.
   */
  async cleanupSchema() {
    return call(() => this._native.cleanupSchema())
  }

  /**
   * Creates the schema if needed, applies duroxide-pg's migrations and
   * installs the fast paths' functions, as an admin role before an
   * application whose role may not CREATE connects (docs/fast-paths.md).
   * `{ schema?, prune?, unusedForMs?, grantTo? }`; resolves with what it did.
   */
  static async migrate(databaseUrl, options) {
    nonEmptyString('databaseUrl', databaseUrl)
    const opts = checkOptions('PostgresProvider.migrate', options, MIGRATE_OPTIONS)
    return call(() => native.migratePostgres(databaseUrl, opts))
  }

  static async connect(databaseUrl, options) {
    nonEmptyString('databaseUrl', databaseUrl)
    const opts = checkOptions('PostgresProvider.connect', options, URL_OPTIONS)
    return new PostgresProvider(await call(() => native.connectPostgres(databaseUrl, null, opts)))
  }

  /** Creates the schema if needed and applies migrations; safe to call from many processes at once. */
  static async connectWithSchema(databaseUrl, schema, options) {
    nonEmptyString('databaseUrl', databaseUrl)
    nonEmptyString('schema', schema)
    const opts = checkOptions('PostgresProvider.connectWithSchema', options, URL_OPTIONS)
    return new PostgresProvider(await call(() => native.connectPostgres(databaseUrl, schema, opts)))
  }

  static async connectWithEntra(host, port, database, user, options) {
    return PostgresProvider.#entra('connectWithEntra', host, port, database, user, null, options)
  }

  static async connectWithSchemaAndEntra(host, port, database, user, schema, options) {
    nonEmptyString('schema', schema)
    return PostgresProvider.#entra('connectWithSchemaAndEntra', host, port, database, user, schema, options)
  }

  static async #entra(where, host, port, database, user, schema, options) {
    nonEmptyString('host', host)
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
      throw new InvalidArgumentError(`port must be an integer 1..65535, got ${describe(port)}`)
    }
    nonEmptyString('database', database)
    nonEmptyString('user', user)
    const opts = checkOptions(`PostgresProvider.${where}`, options, ENTRA_OPTIONS)
    return new PostgresProvider(await call(() => native.connectPostgresEntra(host, port, database, user, schema, opts)))
  }
}

/** The native handle of a provider argument, or a clear error. */
function nativeProviderOf(provider, where) {
  if (provider instanceof SqliteProvider || provider instanceof PostgresProvider) return provider._native
  throw new InvalidArgumentError(
    `${where} expects a SqliteProvider or PostgresProvider (from SqliteProvider.open(...) or PostgresProvider.connect(...)), got ${describe(provider)}`,
  )
}

module.exports = { SqliteProvider, PostgresProvider, nativeProviderOf }
