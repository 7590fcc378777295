// The web dashboard (lib/dashboard/, docs/dashboard.md).
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Provider } from './providers'
import type { Runtime } from './runtime'

/** Options of `createDashboard(provider, options)`. */
export interface DashboardOptions {
  /** Serve no writes: every write answers 403 and the page shows no write controls. Default false. */
  readOnly?: boolean | undefined
  /** Every request must present this token (`Authorization: Bearer`, or `?token=` once, which sets a cookie). */
  token?: string | undefined
  /** Where the handler is mounted, e.g. `'/duroxide'` (starts with `/`, no trailing `/`). Default `''`. */
  basePath?: string | undefined
  /** A runtime of this process whose health, guard counters and metrics the overview shows. */
  runtime?: Runtime | undefined
  /** A name for the store, shown in the page's header (passwords in URLs are masked). */
  label?: string | undefined
}

/**
 * A plain Node request handler. Requests outside `basePath` call `next()`
 * when given (Express, Connect) and get 404 otherwise.
 */
export type DashboardHandler = (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => void

/**
 * The web dashboard of `provider`'s store as a request handler, to mount in
 * Express, Fastify, Koa or `http.createServer`. Throws `InvalidOptionError`
 * naming an unknown or invalid option, `InvalidArgumentError` for a value
 * that is not a provider.
 */
export declare function createDashboard(provider: Provider, options?: DashboardOptions): DashboardHandler

// Only the declarations marked `export` above are exported.
export {}
