// Storage providers (lib/providers.js).

/** Options of `PostgresProvider.connect` and `connectWithSchema`. */
export interface PostgresConnectOptions {
  /** Pool size, integer >= 1. Default: the `DUROXIDE_PG_POOL_MAX` env var, else 10. */
  maxConnections?: number | undefined
  /**
   * `'apply'` (default) creates the schema and runs pending migrations;
   * `'verifyOnly'` only checks that they were applied (for roles without DDL rights).
   */
  migrations?: 'apply' | 'verifyOnly' | undefined
}

/** Options of the Azure Entra ID constructors. */
export interface EntraOptions {
  /** Token audience. Default: the Azure Database for PostgreSQL audience. */
  audience?: string | undefined
  /** Pool size, integer >= 1. */
  maxConnections?: number | undefined
  /** How long to wait for a pooled connection, in ms. */
  acquireTimeoutMs?: number | undefined
  /** How often the access token is refreshed, in ms. */
  refreshIntervalMs?: number | undefined
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
  static open(url: string): Promise<SqliteProvider>
  /** A private in-memory database, gone when the last holder drops it. */
  static inMemory(): Promise<SqliteProvider>
}

/**
 * PostgreSQL storage, for fleets of processes. One provider may be shared by
 * any number of Runtimes and Clients in the process.
 */
export declare class PostgresProvider {
  private constructor()
  private readonly _native: unknown
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
}

/** Any storage provider accepted by `Runtime` and `Client`. */
export type Provider = SqliteProvider | PostgresProvider

// Only the declarations marked `export` above are exported.
export {}
