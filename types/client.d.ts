// Client (lib/client*.js) and the shapes its methods resolve with.
import type { StartOptions } from './tracing'
import type { ErrorCategory, FailureFields } from './errors'
import type { Provider } from './providers'
import type { ClientOptions } from './options'
import type {
  AnyOrchestrationDefinition,
  EventDefinition,
  EventPayloadIn,
  InputArgs,
  InputOf,
  Jsonified,
  KeyDefinition,
  ListFilter,
  OrchestrationHandle,
  WaitOptions,
} from './definitions'

/**
 * Options of the typed `client.start`: the trace context of `StartOptions`,
 * and what to do when the id is in use.
 */
export interface TypedStartOptions extends StartOptions {
  /**
   * An instance with this id exists (stored, or its start waits in the
   * queue): `'reject'` (default) rejects `AlreadyExistsError`
   * (`ERR_ALREADY_EXISTS`); `'useExisting'` resolves with its handle when it
   * runs the same orchestration (an idempotent start; the new input is not
   * used) and still rejects when it runs another one.
   */
  ifExists?: 'reject' | 'useExisting' | undefined
}

/** `input` (optional when the orchestration's input accepts `undefined`), then the start options. */
type StartArgs<TIn> = undefined extends TIn
  ? [input?: TIn, options?: TypedStartOptions]
  : [input: TIn, options?: TypedStartOptions]

/** Status of an instance as `getStatus` reports it. */
export type OrchestrationStatusName = 'Running' | 'Completed' | 'Failed' | 'NotFound'

/** Status of a stored execution (management calls). */
export type ExecutionStatusName = 'Running' | 'Completed' | 'Failed' | 'ContinuedAsNew'

/**
 * What `getStatus`, `waitForOrchestration` and `waitForStatusChange` resolve
 * with: a union on `status`, so `output` is there only when `Completed` and
 * `error` only when `Failed` (elsewhere they read as `undefined`, so code that
 * reads them without narrowing still compiles). `TOutput` is `string` (the raw
 * JSON) for `getStatus` and `waitForStatusChange`, and the parsed value for
 * `waitForOrchestration`.
 */
export type OrchestrationStatus<TOutput = string> =
  | OrchestrationRunningStatus
  | OrchestrationCompletedStatus<TOutput>
  | OrchestrationFailedStatus

/** An `OrchestrationStatus` that has not ended, or of no instance. */
export interface OrchestrationRunningStatus extends OrchestrationStatusCommon {
  status: 'Running' | 'NotFound'
  output?: undefined
  error?: undefined
  errorCategory?: undefined
  failure?: undefined
}

/** An `OrchestrationStatus` of a completed instance. */
export interface OrchestrationCompletedStatus<TOutput = string> extends OrchestrationStatusCommon {
  status: 'Completed'
  /** The orchestration's output. */
  output: TOutput
  error?: undefined
  errorCategory?: undefined
  failure?: undefined
}

/** An `OrchestrationStatus` of a failed instance. */
export interface OrchestrationFailedStatus extends OrchestrationStatusCommon {
  status: 'Failed'
  output?: undefined
  /** The failure's display message. */
  error: string
  /** Why it failed. */
  errorCategory?: ErrorCategory
  /** The failure's structure (what the orchestration threw). */
  failure: FailureInfo
}

/** The fields of every `OrchestrationStatus`. */
export interface OrchestrationStatusCommon {
  status: OrchestrationStatusName
  /** The custom status the orchestration set, if any. */
  customStatus?: string
  /** Grows each time the orchestration sets or resets its custom status. */
  customStatusVersion: number
}

/**
 * `status.failure`: the failure as the orchestration threw it. `message` is
 * `status.error`; `category` is `status.errorCategory`. An orchestration
 * that rethrew an activity's failure reports that activity's error name,
 * stack and details, with `activityName` set.
 */
export interface FailureInfo extends FailureFields {
  message: string
  category: ErrorCategory
}

