// Storage providers (lib/providers.js).

/**
 * A store path faster than duroxide's own that a provider may use
 * (docs/fast-paths.md says what each does and guarantees).
 */
export type FastPath =
  | 'tailFetch'
  | 'workerFetch'
  | 'turnAck'
  | 'ackRides'
  | 'keptConnections'
  | 'directCalls'
  | 'oneWriter'
  | 'activityDescriptors'
  | 'statusRead'
  | 'wakeups'

/** `provider.fastPaths()` and `runtime.health().fastPaths`. */
export interface FastPathsReport {
  /** The provider's `fastPaths` option. */
  enabled: boolean
  /** The paths in use. */
  active: FastPath[]
  /** Paths that are enabled but cannot be used here, with the reason. */
  unavailable: { [path: string]: string }
}

/** Options of `SqliteProvider.open` and `SqliteProvider.inMemory`. */
export interface SqliteOpenOptions {
  /**
   * `true` (default): the fast store paths (docs/fast-paths.md); `false`:
   * every call runs through duroxide's own SQLite provider.
   */
  fastPaths?: boolean | undefined
  /**
   * How often an idle dispatcher looks at the store though nothing woke it,
   * in ms (default 1000): what another process on the file enqueued is
   * found by this look.
   */
  fallbackPollMs?: number | undefined
}

/** What every Postgres constructor takes besides its connection settings. */
export interface PostgresOptions {
  /**
   * `true` (default): the fast store paths (docs/fast-paths.md); `false`:
   * every call runs through duroxide-pg's own provider, exactly as the crate does.
   */
  fastPaths?: boolean | undefined
  /**
   * `true`: fetches and activity acks commit without waiting for their WAL
   * flush. A Postgres crash can then run some activities again (their results
   * were not yet durable); nothing a caller was told of is lost. Default `false`.
   */
  relaxedDurability?: boolean | undefined
  /**
   * `true` (default): idle dispatchers are woken across processes by Postgres
   * LISTEN/NOTIFY on a connection of the provider's own. `false` behind a
   * connection pooler without LISTEN (PgBouncer in transaction mode): other
   * processes' work is then found by the fallback look.
   */
  listen?: boolean | undefined
  /** How often an idle dispatcher looks at the store though nothing woke it, in ms (default 1000). */
  fallbackPollMs?: number | undefined
}

/** Options of `PostgresProvider.connect` and `connectWithSchema`. */
export interface PostgresConnectOptions extends PostgresOptions {
  /** Pool size, integer >= 1. Default: the `DUROXIDE_PG_POOL_MAX` env var, else 10. */
  maxConnections?: number | undefined
  /**
   * `'apply'` (default) creates the schema, runs pending migrations and
   * installs the fast paths' functions; `'verifyOnly'` only checks that the
   * migrations were applied and uses the functions an admin installed
   * (`PostgresProvider.migrate`), for roles without DDL rights.
   */
  migrations?: 'apply' | 'verifyOnly' | undefined
}

/** Options of the Azure Entra ID constructors. */
export interface EntraOptions extends PostgresOptions {
  /** Token audience. Default: the Azure Database for PostgreSQL audience. */
  audience?: string | undefined
  /** Pool size, integer >= 1. */
  maxConnections?: number | undefined
  /** How long to wait for a pooled connection, in ms. */
  acquireTimeoutMs?: number | undefined
  /** How often the access token is refreshed, in ms. */
  refreshIntervalMs?: number | undefined
}

/** Options of `PostgresProvider.migrate`. */
export interface MigrateOptions {
  /** The schema (default `public`); created if missing. */
  schema?: string | undefined
  /**
   * Also drop the functions recorded for other package versions that no
   * provider marked as used within `unusedForMs`.
   */
  prune?: boolean | undefined
  /** With `prune`: how long unused, in ms (default a day; live providers mark theirs hourly). */
  unusedForMs?: number | undefined
  /**
   * A role to grant what an application needs: `USAGE` on the schema, DML on
   * its tables, `USAGE, SELECT` on its sequences, `EXECUTE` on its functions.
   */
  grantTo?: string | undefined
}

/** What `PostgresProvider.migrate` did. */
export interface MigrateReport {
  schema: string
  /** The `.sql` files installed now (empty when all were there). */
  installed: string[]
  /** Every fast-path function of this package version in the schema. */
  functions: string[]
  /** Functions dropped by `prune`. */
  pruned: { signature: string; packageVersion: string }[]
  grantedTo?: string
}

/**
 * Embedded storage in a SQLite file. One provider may be shared by any number
 * of Runtimes and Clients in the process.
 */
export declare class SqliteProvider {
  private constructor()
  // Makes the class nominal: other objects (and PostgresProvider) are not SqliteProviders.
  private readonly _native: unknown
  /**
   * Opens a `sqlite:` URL (`sqlite:./app.db`, `sqlite:/tmp/x.db`), creating
   * the file if missing. Rejects with `ProviderError` if it cannot.
   */
  static open(url: string, options?: SqliteOpenOptions): Promise<SqliteProvider>
  /** A private in-memory database, gone when the last holder drops it. */
  static inMemory(options?: SqliteOpenOptions): Promise<SqliteProvider>
  /** The fast store paths this provider uses, and why an enabled one cannot be used. */
  fastPaths(): FastPathsReport
}

/**
 * PostgreSQL storage, for fleets of processes. One provider may be shared by
 * any number of Runtimes and Clients in the process.
 */
export declare class PostgresProvider {
  private constructor()
  private readonly _native: unknown
  /**
   * Creates the schema if needed, applies duroxide-pg's migrations and
   * installs the fast paths' functions: what an admin role runs before an
   * application whose role may not CREATE connects. Same as
   * `npx duroxide-node migrate`.
   */
  static migrate(databaseUrl: string, options?: MigrateOptions): Promise<MigrateReport>
  /** Connects with a `postgres://` URL, using schema `public`. */
  static connect(databaseUrl: string, options?: PostgresConnectOptions): Promise<PostgresProvider>
  /**
   * Connects using `schema`, creating it and applying migrations if needed.
   * Safe to call from many processes at once against an empty database.
   */
  static connectWithSchema(databaseUrl: string, schema: string, options?: PostgresConnectOptions): Promise<PostgresProvider>
  /** Connects to Azure Database for PostgreSQL with a Microsoft Entra ID token (schema `public`). */
  static connectWithEntra(host: string, port: number, database: string, user: string, options?: EntraOptions): Promise<PostgresProvider>
  /** `connectWithEntra` using `schema`. */
  static connectWithSchemaAndEntra(
    host: string,
    port: number,
    database: string,
    user: string,
    schema: string,
    options?: EntraOptions,
  ): Promise<PostgresProvider>
  /** The fast store paths this provider uses, and why an enabled one cannot be used. */
  fastPaths(): FastPathsReport
  /**
   * Drops every table and function of the provider's schema (duroxide-pg's and
   * the fast paths'), and the schema itself unless it is `public`: every stored
   * instance is gone. For tests and tear-downs.
   */
  cleanupSchema(): Promise<void>
}

/** Any storage provider accepted by `Runtime` and `Client`. */
export type Provider = SqliteProvider | PostgresProvider

// Only the declarations marked `export` above are exported.
export {}
