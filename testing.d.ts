// Types of `duroxide-node/testing` (CommonJS).
import type { ExportedHistory, HistoryEvent, Provider, Runtime } from './index'

/** Where today's orchestration code and a recorded history part. */
export interface ReplayDivergence {
  /**
   * Index into the history of the first event that does not replay; the
   * history's length when a running history ends where the code already
   * completes.
   */
  index: number
  /**
   * The `eventId` of that event, as `readExecutionHistory` and the CLI's
   * `history` number it (the next id past the end of a running history);
   * `message` names this number.
   */
  eventId: number
  /** The history's event there (absent past the end of a running history). */
  recorded?: HistoryEvent
  /**
   * The event the code would record there instead: what it schedules, or how
   * it ends (`OrchestrationCompleted`, `OrchestrationFailed`,
   * `OrchestrationContinuedAsNew`). Absent when it schedules nothing and waits.
   */
  scheduled?: HistoryEvent
  /** Says both, e.g. "at event 4 the history has activity 'Charge' ..., but the code schedules a timer". */
  message: string
}

/** The result of one replay check. */
export interface ReplayResult {
  /** True when the code replays the whole history. */
  ok: boolean
  /** Set when `ok` is false. */
  divergence?: ReplayDivergence
}

/** The result of one stored instance in `replayInstances`. */
export interface InstanceReplayResult extends ReplayResult {
  instanceId: string
  /** The execution replayed (the instance's current one). */
  executionId: number
}

export interface ReplayHistoryOptions {
  /** Whose history a `readExecutionHistory` list is (default `'replay'`); the code sees it as `ctx.instanceId`. */
  instanceId?: string
  /** Which execution it is (default 1). */
  executionId?: number
}

export interface ReplayInstancesOptions {
  /** Only instances whose current execution has this status. */
  status?: 'Running' | 'Completed' | 'Failed' | 'ContinuedAsNew'
  /** At most this many instances (newest first). */
  limit?: number
}

/**
 * Replays one execution's history against the orchestrations registered on
 * `runtime` (not started; a started one is left undisturbed) and resolves
 * with the first divergence, if any. `history` is `client.exportHistory(...)`
 * (the object or its JSON text: lossless) or `client.readExecutionHistory(...)`
 * (then `options` says whose it is). No activity runs: one the history
 * scheduled and did not complete stays scheduled. Nothing is written.
 * Rejects with ERR_INVALID_ARGUMENT for a history it cannot read.
 */
export declare function replayHistory(
  runtime: Runtime,
  history: ExportedHistory | HistoryEvent[] | string,
  options?: ReplayHistoryOptions,
): Promise<ReplayResult>

/**
 * Replays the current execution of each stored instance (newest first)
 * against `runtime`'s orchestrations: the deploy gate. Reads only.
 */
export declare function replayInstances(
  provider: Provider,
  runtime: Runtime,
  options?: ReplayInstancesOptions,
): Promise<InstanceReplayResult[]>

/**
 * An exported history from its JSON text (e.g. a file captured from
 * production) or the parsed object, checked; throws ERR_INVALID_ARGUMENT
 * naming what is wrong. `replayHistory` accepts the result.
 */
export declare function importHistory(json: string | ExportedHistory): ExportedHistory

export type { TestDuration, TestEnvOptions } from './types/testing-env'
export { TestEnv } from './types/testing-env'