/** `getInstanceInfo(id)`. */
export interface InstanceInfo {
  instanceId: string
  orchestrationName: string
  /** The version the current execution runs. */
  orchestrationVersion: string
  /** 1 for the first execution; each continue-as-new adds one. */
  currentExecutionId: number
  /** Status of the current execution. */
  status: ExecutionStatusName
  /** As stored: the JSON output when completed, the failure text when failed. */
  output?: string
  /** Epoch ms. */
  createdAt: number
  /** Epoch ms. */
  updatedAt: number
  /** The parent's instance id, for a sub-orchestration. */
  parentInstanceId?: string
}

/** `getExecutionInfo(id, executionId)`. */
export interface ExecutionInfo {
  executionId: number
  status: ExecutionStatusName
  /** As stored: the output, the failure text, or the next execution's input. */
  output?: string
  /** Epoch ms. */
  startedAt: number
  /** Epoch ms; absent while running. */
  completedAt?: number
  /** History events of this execution. */
  eventCount: number
}

/** The crate's `EventKind` variant names, as `HistoryEvent.kind` reports them. */
export type HistoryEventKind =
  | 'OrchestrationStarted'
  | 'OrchestrationCompleted'
  | 'OrchestrationFailed'
  | 'ActivityScheduled'
  | 'ActivityCompleted'
  | 'ActivityFailed'
  | 'ActivityCancelRequested'
  | 'TimerCreated'
  | 'TimerFired'
  | 'ExternalSubscribed'
  | 'ExternalEvent'
  | 'OrchestrationChained'
  | 'SubOrchestrationScheduled'
  | 'SubOrchestrationCompleted'
  | 'SubOrchestrationFailed'
  | 'SubOrchestrationCancelRequested'
  | 'OrchestrationContinuedAsNew'
  | 'OrchestrationCancelRequested'
  | 'ExternalSubscribedCancelled'
  | 'QueueSubscribed'
  | 'QueueEventDelivered'
  | 'QueueSubscriptionCancelled'
  | 'CustomStatusUpdated'
  | 'KeyValueSet'
  | 'KeyValueCleared'
  | 'KeyValuesCleared'

/**
 * One execution's history as `client.exportHistory` returns it: plain JSON
 * (write it to a file with `JSON.stringify`), lossless, for the replay check
 * of `duroxide-node/testing` (`replayHistory`, `importHistory`).
 */
export interface ExportedHistory {
  format: 'duroxide-history'
  formatVersion: 1
  instanceId: string
  executionId: number
  orchestrationName: string
  orchestrationVersion: string
  /** The crate's own serialized events, oldest first; opaque to applications. */
  events: unknown[]
}

/** One entry of `readExecutionHistory(id, executionId)`. */
export interface HistoryEvent {
  /** Position in the execution's history, from 1. */
  eventId: number
  kind: HistoryEventKind
  /** For completions: the `eventId` of the event that scheduled them. */
  sourceEventId?: number
  /** Epoch ms when the event was recorded. */
  timestampMs: number
  /**
   * JSON text with user payloads embedded as values: `OrchestrationStarted`
   * `{name, version, input}`, `ActivityScheduled` `{name, input}`,
   * `SubOrchestrationScheduled` `{name, instance, input}`, completions the
   * result itself, failures the crate's error details, timers `{fireAtMs}`,
   * subscriptions `{name}`, events `{name, data}`,
   * `QueueSubscriptionCancelled` `{reason}`; absent for other kinds.
   */
  data?: string
}

/** `getInstanceTree(id)`. */
export interface InstanceTree {
  rootId: string
  /** The root and every descendant sub-orchestration. */
  allIds: string[]
  /** `allIds.length`. */
  size: number
}

/** `deleteInstance` and `deleteInstanceBulk`. */
export interface DeleteResult {
  /** Including descendant sub-orchestrations. */
  instancesDeleted: number
  executionsDeleted: number
  eventsDeleted: number
  /** Orchestrator, worker and timer messages removed. */
  queueMessagesDeleted: number
}

/** `pruneExecutions` and `pruneExecutionsBulk`. */
export interface PruneResult {
  instancesProcessed: number
  executionsDeleted: number
  eventsDeleted: number
}

/** Which instances a bulk call considers; all criteria must hold. */
export interface InstanceFilter {
  /** Only these instance ids. */
  instanceIds?: string[] | undefined
  /** Only instances whose current execution completed before this time (epoch ms or a Date). */
  completedBefore?: number | Date | undefined
  /** At most this many instances (default 1000). */
  limit?: number | undefined
}

