// Runtime options: every field of duroxide's `RuntimeOptions` (and its nested
// `ObservabilityConfig` / `UnregisteredBackoffConfig`) plus the binding's own.
// Validation lives in src/options.rs; these docs mirror its rules and defaults.

/** Log output shape of the runtime's subscriber. */
export type LogFormat = 'json' | 'pretty' | 'compact'

/** Verbosity of user traces and duroxide's orchestration/activity logs; matched case-insensitively. */
export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'off'

/**
 * Which activities this runtime's workers process, by routing tag
 * (see `ActivityTask.withTag`).
 * - `'defaultOnly'`: only untagged activities (the default).
 * - `'any'`: every activity, tagged or not.
 * - `'none'`: no activities at all (orchestrator-only node).
 * - `{ tags }`: only activities carrying one of these tags.
 * - `{ defaultAnd }`: untagged activities and those carrying one of these tags.
 *
 * A tag list holds 1 to `MAX_WORKER_TAGS` distinct non-empty strings of at
 * most `MAX_TAG_NAME_BYTES` bytes each.
 */
export type WorkerTagFilter =
  | 'defaultOnly'
  | 'any'
  | 'none'
  | { tags: string[]; defaultAnd?: undefined }
  | { defaultAnd: string[]; tags?: undefined }

/**
 * Options of `new Runtime(provider, options)`. Every field is optional: an
 * omitted or `undefined` field keeps the crate default. Durations are integer
 * milliseconds. Anything invalid (an unknown name, a wrong type, a negative
 * or fractional number, an unknown enum string, too many tags, both
 * concurrencies 0, an explicit renewal buffer not smaller than a lock
 * timeout of 15 s or more) throws an `InvalidOptionError`
 * (`ERR_INVALID_OPTION`) from the constructor, naming the field; nothing is
 * clamped or coerced.
 */
