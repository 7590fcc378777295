// Typed definitions (lib/definitions.js, lib/client-typed.js): names bound to
// their functions and payload types, so the compiler checks every call site
// against what was defined. The string-named API keeps working beside them.
import type { ActivityContext } from './activity'
import type { ErrorCategory } from './errors'
import type { OrchestrationContext, Task } from './orchestration'
import type { FailureInfo, InstanceInfo, ExecutionStatusName } from './client'

// ---- JSON round trip -------------------------------------------------------

type JsonPrimitive = string | number | boolean | null
/** What JSON.stringify drops from objects (and turns into `null` in arrays). */
type Unencodable = undefined | symbol | ((...args: any[]) => any)

type Simplify<T> = { [K in keyof T]: T[K] } & {}

/** Keys of `T` that JSON keeps: string/number keys whose value is not only unencodable. */
type KeptKey<T, K extends keyof T> = K extends string | number
  ? [Exclude<T[K], Unencodable>] extends [never]
    ? never
    : K
  : never
/** Whether the key may be absent after the round trip (optional, or `undefined` is among its values). */
type MaybeAbsent<T, K extends keyof T> = {} extends Pick<T, K> ? true : undefined extends T[K] ? true : false

type RequiredKeys<T> = keyof T extends infer K ? (K extends keyof T ? (MaybeAbsent<T, K> extends true ? never : KeptKey<T, K>) : never) : never
type OptionalKeys<T> = keyof T extends infer K ? (K extends keyof T ? (MaybeAbsent<T, K> extends true ? KeptKey<T, K> : never) : never) : never

type JsonObject<T> = Simplify<
  { [K in RequiredKeys<T>]: Jsonified<T[K]> } & { [K in OptionalKeys<T>]?: Jsonified<Exclude<T[K], undefined>> }
>
type JsonArrayItem<T> = Jsonified<T> | ([Extract<T, Unencodable>] extends [never] ? never : null)

/**
 * The type a value of type `T` has after a JSON round trip, which is what
 * every payload crossing the runtime goes through: `Date` (anything with
 * `toJSON`) becomes what `toJSON` returns (a `string`), `undefined` (a
 * `void` result) is sent as `null`, object properties
 * that are `undefined`, functions or symbols are dropped (and may-be-undefined
 * ones become optional), the same values in arrays become `null`, class
 * instances become plain objects of their own data. `unknown` stays `unknown`
 * and `any` stays `any`.
 */
export type Jsonified<T> = 0 extends 1 & T
  ? any
  : unknown extends T
    ? unknown
    : T extends { toJSON(...args: any[]): infer R }
      ? Jsonified<R>
      : T extends JsonPrimitive
        ? T
        : T extends undefined | void
          ? null
        : T extends Unencodable | bigint
          ? never
          : T extends readonly unknown[]
            ? { -readonly [K in keyof T]: JsonArrayItem<T[K]> }
            : T extends object
              ? JsonObject<T>
              : never

/**
 * A declared input type that a JSON round trip changes (a `Date`, an
 * `undefined` property, ...) would be a lie on the receiving side, so a
 * definition whose function declares one is refused: declare the JSON form
 * (`Jsonified<T>`, e.g. `string` for a date) instead.
 */
type JsonSafeInput<T> = [Jsonified<T>] extends [T]
  ? unknown
  : { 'the input type does not survive JSON: declare it as Jsonified<YourType>': Jsonified<T> }

// Phantom keys carrying the types of a definition; not exported, so only the
// define* functions make definitions.
declare const activityTypes: unique symbol
declare const orchestrationTypes: unique symbol
declare const eventType: unique symbol
declare const statusType: unique symbol
declare const keyType: unique symbol

// ---- definitions -----------------------------------------------------------

/** An activity bound to its name: `ctx.call(def, input)` runs it; `runtime.register(def)` registers it. */
export interface ActivityDefinition<TIn = unknown, TOut = unknown> {
  readonly name: string
  /** @internal the function `runtime.register` registers. */
  readonly fn: (ctx: ActivityContext, input: TIn) => TOut | PromiseLike<TOut>
  /** @internal input and output types; not a runtime property. */
  readonly [activityTypes]: { input: TIn; output: TOut }
}

/** An orchestration bound to its name (and version): `client.start(def, ...)`, `ctx.callOrchestration(def, ...)`. */
export interface OrchestrationDefinition<TIn = unknown, TOut = unknown, TStatus = unknown> {
  readonly name: string
  /** The version it registers and starts, or `undefined` for the default (`1.0.0` / latest). */
  readonly version: string | undefined
  /** The definition its custom status follows, when declared. */
  readonly status: StatusDefinition<TStatus> | undefined
  /** @internal input, output and custom status types; not a runtime property. */
  readonly [orchestrationTypes]: { input: TIn; output: TOut; status: TStatus }
}