/** Which executions a prune deletes; the current execution is never pruned. */
export interface PruneOptions {
  /** Keep the newest N executions (the current one counts). */
  keepLast?: number | undefined
  /** Only executions completed before this time (epoch ms or a Date). */
  completedBefore?: number | Date | undefined
}

/** `getSystemMetrics()`: counts over the whole store, by status of each instance's current execution. */
export interface SystemMetrics {
  totalInstances: number
  /** Continue-as-new adds executions. */
  totalExecutions: number
  runningInstances: number
  completedInstances: number
  failedInstances: number
  /** History events across all executions. */
  totalEvents: number
}

/**
 * A queue message set aside because no fetch can read it (it does not parse
 * as a duroxide work item or, on Postgres, holds U+0000). It stays in its
 * queue and is never fetched; `client.listSetAside()` lists them.
 */
export interface SetAsideMessage {
  queue: 'orchestrator' | 'worker'
  /** The message's row id in its queue. */
  id: number
  instanceId: string
  /** Why no fetch can read it. */
  reason: string
  /** The stored text, at most 4,096 characters. */
  text: string
}

/** `getQueueDepths()`: messages waiting to be fetched (locked ones excluded). */
export interface QueueDepths {
  /** Starts, completions, events (on Postgres also due timers). */
  orchestratorQueue: number
  /** Activities. */
  workerQueue: number
  /** Timers; always 0 on Postgres, whose timers live in the orchestrator queue. */
  timerQueue: number
}

/** `getOrchestrationStats(id)`: sizes of one instance's current execution. */
export interface OrchestrationStats {
  historyEventCount: number
  /** Approximate stored size of the history in bytes. */
  historySizeBytes: number
  /** Queue messages carried into this execution by continue-as-new. */
  queuePendingCount: number
  kvUserKeyCount: number
  kvTotalValueBytes: number
}

/**
 * Starts, watches and manages orchestration instances. Works with or without
 * a Runtime in the same process. Payloads are sent as JSON (`undefined` as
 * `null`) and come back exactly, on either store. Every method returns a
 * Promise that rejects with a `DuroxideError`.
 *
 * Identifiers (instance ids, orchestration names, event and queue names, KV
 * keys) are non-empty, well-formed Unicode strings (no unpaired surrogates)
 * without control characters (C0, DEL, C1) of at most `MAX_IDENTIFIER_BYTES`
 * (1000) UTF-8 bytes. A call that creates or sends (`startOrchestration*`,
 * `raiseEvent`, `enqueueEvent`, `cancelInstance`) refuses any other string
 * with `InvalidArgumentError` (`ERR_INVALID_ARGUMENT`) naming the argument
 * and the rule. Calls that read or delete take any instance id a store may
 * hold from an earlier version, refusing only empty and ill-formed ones and
 * U+0000. An input or event's JSON is at most `maxPayloadBytes` (default 2
 * MiB). A cancel `reason` may not contain U+0000.
 */
export declare class Client<TOrchestrations extends AnyOrchestrationDefinition = AnyOrchestrationDefinition> {
  /**
   * `TOrchestrations` limits which definitions `start` takes:
   * `new Client<Registered<typeof rt>>(provider)` accepts only what `rt.register(...)` registered.
   * `options`: `{ maxPayloadBytes? }` (docs/options.md).
   */
  constructor(provider: Provider, options?: ClientOptions)

  /** The client's options with their defaults filled in. */
  effectiveOptions(): Required<{ [K in keyof ClientOptions]: Exclude<ClientOptions[K], undefined> }>

  /**
   * Starts `name` (its latest registered version) as `instanceId`.
   * `options.traceparent`/`tracestate`: a W3C trace context the instance carries (`ctx.traceContext`).
   */
  startOrchestration(instanceId: string, name: string, input?: unknown, options?: StartOptions): Promise<void>
  /** Starts `name` at a semver `version`; `options` as in `startOrchestration`. */
  startOrchestrationVersioned(instanceId: string, name: string, input: unknown, version: string, options?: StartOptions): Promise<void>

