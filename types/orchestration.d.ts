// Orchestration side: tasks, retry policies and the OrchestrationContext
// (lib/tasks.js, lib/orchestration-context.js, lib/orchestration-typed.js).
import type {
  ActivityDefinition,
  EventDefinition,
  InputArgs,
  Jsonified,
  KeyDefinition,
  OrchestrationDefinition,
  StatusDefinition,
} from './definitions'
import type { ContextLog, TraceContext } from './tracing'

import type { ActivityFailedError, SubOrchestrationFailedError } from './errors'

// Phantom key carrying a task's result type. It is not exported, so only the
// context's methods can produce a Task: a hand-made object is not one.
declare const taskResult: unique symbol

/**
 * A durable operation created by an `OrchestrationContext` method. Nothing
 * happens until the orchestration generator `yield`s it; the `yield` then
 * evaluates to the result (`T`), or throws an `Error` whose message carries
 * the failure (activity error text, sub-orchestration failure, ...): an
 * `ActivityFailedError` / `SubOrchestrationFailedError` for those tasks.
 *
 * TypeScript cannot type the value of a `yield` expression per task (it is
 * `any`); `yield* task` is typed: it yields the same single task and
 * evaluates to `T`. Or annotate (`const n: number = yield task`).
 */
export interface Task<T = any> {
  /** @internal the result type; not a runtime property. */
  readonly [taskResult]: T
  /** `yield* task`: yields this task once and evaluates to its result, typed. */
  [Symbol.iterator](): Generator<Task<T>, T, any>
}

/** An activity task: can be routed to tagged workers before it is yielded. */
export interface ActivityTask<T = any> extends Task<T> {
  /** The worker tag set with `withTag`, or `undefined`. */
  readonly tag: string | undefined
  /**
   * Routes the activity to workers whose `workerTagFilter` accepts `tag`:
   * sets the tag on this task and returns this same task, so it chains into
   * a `yield`. It is typed as a plain `Task` because a second tag is refused
   * (one tag per activity). Not available with a retry policy (duroxide's
   * retries are untagged, so the pair is refused with `ERR_INVALID_ARGUMENT`),
   * which is why retrying methods return a plain `Task`. `tag` is an
   * identifier (`MAX_IDENTIFIER_BYTES`) of at most `MAX_TAG_NAME_BYTES`.
   */
  withTag(tag: string): Task<T>
}

/** The value a yielded task evaluates to: `TaskResult<typeof t>`. */
export type TaskResult<K> = K extends Task<infer R> ? R : never

/**
 * One element of an `all()` result: the task's value or its failure message.
 * A failed element also has `error` (not enumerable, so the element compares
 * and serializes as `{ err }`): the error a `yield` of that task would have
 * thrown, with `index` set.
 */
export type AllResult<T = any> =
  | { ok: T }
  | { err: string; readonly error?: ActivityFailedError | SubOrchestrationFailedError | Error }

/** The result of `race()`: the position of the first task to finish and its value. */
export interface RaceResult<T = any> {
  /** Index of the winning task in the arguments (or array) given to `race`. */
  index: number
  /** The winner's value; a failed winner makes the `yield` throw instead. */
  value: T
}

/** Delay growth between retry attempts, by name. */
export type BackoffKind = 'none' | 'fixed' | 'linear' | 'exponential'

/**
 * Backoff between attempts. The names use duroxide's defaults: `'none'`
 * retries at once, `'fixed'` waits 1 s, `'linear'` waits 100 ms × n before
 * retry n (30 s cap), `'exponential'` waits 100 ms × 2^(n-1) (30 s cap). The
 * object form sets the parameters.
 */
export type Backoff =
  | BackoffKind
  | { kind: 'none' }
  | {
      kind: 'fixed'
      /** Delay between attempts, in ms. Default 1000. */
      delayMs?: number | undefined
      /** Alias of `delayMs`. */
      baseMs?: number | undefined
    }
  | {
      kind: 'linear'
      /** Delay unit (multiplied by the attempt number), in ms. Default 100. */
      baseMs?: number | undefined
      /** Longest delay, in ms. Default 30000. */
      maxMs?: number | undefined
    }
  | {
      kind: 'exponential'
      /** First delay, in ms. Default 100. */
      baseMs?: number | undefined
      /** Growth factor, >= 1. Default 2. */
      multiplier?: number | undefined
      /** Longest delay, in ms. Default 30000. */
      maxMs?: number | undefined
    }

/** Retry policy of `scheduleActivityWithRetry`. */
export interface RetryPolicy {
  /** Attempts in total, including the first. Integer >= 1. */
  maxAttempts: number
  /** Timeout of each attempt, in ms. A timed-out attempt fails the task at once (only activity errors are retried). */
  timeoutMs?: number | undefined
  /** Legacy alias of `timeoutMs` (duroxide has one per-attempt timeout). */
  totalTimeoutMs?: number | undefined
  /** Delay between attempts. Default `'exponential'`. */
  backoff?: Backoff | undefined
}

