// Types of `TestEnv` (`duroxide-node/testing`, lib/testing/env.js).
import type { Client } from './client'
import type { ActivityContext, ActivityFunction } from './activity'
import type { ActivityDefinition } from './definitions'
import type { LogLevel, RuntimeOptions } from './options'
import type { SqliteProvider } from './providers'
import type { Runtime } from './runtime'

/**
 * A duration: milliseconds as a number, or text of `<integer><unit>` parts
 * with unit `ms`, `s`, `m`, `h` or `d` (`'500ms'`, `'30s'`, `'5m'`, `'2h'`,
 * `'1d'`, `'1h30m'`). Anything else rejects with `ERR_INVALID_ARGUMENT`.
 */
export type TestDuration = number | string

export interface TestEnvOptions {
  /** Options of `env.runtime`, as `new Runtime(provider, options)` takes them. */
  runtimeOptions?: RuntimeOptions
  /**
   * How long `advance`, `skipTime` and `waitIdle` wait for the work in
   * progress to finish before rejecting with `ERR_TIMEOUT` (default 30000).
   */
  idleTimeoutMs?: number
  /**
   * The runtime's log level (default `'error'`, so a test's output stays the
   * test runner's). Logs are process-wide and take the level of the first
   * runtime started in the process (docs/testing.md). Same as
   * `runtimeOptions.logLevel`; give one of the two.
   */
  logLevel?: LogLevel | Uppercase<LogLevel>
}

/**
 * A runtime and client on a private in-memory SQLite store with virtual
 * time: timers wait for virtual time, which `advance` and `skipTime` move
 * once nothing else can run, so a timer of days fires in milliseconds.
 * `ctx.utcNow()` reads virtual time. Lock leases, abandon back-offs, session
 * idle timeouts, client wait timeouts and `Date.now()` in activities stay in
 * wall time (docs/testing.md, "Test environment").
 *
 * ```js
 * const env = await TestEnv.create()
 * env.runtime.registerOrchestration('Reminder', function* (ctx) {
 *   yield ctx.scheduleTimer(7 * 24 * 3600_000)
 *   return yield ctx.scheduleActivity('Send', null)
 * })
 * env.mockActivity('Send', async () => 'sent')
 * await env.start()
 * await env.client.startOrchestration('r-1', 'Reminder', null)
 * await env.skipTime() // a week, at once
 * await env.shutdown()
 * ```
 */
export declare class TestEnv {
  private constructor()
  /** A fresh environment; register on `env.runtime`, then `await env.start()`. */
  static create(options?: TestEnvOptions): Promise<TestEnv>
  /** The runtime to register orchestrations and activities on. */
  readonly runtime: Runtime
  /** A client on the environment's store. */
  readonly client: Client
  /** The in-memory store (another `Client` may be opened on it). */
  readonly provider: SqliteProvider
  /** Starts `env.runtime`. */
  start(): Promise<void>
  /** Virtual now: wall time plus every advance so far. */
  now(): Date
  /** Timers scheduled that virtual time has not reached. */
  pendingTimers(): number
  /**
   * Runs `fn` instead of the activity `name`. A registered activity may be
   * mocked before or after `start()`; one that is not registered only before
   * (`ERR_RUNTIME_STATE` after). Returns the environment.
   */
  mockActivity<In = any, Out = any>(name: string, fn: ActivityFunction<In, Out>): this
  /**
   * Runs `fn` instead of the activity `activity` defines: the mock takes the
   * definition's input and returns its output type, so it cannot drift from
   * what it replaces.
   */
  mockActivity<TIn, TOut>(
    activity: ActivityDefinition<TIn, TOut>,
    fn: (ctx: ActivityContext, input: NoInfer<TIn>) => NoInfer<TOut> | PromiseLike<NoInfer<TOut>>,
  ): this
  /**
   * Moves virtual time forward by `duration`, firing the timers it passes in
   * due order, each once nothing else can run; resolves to the new virtual now
   * once their turns have run.
   */
  advance(duration: TestDuration): Promise<Date>
  /**
   * Once nothing else can run, jumps to the earliest pending timer, fires it
   * (and any due at the same time) and waits until nothing can run again.
   * Resolves to the time jumped to, or `null` when no timer was pending.
   */
  skipTime(): Promise<Date | null>
  /** Resolves once no message is queued and nothing is in flight. */
  waitIdle(): Promise<void>
  /** Shuts the runtime down and drops pending timers; calling it again does nothing. */
  shutdown(timeoutMs?: number): Promise<void>
}