  /** The current status; `output` is the raw JSON string. Unknown ids report `NotFound`. */
  getStatus(instanceId: string): Promise<OrchestrationStatus<string>>
  /**
   * Resolves once the instance is terminal (`Completed` or `Failed`) with
   * `output` JSON-parsed. Rejects after `timeoutMs` (default 30000) with
   * `TimeoutError`, or `NotFoundError` if nothing with this id exists by then.
   */
  waitForOrchestration(instanceId: string, timeoutMs?: number): Promise<OrchestrationStatus<any>>
  /** `waitForOrchestration` with options: a `signal` ends the wait with `AbortError` (`ERR_ABORTED`). */
  waitForOrchestration(instanceId: string, options: WaitOptions): Promise<OrchestrationStatus<any>>
  /**
   * Resolves with the status once `customStatusVersion > lastSeenVersion`,
   * polling every `pollIntervalMs` (default 500); rejects with `TimeoutError`
   * after `timeoutMs` (default 30000).
   */
  waitForStatusChange(
    instanceId: string,
    lastSeenVersion: number,
    pollIntervalMs?: number,
    timeoutMs?: number,
  ): Promise<OrchestrationStatus<string>>
  /** `waitForStatusChange` with options (`pollIntervalMs`, `timeoutMs`, `signal`). */
  waitForStatusChange(instanceId: string, lastSeenVersion: number, options: WaitOptions): Promise<OrchestrationStatus<string>>

  /** Raises a one-shot event the instance receives with `ctx.waitForEvent(name)`. */
  raiseEvent(instanceId: string, eventName: string, data?: unknown): Promise<void>
  /** Appends to a persistent FIFO mailbox the instance reads with `ctx.dequeueEvent(queueName)`. */
  enqueueEvent(instanceId: string, queueName: string, data?: unknown): Promise<void>
  /**
   * Requests cancellation: the instance (and its sub-orchestrations) ends as
   * `Failed` with a cancellation carrying `reason`. A no-op for terminal or
   * unknown instances.
   */
  cancelInstance(instanceId: string, reason?: string): Promise<void>

  /** The instance's KV value for `key`, or `null` when unset. */
  getValue(instanceId: string, key: string): Promise<string | null>
  /** A typed key's value (`defineKey`) parsed, or `null` when unset. */
  getValue<T>(instanceId: string, key: KeyDefinition<T>): Promise<Jsonified<T> | null>
  /** Resolves with the value once `key` is set; rejects with `TimeoutError` after `timeoutMs` (default 30000). */
  waitForValue(instanceId: string, key: string, timeoutMs?: number): Promise<string>
  /** `waitForValue` with options (`timeoutMs`, `signal`). */
  waitForValue(instanceId: string, key: string, options: WaitOptions): Promise<string>
  /** `waitForValue` of a typed key, parsed. */
  waitForValue<T>(instanceId: string, key: KeyDefinition<T>, options?: number | WaitOptions): Promise<Jsonified<T>>
  /** Every KV key of the instance with its value. */
  getKvAllValues(instanceId: string): Promise<Record<string, string>>

  /** Counts over the whole store. */
  getSystemMetrics(): Promise<SystemMetrics>
  /** Messages waiting in each queue. */
  getQueueDepths(): Promise<QueueDepths>
  /** Queue messages set aside because no fetch can read them (docs/api-reference.md, "Unreadable messages"). */
  listSetAside(): Promise<SetAsideMessage[]>
  /** Sizes of one instance's current execution, or `null` when it does not exist. */
  getOrchestrationStats(instanceId: string): Promise<OrchestrationStats | null>