/** An event (`ctx.waitFor`, `client.raise`; kept until a wait takes it) or mailbox (`ctx.dequeue`, `client.enqueue`) with its payload type. */
export interface EventDefinition<T = unknown> {
  readonly name: string
  /** @internal the payload type; not a runtime property. */
  readonly [eventType]: T
}

/** A custom status stored as JSON of type `T`. */
export interface StatusDefinition<T = unknown> {
  /** Parses a custom status string as a client reads it (`null` for none). */
  parse(raw: string | null | undefined): Jsonified<T> | null
  /** @internal the status type; not a runtime property. */
  readonly [statusType]: T
}

/** A KV key whose value is stored as JSON of type `T`. */
export interface KeyDefinition<T = unknown> {
  readonly key: string
  /** Parses a stored value as a client reads it (`null` for none). */
  parse(raw: string | null | undefined): Jsonified<T> | null
  /** @internal the value type; not a runtime property. */
  readonly [keyType]: T
}

/** Any activity or orchestration definition (what `runtime.register` takes). */
export type AnyActivityDefinition = ActivityDefinition<any, any>
export type AnyOrchestrationDefinition = OrchestrationDefinition<any, any, any>
export type AnyDefinition = AnyActivityDefinition | AnyOrchestrationDefinition

/** The input type of a definition (what callers pass). */
export type InputOf<D> = D extends ActivityDefinition<infer I, any>
  ? I
  : D extends OrchestrationDefinition<infer I, any, any>
    ? I
    : never
/** The output of a definition as callers receive it (after JSON). */
export type OutputOf<D> = D extends ActivityDefinition<any, infer O>
  ? Jsonified<O>
  : D extends OrchestrationDefinition<any, infer O, any>
    ? Jsonified<O>
    : never
/** The payload of an event definition as the receiver sees it (after JSON). */
export type PayloadOf<E> = E extends EventDefinition<infer T> ? Jsonified<T> : never
/** The custom status of an orchestration definition as clients read it (after JSON). */
export type StatusOf<D> = D extends OrchestrationDefinition<any, any, infer S> ? Jsonified<S> : never

/** The arguments after the definition: the input, optional when the input type admits `undefined`. */
export type InputArgs<TIn> = undefined extends TIn ? [input?: TIn] : [input: TIn]

/** Options of `defineOrchestration(name, options, fn)`. */
export interface OrchestrationDefinitionOptions<TStatus = unknown> {
  /** The semver version this definition registers, starts and calls. */
  version?: string | undefined
  /** The custom status the orchestration sets with `ctx.setCustomStatus(status, value)`; handles parse it. */
  status?: StatusDefinition<TStatus> | undefined
}

/** The generator function of a typed orchestration. */
export type TypedOrchestrationFunction<TIn, TOut> = (
  ctx: OrchestrationContext<TIn>,
  input: TIn,
) => Generator<Task<unknown>, TOut, any>

/**
 * Defines an activity: `fn` gets the input (declare it as its JSON form) and
 * returns (or resolves to) the output, which callers receive as
 * `Jsonified<TOut>`.
 */
export declare function defineActivity<TIn = unknown, TOut = unknown>(
  name: string,
  fn: ((ctx: ActivityContext, input: TIn) => TOut | PromiseLike<TOut>) & JsonSafeInput<TIn>,
): ActivityDefinition<TIn, Awaited<TOut>>

/**
 * Defines an orchestration: a generator function (`function*`) that `yield*`s
 * tasks. Its return value is the output clients receive as `Jsonified<TOut>`.
 */
export declare function defineOrchestration<TIn = unknown, TOut = unknown>(
  name: string,
  fn: TypedOrchestrationFunction<TIn, TOut> & JsonSafeInput<TIn>,
): OrchestrationDefinition<TIn, TOut, unknown>
/** Defines one `version` of an orchestration, and/or the definition of its custom status. */
export declare function defineOrchestration<TIn = unknown, TOut = unknown, TStatus = unknown>(
  name: string,
  options: OrchestrationDefinitionOptions<TStatus>,
  fn: TypedOrchestrationFunction<TIn, TOut> & JsonSafeInput<TIn>,
): OrchestrationDefinition<TIn, TOut, TStatus>

/** Defines an event (or mailbox) name with its payload type; `unknown` by default. */
export declare function defineEvent<T = unknown>(name: string): EventDefinition<T>

/** Defines a custom status shape; the status is stored as JSON. */
export declare function defineStatus<T = unknown>(): StatusDefinition<T>