/** `ctx.race(a, b, ...)`: `{ index, value }` discriminated by `index`, each `value` typed by its task. */
export type RaceOf<Ts extends readonly Task<any>[]> = {
  [K in keyof Ts]: { index: K extends `${infer N extends number}` ? N : number; value: TaskResult<Ts[K]> }
}[number]

/** `ctx.join([...])`: the tasks' values, position by position. */
export type JoinOf<Ts extends readonly Task<any>[]> = { -readonly [K in keyof Ts]: TaskResult<Ts[K]> }

/** Options of `ctx.call(activity, input, options)`. */
export interface CallOptions {
  /** Retries the activity per this policy before the task fails. */
  retry?: RetryPolicy | undefined
  /** Runs the activity on the worker that owns this session. */
  sessionId?: string | undefined
  /** Routes the activity to workers whose tag filter accepts it (not with `retry`). */
  tag?: string | undefined
}

/** Options of `ctx.callOrchestration(def, input, options)`. */
export interface CallOrchestrationOptions {
  /** The child's instance id (default: derived from the parent's). */
  instanceId?: string | undefined
}

/** Options of `scheduleActivity`. */
export interface ScheduleActivityOptions {
  /** Runs the activity on the worker that owns this session (session affinity). */
  sessionId?: string | undefined
}

/**
 * The first argument of an orchestration generator. Durable operations return
 * tasks to `yield`; the synchronous calls (custom status, KV, traces) are
 * replay-safe. Orchestration code must be deterministic: take time, random
 * ids and I/O from tasks (`utcNow`, `newGuid`, activities), never directly.
 *
 * Names, instance ids, session ids, tags and KV keys follow the identifier
 * rule (`MAX_IDENTIFIER_BYTES`: non-empty, well-formed Unicode, no control
 * characters, at most 1000 UTF-8 bytes), and a task's input JSON is at most
 * the runtime's `maxPayloadBytes`: a call breaking either throws
 * `InvalidArgumentError` (`ERR_INVALID_ARGUMENT`) naming the argument, as
 * the generator's own exception (uncaught, it fails the orchestration).
 * Custom status text and KV string values may not contain U+0000.
 */
export declare class OrchestrationContext<TInput = unknown> {
  private constructor()
  /** The instance being run. */
  readonly instanceId: string
  /** The execution number; it grows with each continue-as-new. */
  readonly executionId: number
  /** The registered orchestration name. */
  readonly orchestrationName: string
  /** The version this instance runs (it keeps the one it started on). */
  readonly orchestrationVersion: string
  /** True while the runtime replays history (traces are suppressed then). */
  readonly isReplaying: boolean

  /** Schedules an activity; the task yields its return value. `input` is sent as JSON (`undefined` as `null`). */
  scheduleActivity(name: string, input?: unknown, options?: ScheduleActivityOptions): ActivityTask<any>
  /** Schedules an activity on the worker that owns `sessionId`. */
  scheduleActivityOnSession(name: string, input: unknown, sessionId: string): ActivityTask<any>
  /** Schedules an activity that is retried per `retry` before the task fails. */
  scheduleActivityWithRetry(name: string, input: unknown, retry: RetryPolicy): Task<any>
  /** `scheduleActivityWithRetry` with session affinity. */
  scheduleActivityWithRetryOnSession(name: string, input: unknown, retry: RetryPolicy, sessionId: string): Task<any>

  /** A durable timer of `delayMs` (integer ms >= 0); yields `null` when it fires. */
  scheduleTimer(delayMs: number): Task<null>
  /**
   * Waits for a one-shot event raised with `client.raiseEvent`; yields its
   * data. An event raised while no such wait is open is dropped (duroxide's
   * semantics, kept for existing code); `waitFor(defineEvent(...))` keeps it.
   */
  waitForEvent(name: string): Task<any>
  /** Takes the next message of a persistent FIFO mailbox (`client.enqueueEvent`); it survives continue-as-new. */
  dequeueEvent(queueName: string): Task<any>

  /** Runs a child orchestration (latest version) and yields its output; its failure makes the `yield` throw. */
  scheduleSubOrchestration(name: string, input?: unknown): Task<any>
  /** `scheduleSubOrchestration` with a chosen child instance id. */
  scheduleSubOrchestrationWithId(name: string, instanceId: string, input?: unknown): Task<any>
  /** `scheduleSubOrchestration` pinned to a semver `version`. */
  scheduleSubOrchestrationVersioned(name: string, version: string, input?: unknown): Task<any>
  /** `scheduleSubOrchestration` with a version and a child instance id. */
  scheduleSubOrchestrationVersionedWithId(name: string, version: string, instanceId: string, input?: unknown): Task<any>

