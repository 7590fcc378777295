// Error classes: match on `code`, narrow with instanceof.
import {
  DuroxideError,
  InvalidArgumentError,
  InvalidOptionError,
  NotFoundError,
  OrchestrationFailedError,
  ActivityFailedError,
  SubOrchestrationFailedError,
  NondeterministicError,
  NonRetryableError,
  ProviderError,
  Runtime,
  RuntimeStateError,
  SqliteProvider,
  TimeoutError,
  initTracing,
  MAX_CUSTOM_STATUS_BYTES,
  MAX_KV_KEYS,
  MAX_KV_VALUE_BYTES,
  MAX_TAG_NAME_BYTES,
  MAX_WORKER_TAGS,
} from 'duroxide-node'
import type { DuroxideErrorCode, MetricsSnapshot } from 'duroxide-node'

export function handle(err: unknown): string {
  if (err instanceof DuroxideError) {
    const code: DuroxideErrorCode = err.code
    const base: Error = err
    const cause: unknown = err.cause
    void base, cause
    switch (err.code) {
      case 'ERR_INVALID_OPTION':
      case 'ERR_INVALID_ARGUMENT':
      case 'ERR_NOT_FOUND':
      case 'ERR_ALREADY_EXISTS':
      case 'ERR_TIMEOUT':
      case 'ERR_PROVIDER':
      case 'ERR_RUNTIME_STATE':
      case 'ERR_ORCHESTRATION_FAILED':
      case 'ERR_ABORTED':
      case 'ERR_ACTIVITY_FAILED':
      case 'ERR_SUB_ORCHESTRATION_FAILED':
      case 'ERR_NONDETERMINISTIC':
      case 'ERR_INTERNAL':
        return code
      default: {
        // Exhaustive: a new code must be added to DuroxideErrorCode and handled here.
        const never: never = err.code
        return never
      }
    }
  }
  return 'other'
}

export function subclasses(): DuroxideError[] {
  const list: DuroxideError[] = [
    new InvalidOptionError('m'),
    new InvalidArgumentError('m', { cause: new Error('x') }),
    new NotFoundError('m'),
    new TimeoutError('m'),
    new ProviderError('m'),
    new RuntimeStateError('m'),
    new OrchestrationFailedError('m'),
    new DuroxideError('m', 'ERR_PROVIDER'),
  ]
  const f = new OrchestrationFailedError('failed')
  const id: string | undefined = f.instanceId
  const category: 'application' | 'infrastructure' | 'configuration' | 'poison' | undefined = f.errorCategory
  void id, category
  // @ts-expect-error a subclass's code is fixed
  const wrong: 'ERR_TIMEOUT' = new NotFoundError('m').code
  // @ts-expect-error codes are the documented ones
  new DuroxideError('m', 'ERR_SOMETHING')
  void wrong
  return list
}

export async function lifecycle(): Promise<MetricsSnapshot | null> {
  initTracing({ logFile: '/tmp/duroxide.log' })
  initTracing({ logFile: '/tmp/duroxide.log', logLevel: 'debug', logFormat: 'json' })
  // @ts-expect-error logFile is required
  initTracing({ logLevel: 'info' })
  // @ts-expect-error unknown format
  initTracing({ logFile: 'x', logFormat: 'yaml' })

  const limits: number[] = [MAX_WORKER_TAGS, MAX_TAG_NAME_BYTES, MAX_KV_KEYS, MAX_KV_VALUE_BYTES, MAX_CUSTOM_STATUS_BYTES]
  void limits
  const rt = new Runtime(await SqliteProvider.inMemory())
  const before: MetricsSnapshot | null = rt.metricsSnapshot()
  await rt.start()
  await rt.shutdown()
  await rt.shutdown(500)
  const snap = rt.metricsSnapshot()
  if (snap) {
    const counters: number[] = [
      snap.orchStarts, snap.orchCompletions, snap.orchFailures, snap.orchApplicationErrors,
      snap.orchInfrastructureErrors, snap.orchConfigurationErrors, snap.orchPoison, snap.activitySuccess,
      snap.activityAppErrors, snap.activityInfraErrors, snap.activityConfigErrors, snap.activityPoison,
      snap.orchDispatcherItemsFetched, snap.workerDispatcherItemsFetched, snap.orchContinueAsNew,
      snap.suborchestrationCalls, snap.providerErrors,
    ]
    void counters
  }
  // @ts-expect-error the shutdown timeout is a number of ms
  await rt.shutdown('1s')
  // @ts-expect-error metricsSnapshot may be null before start
  const notNull: MetricsSnapshot = rt.metricsSnapshot()
  void before, notNull
  return snap
}

export function guard(rt: import('duroxide-node').Runtime): void {
  const onPoison = (e: import('duroxide-node').RuntimeEvent): void => {
    const q: 'orchestrator' | 'worker' = e.queue
    const attempts: number | undefined = e.attemptCount
    void q, attempts, e.instanceId, e.maxAttempts, e.cause
  }
  rt.on('poison', onPoison).on('lockLost', onPoison).on('livelock', onPoison).off('poison', onPoison)
  const h = rt.health()
  const status: 'ok' | 'degraded' = h.status
  const reasons: string[] = h.reasons
  void status, reasons
  // @ts-expect-error unknown event type
  rt.on('crash', onPoison)
  rt.on('unregistered', (e) => {
    const name: string | undefined = e.name
    const kind: 'activity' | 'orchestration' | undefined = e.kind
    void name, kind
  })
  rt.on('nondeterminism', (e) => {
    const held: boolean | undefined = e.held
    const divergence: string | undefined = e.divergence
    void held, divergence
  })
}

// Structured failures: what a caught task error carries.
export function failures(err: unknown): string {
  if (err instanceof ActivityFailedError) {
    const code: 'ERR_ACTIVITY_FAILED' = err.code
    const name: string = err.activityName
    const original: string = err.errorName
    const retry: boolean = err.nonRetryable
    const index: number | undefined = err.index
    void code, name, original, retry, index, err.details, err.category, err.errorStack
    return name
  }
  if (err instanceof SubOrchestrationFailedError) return err.orchestrationName
  if (err instanceof NondeterministicError) return err.code
  return ''
}

export function activityThrows(): never {
  const e = new NonRetryableError('card stolen', { details: { code: 'STOLEN' } })
  const flag: true = e.nonRetryable
  void flag
  // @ts-expect-error details is the only option besides cause
  void new NonRetryableError('x', { detail: 1 })
  throw e
}

export function guardOption(): void {
  void new Runtime({} as never, { determinismGuard: 'throw' })
  // @ts-expect-error not a determinismGuard value
  void new Runtime({} as never, { determinismGuard: 'loud' })
}
