// Activity side (lib/activity-context.js).
import type { Client } from './client'
import type { ContextLog, TraceContext } from './tracing'

/** The first argument of an activity function. */
export declare class ActivityContext {
  private constructor()
  /** The orchestration instance that scheduled this activity. */
  readonly instanceId: string
  /** That instance's execution number. */
  readonly executionId: number
  /** The scheduling orchestration's name. */
  readonly orchestrationName: string
  /** The scheduling orchestration's version. */
  readonly orchestrationVersion: string
  /** The registered activity name. */
  readonly activityName: string
  /** The worker slot running the activity. */
  readonly workerId: string
  /** The session the activity was scheduled on, or `null`. */
  readonly sessionId: string | null
  /**
   * Aborts when the activity is cancelled: its task lost a `race`, its
   * orchestration ended, or the runtime shuts down. Pass it on
   * (`fetch(url, { signal: ctx.signal })`) so cancelled work stops.
   */
  readonly signal: AbortSignal

  /** The routing tag the activity was scheduled with (`withTag`), or `null`. */
  tag(): string | null
  /** True once the activity is cancelled (see `signal`). */
  isCancelled(): boolean
  /** A `Client` on the same provider as the runtime running this activity. */
  getClient(): Client
  /** Structured logs with the activity's correlation fields (`ctx.log.warn('retrying', { attempt })`). */
  readonly log: ContextLog
  /** The W3C trace context of the instance that scheduled the activity, or `null`. */
  readonly traceContext: TraceContext | null
  /** Logs at info level with the activity's context. */
  traceInfo(message: string): void
  /** Logs at warn level with the activity's context. */
  traceWarn(message: string): void
  /** Logs at error level with the activity's context. */
  traceError(message: string): void
  /** Logs at debug level with the activity's context. */
  traceDebug(message: string): void
}

/**
 * An activity: ordinary (usually async) code. Its return value, JSON-encoded,
 * is the task's result; throwing or rejecting fails it with the error's message.
 */
export type ActivityFunction<TInput = any, TOutput = any> = (
  ctx: ActivityContext,
  input: TInput,
) => TOutput | PromiseLike<TOutput>

// Only the declarations marked `export` above are exported.
export {}