  /** Starts an independent root instance (fire-and-forget); yields `null`. */
  startOrchestration(name: string, instanceId: string, input?: unknown): Task<null>
  /** `startOrchestration` pinned to a semver `version`. */
  startOrchestrationVersioned(name: string, version: string, instanceId: string, input?: unknown): Task<null>

  /** A deterministic UUID string (the same on every replay). */
  newGuid(): Task<string>
  /** The current time in epoch ms, recorded once and replayed. */
  utcNow(): Task<number>

  /**
   * Restarts this instance with `input` and a fresh history; the `yield` never
   * returns. In a typed orchestration `input` has the orchestration's input type.
   */
  continueAsNew(...input: InputArgs<TInput>): Task<never>
  /** `continueAsNew` onto another registered semver `version`. */
  continueAsNewVersioned(input: TInput, version: string): Task<never>

  /** Reads another instance's KV value; yields the string or `null`. */
  getValueFromInstance(instanceId: string, key: string): Task<string | null>

  /**
   * Waits for every task; yields one `{ ok: value } | { err: message }` per
   * task, in task order. Never throws for a failed task.
   */
  all(tasks: readonly Task<any>[]): Task<AllResult<any>[]>
  /**
   * Yields `{ index, value }` of the first task to finish; the others are
   * cancelled (an activity's `ctx.signal` aborts). Takes tasks as arguments
   * or as one array; at least one. `all` and `race` nest in each other.
   */
  race<const Ts extends readonly [Task<any>, ...Task<any>[]]>(...tasks: Ts): Task<RaceOf<Ts>>
  race(first: Task<any>, ...rest: Task<any>[]): Task<RaceResult<any>>
  race(tasks: readonly Task<any>[]): Task<RaceResult<any>>

  // ---- typed definitions (defineActivity, defineEvent, defineOrchestration) ----
  /**
   * Runs an activity definition: `yield* ctx.call(charge, order)` is the
   * activity's output as it survives JSON. Same task as `scheduleActivity`
   * (`scheduleActivityWithRetry[OnSession]` with `retry`).
   */
  call<I, O>(activity: ActivityDefinition<I, O>, input: NoInfer<I>, options?: CallOptions): Task<Jsonified<O>>
  /** Runs a child orchestration definition (its pinned version, if any) and yields its output. */
  callOrchestration<I, O>(orchestration: OrchestrationDefinition<I, O, any>, input: NoInfer<I>, options?: CallOrchestrationOptions): Task<Jsonified<O>>
  /** Starts an independent instance of a definition (fire-and-forget); yields `null`. */
  startDetached<I>(orchestration: OrchestrationDefinition<I, any, any>, instanceId: string, input: NoInfer<I>): Task<null>
  /** A durable timer of `delayMs`; yields `null` (same as `scheduleTimer`). */
  timer(delayMs: number): Task<null>
  /**
   * Takes the next event `client.raise` sent for this definition; yields its
   * payload. Events are kept in order until a wait takes them (also across
   * continue-as-new), so one raised before the wait is not lost; a wait that
   * loses a `race` takes nothing.
   */
  waitFor<T>(event: EventDefinition<T>): Task<Jsonified<T>>
  /** Takes the next message of an event definition's mailbox (`client.enqueue`). */
  dequeue<T>(event: EventDefinition<T>): Task<Jsonified<T>>
  /**
   * Waits for every task and yields their values as a tuple
   * (`const [r, t] = yield* ctx.join([ctx.call(charge, o), ctx.timer(10)])`).
   * Once all are done, throws the first failure in task order, as that task
   * alone would. `all()` is the variant that never throws (`{ ok } | { err }`).
   */
  join<const Ts extends readonly Task<any>[]>(tasks: Ts): Task<JoinOf<Ts>>