  /** Every instance id. */
  listAllInstances(): Promise<string[]>
  /** Instance ids whose current execution has `status`. */
  listInstancesByStatus(status: ExecutionStatusName): Promise<string[]>
  /** One instance; rejects with `NotFoundError`. */
  getInstanceInfo(instanceId: string): Promise<InstanceInfo>
  /** One execution; rejects with `NotFoundError`. */
  getExecutionInfo(instanceId: string, executionId: number): Promise<ExecutionInfo>
  /** The instance's execution ids, ascending. */
  listExecutions(instanceId: string): Promise<number[]>
  /** The events of one execution, oldest first. */
  readExecutionHistory(instanceId: string, executionId: number): Promise<HistoryEvent[]>
  /**
   * One execution's history (default: the current one) in a lossless,
   * JSON-serialisable form, to replay against new code with
   * `duroxide-node/testing` (e.g. captured from production, checked in CI).
   * Rejects with ERR_NOT_FOUND for an unknown instance or execution.
   */
  exportHistory(instanceId: string, executionId?: number): Promise<ExportedHistory>
  /** The instance and its descendant sub-orchestrations. */
  getInstanceTree(instanceId: string): Promise<InstanceTree>
  /**
   * Deletes a root instance with its sub-orchestrations. A running instance
   * needs `force` (default `false`); a sub-orchestration cannot be deleted
   * on its own.
   */
  deleteInstance(instanceId: string, force?: boolean): Promise<DeleteResult>
  /** Deletes terminal root instances matching `filter` (default: all); running ones are skipped. */
  deleteInstanceBulk(filter?: InstanceFilter): Promise<DeleteResult>
  /** Deletes old executions of one instance; the current one is kept. */
  pruneExecutions(instanceId: string, options?: PruneOptions): Promise<PruneResult>
  /** `pruneExecutions` over every instance matching `filter`. */
  pruneExecutionsBulk(filter?: InstanceFilter, options?: PruneOptions): Promise<PruneResult>

  /** `startOrchestration` with a typed input. */
  startOrchestrationTyped<TIn = any>(instanceId: string, name: string, input: TIn): Promise<void>
  /** `startOrchestrationVersioned` with a typed input. */
  startOrchestrationVersionedTyped<TIn = any>(instanceId: string, name: string, input: TIn, version: string): Promise<void>
  /** `raiseEvent` with typed data. */
  raiseEventTyped<T = any>(instanceId: string, eventName: string, data: T): Promise<void>
  /** `enqueueEvent` with typed data. */
  enqueueEventTyped<T = any>(instanceId: string, queueName: string, data: T): Promise<void>
  /**
   * Resolves with the parsed output once the instance completes; rejects with
   * `OrchestrationFailedError` if it failed, `TimeoutError` after `timeoutMs`
   * (default 30000).
   */
  waitForOrchestrationTyped<TOut = any>(instanceId: string, timeoutMs?: number | WaitOptions): Promise<TOut>

  // ---- typed definitions (defineOrchestration, defineEvent) ----
  /**
   * Starts `orchestration` (its pinned version, if any) as `instanceId` with
   * a checked `input`; resolves with a typed handle. An id in use rejects
   * `AlreadyExistsError` unless `options.ifExists` is `'useExisting'`;
   * `options` also takes the W3C trace context, as in `startOrchestration`.
   */
  start<D extends TOrchestrations>(orchestration: D, instanceId: string, ...args: StartArgs<InputOf<D>>): Promise<OrchestrationHandle<D>>
  /** A typed handle on an instance started earlier; nothing is read until a method is called. */
  handle<D extends TOrchestrations>(orchestration: D, instanceId: string): OrchestrationHandle<D>
  /**
   * Sends `event` with a checked payload to the instance's
   * `ctx.waitFor(event)`. The event is kept, in order, until a wait takes it
   * (also across continue-as-new), so one raised before the instance waits is
   * not lost. Rejects `NotFoundError` for an instance that does not exist.
   */
  raise<E extends EventDefinition<any>>(instanceId: string, event: E, ...payload: InputArgs<EventPayloadIn<E>>): Promise<void>
  /** Appends to `event`'s mailbox (`ctx.dequeue(event)`); rejects `NotFoundError` as `raise`. */
  enqueue<E extends EventDefinition<any>>(instanceId: string, event: E, ...payload: InputArgs<EventPayloadIn<E>>): Promise<void>
  /**
   * Instances as `InstanceInfo`, newest first, read a page (`pageSize`,
   * default 100) at a time: `for await (const info of client.list({ status: 'Running' }))`.
   */
  list(filter?: ListFilter): AsyncIterableIterator<InstanceInfo>
}

// Only the declarations marked `export` above are exported.
export {}