/** Defines a KV key with its value type; the value is stored as JSON (strings too). */
export declare function defineKey<T = unknown>(key: string): KeyDefinition<T>

// ---- typed client --------------------------------------------------------------

/** Options of the waits: `AbortSignal` and/or timeout. */
export interface WaitOptions {
  /** Give up after this long (ms); default 30000. */
  timeoutMs?: number | undefined
  /**
   * Ends the wait when it aborts: the promise rejects with `AbortError`
   * (`ERR_ABORTED`) at once. With a signal the wait polls from JS every
   * `pollIntervalMs` (default 50, `waitForStatusChange` 500).
   */
  signal?: AbortSignal | undefined
  /** How often a wait with a `signal` polls, in ms. */
  pollIntervalMs?: number | undefined
}

/** `h.status()` and the other handle reads: a union on `status`, `output` only when `Completed`. */
export type TypedOrchestrationStatus<TOut = unknown, TStatus = unknown> =
  | {
      /** Started, but no runtime has run its first turn yet. */
      status: 'Pending'
      customStatus?: undefined
      customStatusVersion: number
    }
  | {
      status: 'Running'
      customStatus?: TStatus
      customStatusVersion: number
    }
  | {
      status: 'Completed'
      /** The orchestration's return value (parsed). */
      output: TOut
      customStatus?: TStatus
      customStatusVersion: number
    }
  | {
      status: 'Failed'
      /** The failure's display message. */
      error: string
      /** Why it failed. */
      errorCategory?: ErrorCategory
      /** The failure as the orchestration threw it (`docs/api-reference.md`, Failures). */
      failure: FailureInfo
      customStatus?: TStatus
      customStatusVersion: number
    }

/** A terminal status: what `h.wait()` resolves with. */
export type TerminalOrchestrationStatus<TOut = unknown, TStatus = unknown> = Extract<
  TypedOrchestrationStatus<TOut, TStatus>,
  { status: 'Completed' | 'Failed' }
>

/**
 * One instance of one orchestration definition, from `client.start(def, ...)`
 * or `client.handle(def, id)`. Its methods reject `NotFoundError` for an
 * instance that does not exist.
 */
export declare class OrchestrationHandle<D extends AnyOrchestrationDefinition = AnyOrchestrationDefinition> {
  private constructor()
  readonly instanceId: string
  /** The definition the handle was made from. */
  readonly definition: D
  /** The current status; `'Pending'` until a runtime runs its first turn. */
  status(): Promise<TypedOrchestrationStatus<OutputOf<D>, StatusOf<D>>>
  /** The terminal status. Rejects `TimeoutError` / `NotFoundError` at `timeoutMs`, `AbortError` on `signal`. */
  wait(options?: WaitOptions): Promise<TerminalOrchestrationStatus<OutputOf<D>, StatusOf<D>>>
  /** The output once completed; rejects `OrchestrationFailedError` if it failed, and as `wait`. */
  result(options?: WaitOptions): Promise<OutputOf<D>>
  /** The status once its `customStatusVersion > lastSeenVersion` (or it ended). */
  waitForStatusChange(lastSeenVersion: number, options?: WaitOptions): Promise<TypedOrchestrationStatus<OutputOf<D>, StatusOf<D>>>
  /** `client.raise(instanceId, event, payload)`. */
  raise<E extends EventDefinition<any>>(event: E, ...payload: InputArgs<EventPayloadIn<E>>): Promise<void>
  /** `client.enqueue(instanceId, event, payload)`. */
  enqueue<E extends EventDefinition<any>>(event: E, ...payload: InputArgs<EventPayloadIn<E>>): Promise<void>
  /** Requests cancellation (see `client.cancelInstance`). */
  cancel(reason?: string): Promise<void>
  /** A typed KV value of the instance, or `null`. */
  value<T>(key: KeyDefinition<T>): Promise<Jsonified<T> | null>
}

/** The payload type a sender passes for an event definition. */
export type EventPayloadIn<E> = E extends EventDefinition<infer T> ? T : never

/** `client.list(filter)`. */
export interface ListFilter {
  /** Only instances whose current execution has this status. */
  status?: ExecutionStatusName | undefined
  /** Only instances of this orchestration name. */
  name?: string | undefined
  /** How many instances' info is read at a time (default 100). */
  pageSize?: number | undefined
}

/** The orchestration definitions a runtime registered (`new Client<Registered<typeof rt>>(...)`). */
export type Registered<R> = R extends { readonly [registeredDefinitions]?: (registered: infer D) => void } ? Extract<D, AnyOrchestrationDefinition> : never

/** @internal phantom key of `Runtime<...>`: what `register` registered. */
export declare const registeredDefinitions: unique symbol

// Only the declarations marked `export` above are exported.
export {}