  // Typed variants: the same tasks, with result types for TaskResult<> and docs.
  /** `scheduleActivity` with typed input and result. */
  scheduleActivityTyped<TIn = any, TOut = any>(name: string, input: TIn, options?: ScheduleActivityOptions): ActivityTask<TOut>
  /** `scheduleActivityOnSession` with typed input and result. */
  scheduleActivityOnSessionTyped<TIn = any, TOut = any>(name: string, input: TIn, sessionId: string): ActivityTask<TOut>
  /** `scheduleActivityWithRetry` with typed input and result. */
  scheduleActivityWithRetryTyped<TIn = any, TOut = any>(name: string, input: TIn, retry: RetryPolicy): Task<TOut>
  /** `scheduleActivityWithRetryOnSession` with typed input and result. */
  scheduleActivityWithRetryOnSessionTyped<TIn = any, TOut = any>(name: string, input: TIn, retry: RetryPolicy, sessionId: string): Task<TOut>
  /** `scheduleSubOrchestration` with typed input and output. */
  scheduleSubOrchestrationTyped<TIn = any, TOut = any>(name: string, input: TIn): Task<TOut>
  /** `scheduleSubOrchestrationWithId` with typed input and output. */
  scheduleSubOrchestrationWithIdTyped<TIn = any, TOut = any>(name: string, instanceId: string, input: TIn): Task<TOut>
  /** `waitForEvent` with a typed payload. */
  waitForEventTyped<T = any>(name: string): Task<T>
  /** `dequeueEvent` with a typed payload. */
  dequeueEventTyped<T = any>(queueName: string): Task<T>
  /** `startOrchestration` with typed input. */
  startOrchestrationTyped<TIn = any>(name: string, instanceId: string, input: TIn): Task<null>
  /** `startOrchestrationVersioned` with typed input. */
  startOrchestrationVersionedTyped<TIn = any>(name: string, version: string, instanceId: string, input: TIn): Task<null>
  /** `continueAsNew` with typed input. */
  continueAsNewTyped<TIn = any>(input: TIn): Task<never>
  /** `all` keeping each task's result type, position by position. */
  allTyped<const Ts extends readonly Task<any>[]>(tasks: Ts): Task<{ -readonly [K in keyof Ts]: AllResult<TaskResult<Ts[K]>> }>
  /** `race` whose `value` is the union of the tasks' result types. */
  raceTyped<const Ts extends readonly [Task<any>, ...Task<any>[]]>(...tasks: Ts): Task<RaceResult<TaskResult<Ts[number]>>>
  raceTyped<T>(tasks: readonly Task<T>[]): Task<RaceResult<T>>

  /** Sets the custom status clients see in `getStatus` (at most `MAX_CUSTOM_STATUS_BYTES`; no U+0000). */
  setCustomStatus(status: string): void
  /** Sets the custom status to `value` as JSON (`defineStatus`); typed handles parse it. */
  setCustomStatus<T>(status: StatusDefinition<T>, value: NoInfer<T>): void
  /** Clears the custom status. */
  resetCustomStatus(): void
  /** The custom status as last set, or `null`. */
  getCustomStatus(): string | null
  /** The custom status parsed as `status` defines it, or `null`. */
  getCustomStatus<T>(status: StatusDefinition<T>): Jsonified<T> | null

  /**
   * Stores a KV value readable by clients and other instances. Strings are
   * stored as is (so they may not contain U+0000, which a Postgres store
   * cannot hold), anything else JSON-encoded. At most `MAX_KV_KEYS` keys and
   * `MAX_KV_VALUE_BYTES` per value; `key` is an identifier.
   */
  setValue(key: string, value: unknown): void
  /** Stores a typed key's value as JSON (a string too, so it reads back as set). */
  setValue<T>(key: KeyDefinition<T>, value: NoInfer<T>): void
  /** The stored string, or `null`. */
  getValue(key: string): string | null
  /** A typed key's value parsed, or `null`. */
  getValue<T>(key: KeyDefinition<T>): Jsonified<T> | null
  /** Removes one key. */
  clearValue(key: string | KeyDefinition<any>): void
  /** Removes every key. */
  clearAllValues(): void
  /** Every key and its stored string. */
  getKvAllValues(): Record<string, string>
  /** Every key, in key order. */
  getKvAllKeys(): string[]
  /** The number of keys. */
  getKvLength(): number
  /** Removes keys last written before `cutoffMs` (epoch ms); returns how many. */
  pruneKvValuesUpdatedBefore(cutoffMs: number): number

  /**
   * Structured logs (`ctx.log.info('charged', { orderId })`): emitted once per
   * instance, on the first execution of the line, never while replaying.
   */
  readonly log: ContextLog
  /** The W3C trace context the instance was started with (`{ traceparent }` start option), or `null`. */
  readonly traceContext: TraceContext | null

  /** Logs at info level; suppressed while replaying. */
  traceInfo(message: string): void
  /** Logs at warn level; suppressed while replaying. */
  traceWarn(message: string): void
  /** Logs at error level; suppressed while replaying. */
  traceError(message: string): void
  /** Logs at debug level; suppressed while replaying. */
  traceDebug(message: string): void
}

/**
 * An orchestration: a generator function that yields tasks. Returning
 * completes the instance with the (JSON-encoded) value; throwing fails it
 * with the error's message. `TNext` is `any` so a `yield` can be assigned to
 * whatever the task produces.
 */
export type OrchestrationFunction<TInput = any, TOutput = any> = (
  ctx: OrchestrationContext,
  input: TInput,
) => Generator<Task<any>, TOutput, any>

// Only the declarations marked `export` above are exported.
export {}
