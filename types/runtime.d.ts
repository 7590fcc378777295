// Runtime (lib/runtime.js).
import type { FastPathsReport } from './providers'
import type { ActivityFunction } from './activity'
import type { EffectiveOptions, RuntimeOptions } from './options'
import type { OrchestrationFunction } from './orchestration'
import type { Provider } from './providers'
import type { AnyDefinition } from './definitions'
import { registeredDefinitions } from './definitions'

/** Counters of a runtime (`runtime.metricsSnapshot()`), cumulative since start. */
export interface MetricsSnapshot {
  /** Orchestration executions started. */
  orchStarts: number
  /** Orchestrations completed successfully. */
  orchCompletions: number
  /** Orchestrations failed, of any category. */
  orchFailures: number
  /** Failures raised by orchestration code. */
  orchApplicationErrors: number
  /** Failures of the runtime or the store. */
  orchInfrastructureErrors: number
  /** Failures from configuration (e.g. an unregistered name or version). */
  orchConfigurationErrors: number
  /** Orchestration messages given up on after `maxAttempts`. */
  orchPoison: number
  /** Activities that returned a value. */
  activitySuccess: number
  /** Activities that threw. */
  activityAppErrors: number
  /** Activity failures of the runtime or the store. */
  activityInfraErrors: number
  /** Activity failures from configuration. */
  activityConfigErrors: number
  /** Activity messages given up on after `maxAttempts`. */
  activityPoison: number
  /** Messages the orchestration dispatcher fetched. */
  orchDispatcherItemsFetched: number
  /** Messages the activity dispatcher fetched. */
  workerDispatcherItemsFetched: number
  /** Continue-as-new transitions. */
  orchContinueAsNew: number
  /** Sub-orchestrations scheduled. */
  suborchestrationCalls: number
  /** Errors returned by the store. */
  providerErrors: number
  // The binding's guard (a decorator around the store) adds these.
  /** Orchestration acks that failed with "Invalid lock token": the lease expired before the turn committed. */
  invalidLockTokenAcks: number
  /** Activity acks that failed because the activity's lock was lost. */
  workLockLostAcks: number
  /** Messages failed as poison (fetched more than `maxAttempts` times). */
  poisonDispositions: number
  /** Store calls retried after a Postgres deadlock (40P01). */
  deadlockRetries: number
  /** Orchestration locks the runtime dropped after a failed ack and the guard handed back. */
  orphanedLocksReleased: number
  /** Instances the watchdog found livelocked (retried without ever committing). */
  livelocksDetected: number
  /** Median orchestration fetch time over the last minute, in ms; absent without fetches. */
  orchFetchP50Ms?: number
  /** 99th-percentile orchestration fetch time over the last minute, in ms; above 1000 the runtime is `degraded`. */
  orchFetchP99Ms?: number
  /** Orchestration fetches behind the percentiles. */
  orchFetchSamples: number
  /** 99th-percentile wait for a fetch slot (`maxConcurrentOrchestrationFetches`) over the last minute, in ms. */
  orchFetchWaitP99Ms?: number
  /** Median activity fetch time over the last minute, in ms. */
  workFetchP50Ms?: number
  /** 99th-percentile activity fetch time over the last minute, in ms. */
  workFetchP99Ms?: number
  /** Activity fetches behind the percentiles. */
  workFetchSamples: number
  /**
   * Turns not committed because their code did not replay the instance's
   * history (`onNondeterminism: 'hold'`). duroxide counts each as a
   * configuration failure before the guard keeps it from committing;
   * `orchFailures` and `orchConfigurationErrors` above leave them out.
   */
  nondeterminismHolds: number
  /** The instances held by `onNondeterminism: 'hold'` now, sorted. */
  heldInstances: string[]
}

/** Kinds of guard events a runtime reports through `on()`. */
export type RuntimeEventType = 'poison' | 'lockLost' | 'livelock' | 'unregistered' | 'nondeterminism'

/** What a `runtime.on(type, listener)` listener receives. */
export interface RuntimeEvent {
  /**
   * `'poison'`: a message failed for exceeding `maxAttempts` (every one is
   * reported). `'lockLost'`: an ack failed because its lock expired first.
   * `'livelock'`: the watchdog saw an instance's messages retried without
   * ever committing. `lockLost` and `livelock` are reported once per instance.
   * `'unregistered'`: work arrived for an activity or orchestration name this
   * runtime has no handler for (first occurrence per name; the instance stays
   * `Running` and `health()` is degraded while it keeps arriving).
   * `'nondeterminism'`: a turn's code did not replay the instance's history
   * (`divergence` says where); with `onNondeterminism: 'hold'` the instance
   * stays `Running` and the turn is retried until code that replays it runs
   * (`held: true`), else it failed (`held: false`). Reported once per
   * instance and divergence.
   */
  type: RuntimeEventType
  /** The instance whose message it is. */
  instanceId: string
  /** `'orchestrator'` (orchestration turns) or `'worker'` (activities). */
  queue: 'orchestrator' | 'worker'
  /** How many times the message was fetched, when known. */
  attemptCount?: number
  /** The runtime's `maxAttempts`. */
  maxAttempts: number
  /** The likely cause and what to look at, in words. */
  cause: string
  /** `'unregistered'`: the missing name. */
  name?: string
  /** `'unregistered'`: what kind of handler is missing. */
  kind?: 'activity' | 'orchestration'
  /** `'nondeterminism'`: true when the instance is held (`onNondeterminism: 'hold'`), false when it failed. */
  held?: boolean
  /**
   * `'nondeterminism'`: where the code and the history part, in the replay
   * check's words (`at event 3 the history has activity 'Charge' (...), but
   * the code schedules a timer`).
   */
  divergence?: string
}