export interface RuntimeOptions {
  /**
   * Orchestration dispatcher slots: how many orchestration turns run at once.
   * Integer >= 0; 0 makes a worker-only runtime (dedicated activity pods).
   * Not 0 together with `workerConcurrency`. Default 2.
   */
  orchestrationConcurrency?: number | undefined
  /**
   * Activity worker slots: how many activities run at once. Integer >= 0; 0
   * makes an orchestrator-only runtime. Not 0 together with
   * `orchestrationConcurrency`. Default 2.
   */
  workerConcurrency?: number | undefined
  /**
   * Minimum idle polling cycle of a dispatcher, in ms: when the provider
   * reports no work sooner than this, the dispatcher sleeps the remainder.
   * Integer >= 1. Default 100.
   */
  dispatcherPollIntervalMs?: number | undefined
  /**
   * Longest time an idle fetch waits for work, in ms: both stores long-poll
   * (woken by enqueues in this process, by Postgres LISTEN/NOTIFY from other
   * processes, at timers' due times, and at least every second). Integer >= 0.
   * Default 30000.
   */
  dispatcherLongPollTimeoutMs?: number | undefined
  /**
   * Lease of a fetched orchestration message, in ms. A turn that neither acks
   * nor renews within it loses its lock (acks then fail with "Invalid lock
   * token") and the message is retried. Must be >= 2000 unless
   * `allowUnrenewableLocks`. Default 5000.
   */
  orchestratorLockTimeoutMs?: number | undefined
  /**
   * How long before the orchestration lock expires it is renewed, in ms
   * (used for timeouts >= 15 s, where it must be smaller than the timeout;
   * shorter timeouts renew at half the timeout and ignore it). Default 2000.
   */
  orchestratorLockRenewalBufferMs?: number | undefined
  /**
   * Lease of a fetched activity message, in ms; renewed while the activity
   * runs. Must be >= 2000 unless `allowUnrenewableLocks`. Default 30000.
   */
  workerLockTimeoutMs?: number | undefined
  /**
   * How long before the activity lock expires it is renewed, in ms (used for
   * timeouts >= 15 s, where it must be smaller than the timeout; shorter
   * timeouts renew at half the timeout and ignore it). Default 5000.
   */
  workerLockRenewalBufferMs?: number | undefined
  /**
   * Derived, read-only: the renewal interval in force for each kind of lock
   * (`timeout - buffer` from 15 s on, else half the timeout rounded up to whole
   * seconds, at least 1 s), as `effectiveOptions()` reports it. Accepted back
   * only unchanged, so `new Runtime(p, rt.effectiveOptions())` works.
   */
  lockRenewalIntervalsMs?: { orchestrator: number; worker: number; session: number } | undefined
  /**
   * Fetch attempts after which a message is poison: its orchestration or
   * activity fails with a poison error instead of being retried forever.
   * Integer >= 1. Default 10.
   */
  maxAttempts?: number | undefined
  /**
   * After an orchestration ends, how long its in-flight activities may keep
   * running (their `ctx.signal` is aborted) before they are dropped, in ms.
   * Integer >= 0. Default 10000.
   */
  activityCancellationGracePeriodMs?: number | undefined
  /**
   * Backoff for work addressed to an orchestration or activity this runtime
   * has not registered (rolling deployments): the message is abandoned with
   * exponential delay from `baseDelayMs` (default 1000) up to `maxDelayMs`
   * (default 60000). Either field may be omitted.
   */
  unregisteredBackoff?: { baseDelayMs?: number | undefined; maxDelayMs?: number | undefined } | undefined
  /**
   * Replay-engine versions this node accepts, as semver strings (both
   * required, `min <= max`). `null`/omitted: from 0.0.0 up to the version of
   * the bundled duroxide crate.
   */
  supportedReplayVersions?: { min: string; max: string } | null | undefined
  /** Heartbeat lease of an owned session, in ms; a crashed worker's sessions become claimable after it. Must be >= 2000 unless `allowUnrenewableLocks`. Default 30000. */
  sessionLockTimeoutMs?: number | undefined
  /** How long before a session lease expires it is renewed, in ms (used for timeouts >= 15 s, where it must be smaller than the timeout). Default 5000. */
  sessionLockRenewalBufferMs?: number | undefined
  /**
   * How long a session stays pinned to this runtime after its last activity,
   * in ms. Must exceed `workerLockTimeoutMs - workerLockRenewalBufferMs`.
   * Default 300000.
   */
  sessionIdleTimeoutMs?: number | undefined
  /** How often orphaned session rows are swept, in ms. Integer >= 1. Default 300000. */
  sessionCleanupIntervalMs?: number | undefined
  /** Most distinct sessions this runtime owns at once, across all worker slots. Integer >= 1. Default 10. */
  maxSessionsPerRuntime?: number | undefined
  /**
   * Stable worker identity for session ownership (e.g. a StatefulSet pod
   * name): all worker slots share it, and a restarted worker reclaims its
   * sessions at once. `null`/omitted: an ephemeral identity per slot.
   */
  workerNodeId?: string | null | undefined
  /**
   * Which activities this runtime's workers process; see `WorkerTagFilter`.
   * The legacy flat form `'tags' | 'defaultAnd'` takes its list from
   * `workerTagFilterTags`. Default `'defaultOnly'`.
   */
  workerTagFilter?: WorkerTagFilter | 'tags' | 'defaultAnd' | undefined
  /**
   * Legacy: the tag list of `workerTagFilter: 'tags' | 'defaultAnd'`; an
   * error with any other `workerTagFilter`. Prefer `{ tags: [...] }`.
   */
  workerTagFilterTags?: string[] | undefined
  /** Shape of the stderr log lines (when `initTracing` did not install a file subscriber first). Default `'pretty'`. */
  logFormat?: LogFormat | undefined
  /** Log verbosity; matched case-insensitively. `RUST_LOG` overrides it. Default `'info'`. */
  logLevel?: LogLevel | Uppercase<LogLevel> | undefined
  /** Service name in logs and metrics; non-empty. Default `'duroxide'`. */
  serviceName?: string | undefined
  /** Service version in logs and metrics. `null`/omitted: none. */
  serviceVersion?: string | null | undefined
  /** How often gauge metrics (queue depths, active orchestrations) are refreshed from the provider, in ms. Integer >= 1. Default 60000. */
  gaugePollIntervalMs?: number | undefined
  /**
   * Binding option. Lets lock timeouts under 2000 ms, and renewal buffers not
   * smaller than their timeout, pass validation, for tests that want leases
   * to expire. Never needed in production. Default `false`.
   */
  allowUnrenewableLocks?: boolean | undefined
  /**
   * Binding option. Most orchestration fetch calls in flight at once per
   * runtime: more than one makes Postgres dispatchers queue on each other's
   * advisory locks. Integer >= 1. Default 1 on Postgres; on SQLite
   * `orchestrationConcurrency` (no cap: SQLite has no such queue, and a cap
   * makes dispatchers wait behind each other's slow fetches).
   */
  maxConcurrentOrchestrationFetches?: number | undefined
  /** Binding option. Most activity fetch calls in flight at once per runtime; 0 means no cap. Integer >= 0. Default 0. */
  maxConcurrentWorkFetches?: number | undefined
  /**
   * Binding option. How often the livelock watchdog looks for messages that
   * are retried without ever committing (reported once per instance as a
   * `livelock` event and an error log line; it never changes data), in ms.
   * 0 disables it. Integer >= 0. Default 10000.
   */
  watchdogIntervalMs?: number | undefined
  /**
   * Binding option. How many orchestration generators a runtime keeps alive
   * between turns (least recently used evicted first). A cached generator
   * resumes at its pending step, so a turn runs JS only for steps it has not
   * run yet instead of replaying the whole history through the generator.
   * Entries are dropped on completion, failure, continue-as-new and
   * shutdown; any difference between the cached step log and the history
   * falls back to a full replay. 0 turns the cache off. Integer >= 0.
   * Default 1000.
   */
  orchestrationCacheSize?: number | undefined
  /**
   * Binding option. What `Date.now()`, `new Date()` (no arguments) and
   * `Math.random()` do while this runtime runs a step of an orchestration
   * generator, where they break replay: `'warn'` logs a warning naming the
   * instance and the replacement (`ctx.utcNow()`, `ctx.newGuid()`), once per
   * orchestration name and call; `'throw'` throws `NondeterministicError`
   * at the call; `'off'` leaves them alone. The globals are patched only
   * while a step runs. Default `'warn'`.
   */
  determinismGuard?: DeterminismGuard | undefined
  /**
   * Binding option. The largest payload, in bytes of JSON text, this
   * runtime's orchestrations may hand on or produce: a task's input
   * (`scheduleActivity`, sub-orchestrations, `startOrchestration`,
   * `continueAsNew`) over it throws `InvalidArgumentError`
   * (`ERR_INVALID_ARGUMENT`, naming the input) at the call that makes the
   * task; an activity result over it fails the activity (not retried), and
   * an orchestration output over it fails the orchestration, each with an
   * error giving the size and the limit. Clients have the same option
   * (`ClientOptions`) for inputs and events. Integer from 1 to 134217728
   * (128 MiB: a payload is stored escaped inside a JSON document, and
   * Postgres refuses JSON values over 255 MB). Default 16777216 (16 MiB).
   */
  maxPayloadBytes?: number | undefined
  /**
   * Binding option. What the runtime does with a turn whose code does not
   * replay the instance's history (code changed under running instances):
   *
   * - `'fail'`: the instance fails, as duroxide fails it (category
   *   `configuration`).
   * - `'hold'`: nothing of the turn is committed; the instance stays
   *   `Running` and the turn is retried on the `unregisteredBackoff` schedule
   *   (without counting toward `maxAttempts`) until code that replays it runs
   *   here. Deploy the previous code (or the change as a new orchestration
   *   version) and the instance goes on where it was.
   *
   * Either way the failure message or warning is the replay check's sentence
   * (`at event 3 the history has activity 'Charge' (...), but the code
   * schedules a timer`), the runtime emits a `'nondeterminism'` event, and
   * held turns are counted (`nondeterminismHolds`, `heldInstances`,
   * `duroxide_node_instance_held{instance_id}`). Default `'fail'`.
   */
  onNondeterminism?: NondeterminismPolicy | undefined
  /**
   * Binding option. When an execution's history passes this many events,
   * the runtime logs one WARN per instance (per runtime) naming the
   * instance and suggesting `ctx.continueAsNew`: every turn reads, and
   * without a cached generator replays, its execution's whole history, so a
   * history that keeps growing makes each turn of the instance slower
   * (docs/performance.md#scale). 0 disables the warning. Integer >= 0.
   * Default 10000 (as Temporal).
   */
  historyWarnEvents?: number | undefined
}