/** `runtime.health()`: `degraded` when something went wrong within the last minute. */
export interface RuntimeHealth {
  status: 'ok' | 'degraded'
  /** Why it is degraded, in words; empty when `ok`. */
  reasons: string[]
  /** The provider's fast store paths (`provider.fastPaths()`). */
  fastPaths?: FastPathsReport
}

/**
 * Runs registered orchestrations and activities against a provider. Register
 * everything, then `start()`; `shutdown()` when done. Registrations belong to
 * this Runtime: two Runtimes may register different functions under one name.
 * Registered names are identifiers (`MAX_IDENTIFIER_BYTES`): another string
 * throws `InvalidArgumentError` (`ERR_INVALID_ARGUMENT`) at the call.
 */
export declare class Runtime<TRegistered extends AnyDefinition = never> {
  /**
   * @internal what `register` registered (types only; see `Registered<typeof rt>`).
   * In a parameter's place, so that a plain `Runtime` (`Runtime<never>`)
   * accepts a runtime that registered anything.
   */
  readonly [registeredDefinitions]?: (registered: TRegistered) => void
  /**
   * Validates `options` at once: an unknown or invalid option throws
   * `InvalidOptionError` naming it. Nothing starts until `start()`.
   */
  constructor(provider: Provider, options?: RuntimeOptions)

  /**
   * Registers typed definitions (`defineActivity`, `defineOrchestration`).
   * Returns the runtime, typed with what it registered so that
   * `new Client<Registered<typeof rt>>(provider)` only starts those.
   */
  register<const D extends readonly AnyDefinition[]>(...definitions: D): Runtime<TRegistered | D[number]>

  /** Registers an activity under `name`. Returns the runtime for chaining. */
  registerActivity<TInput = any, TOutput = any>(name: string, fn: ActivityFunction<TInput, TOutput>): this
  /**
   * Registers a generator function (`function*`) as orchestration `name`,
   * version `1.0.0`. An async or plain function is rejected here with
   * `InvalidArgumentError` naming the orchestration: orchestrations `yield`
   * tasks, they do not `await`.
   */
  registerOrchestration<TInput = any, TOutput = any>(name: string, fn: OrchestrationFunction<TInput, TOutput>): this
  /**
   * Registers one semver `version` of orchestration `name`. New instances
   * start on the highest version; an instance keeps the version it started on.
   */
  registerOrchestrationVersioned<TInput = any, TOutput = any>(
    name: string,
    version: string,
    fn: OrchestrationFunction<TInput, TOutput>,
  ): this
  /** Same as `registerActivity`. */
  registerActivityTyped<TInput = any, TOutput = any>(name: string, fn: ActivityFunction<TInput, TOutput>): this
  /** Same as `registerOrchestration`. */
  registerOrchestrationTyped<TInput = any, TOutput = any>(name: string, fn: OrchestrationFunction<TInput, TOutput>): this
  /** Same as `registerOrchestrationVersioned`. */
  registerOrchestrationVersionedTyped<TInput = any, TOutput = any>(
    name: string,
    version: string,
    fn: OrchestrationFunction<TInput, TOutput>,
  ): this

  /** Resolves once dispatching has begun; rejects with `RuntimeStateError` if started twice or after shutdown. */
  start(): Promise<void>
  /**
   * Stops fetching, lets in-flight work finish for at most `timeoutMs`
   * (default 1000), aborts remaining activities' signals, and resolves as
   * soon as work is drained. Safe to call twice or before `start()` settled.
   */
  shutdown(timeoutMs?: number): Promise<void>
  /** The runtime's counters, or `null` before `start()`; the final ones after shutdown. */
  metricsSnapshot(): MetricsSnapshot | null
  /**
   * Prometheus text exposition (format 0.0.4) to serve at `/metrics`:
   * duroxide's series (`duroxide_*`, process-wide: the metrics recorder is
   * one per process) and this runtime's guard counters and fetch latencies
   * (`duroxide_node_*`). Valid before `start()` and after shutdown.
   */
  metricsText(): string
  /** Every option as handed to duroxide, defaults filled in; available before and after `start()`. */
  effectiveOptions(): EffectiveOptions
  /**
   * Subscribes to guard events. A listener that throws does not affect the
   * runtime or other listeners (its error becomes a process warning).
   * Returns the runtime.
   */
  on(event: RuntimeEventType, listener: (event: RuntimeEvent) => void): this
  /** Removes a listener added with `on()`. Returns the runtime. */
  off(event: RuntimeEventType, listener: (event: RuntimeEvent) => void): this
  /** Whether the runtime ran cleanly over the last minute, with the reasons if not. */
  health(): RuntimeHealth
}

// Only the declarations marked `export` above are exported.
export {}