/**
 * `new Client(provider, options)`. Invalid options throw
 * `InvalidOptionError` (`ERR_INVALID_OPTION`) from the constructor.
 */
export interface ClientOptions {
  /**
   * The largest input (`startOrchestration`) or event data (`raiseEvent`,
   * `enqueueEvent`), in bytes of JSON text; a larger one is refused at the
   * call with `InvalidArgumentError` (`ERR_INVALID_ARGUMENT`) naming `input`
   * or `data`, and nothing is stored. Integer from 1 to 134217728. Default
   * 16777216 (16 MiB), as `RuntimeOptions.maxPayloadBytes`.
   */
  maxPayloadBytes?: number | undefined
}

/** `RuntimeOptions.determinismGuard`. */
export type DeterminismGuard = 'warn' | 'throw' | 'off'

/** `RuntimeOptions.onNondeterminism`. */
export type NondeterminismPolicy = 'fail' | 'hold'

/** Every field present, `undefined` removed (`null` stays where it means "unset"). */
type Filled<T> = { [K in keyof T]-?: Exclude<T[K], undefined> }

/**
 * What `runtime.effectiveOptions()` returns: every option as handed to
 * duroxide, defaults filled in (fields carry the docs of `RuntimeOptions`).
 * The legacy `workerTagFilterTags` is folded into `workerTagFilter`, so the
 * object can be passed back to `new Runtime()` unchanged.
 */
export interface EffectiveOptions
  extends Filled<Omit<RuntimeOptions, 'unregisteredBackoff' | 'workerTagFilter' | 'workerTagFilterTags' | 'logLevel'>> {
  /** Delays of the unregistered-handler backoff, in ms. */
  unregisteredBackoff: { baseDelayMs: number; maxDelayMs: number }
  /** Which activities the workers process; tag lists come back sorted. */
  workerTagFilter: WorkerTagFilter
  /** The log level, lower-cased. */
  logLevel: LogLevel
}

// Only the declarations marked `export` above are exported.
export {}
