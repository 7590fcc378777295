// RuntimeOptions, EffectiveOptions and the provider constructors.
import { Client, PostgresProvider, Runtime, SqliteProvider } from 'duroxide-node'
import type { EffectiveOptions, RuntimeOptions, WorkerTagFilter } from 'duroxide-node'

export async function everyOption(): Promise<EffectiveOptions> {
  const provider = await SqliteProvider.open('sqlite:./types.db')
  // Every field of options.md plus the binding's own, in one literal.
  const options: Required<RuntimeOptions> = {
    orchestrationConcurrency: 4,
    workerConcurrency: 8,
    dispatcherPollIntervalMs: 10,
    dispatcherLongPollTimeoutMs: 30000,
    orchestratorLockTimeoutMs: 5000,
    orchestratorLockRenewalBufferMs: 2000,
    workerLockTimeoutMs: 30000,
    workerLockRenewalBufferMs: 5000,
    lockRenewalIntervalsMs: { orchestrator: 3000, worker: 25000, session: 25000 },
    maxAttempts: 10,
    activityCancellationGracePeriodMs: 10000,
    unregisteredBackoff: { baseDelayMs: 1000, maxDelayMs: 60000 },
    supportedReplayVersions: { min: '0.0.0', max: '9.9.9' },
    sessionLockTimeoutMs: 30000,
    sessionLockRenewalBufferMs: 5000,
    sessionIdleTimeoutMs: 300000,
    sessionCleanupIntervalMs: 300000,
    maxSessionsPerRuntime: 10,
    workerNodeId: 'pod-0',
    workerTagFilter: { defaultAnd: ['gpu'] },
    workerTagFilterTags: ['gpu'],
    logFormat: 'json',
    logLevel: 'debug',
    serviceName: 'svc',
    serviceVersion: '1.2.3',
    gaugePollIntervalMs: 60000,
    allowUnrenewableLocks: false,
    maxConcurrentOrchestrationFetches: 1,
    maxConcurrentWorkFetches: 0,
    watchdogIntervalMs: 10000,
    orchestrationCacheSize: 1000,
    determinismGuard: 'warn',
    maxPayloadBytes: 16777216,
    onNondeterminism: 'hold',
    historyWarnEvents: 10000,
  }
  const rt = new Runtime(provider, options)
  // A client takes the payload limit too, and reports it back.
  const client = new Client(provider, { maxPayloadBytes: 1024 })
  const limit: number = client.effectiveOptions().maxPayloadBytes
  void limit
  // @ts-expect-error a client has no runtime options
  new Client(provider, { orchestrationConcurrency: 1 })
  new Runtime(provider)
  new Runtime(provider, {})
  // undefined means "crate default", even under exactOptionalPropertyTypes.
  new Runtime(provider, { maxAttempts: undefined, logLevel: 'INFO' })
  new Runtime(provider, { workerTagFilter: 'tags', workerTagFilterTags: ['a', 'b'] })
  new Runtime(provider, { workerNodeId: null, serviceVersion: null, supportedReplayVersions: null })
  new Runtime(provider, { unregisteredBackoff: { maxDelayMs: 5000 } })

  // effectiveOptions() can be handed back to a new Runtime unchanged.
  const eff = rt.effectiveOptions()
  new Runtime(provider, eff)
  const lockMs: number = eff.orchestratorLockTimeoutMs
  const node: string | null = eff.workerNodeId
  const filter: WorkerTagFilter = eff.workerTagFilter
  void lockMs, node, filter

  // @ts-expect-error a typo of orchestratorLockTimeoutMs is not an option
  new Runtime(provider, { orchestratorLockTimeout: 10000 })
  // @ts-expect-error durations are numbers of ms, not strings
  new Runtime(provider, { workerLockTimeoutMs: '30s' })
  // @ts-expect-error logFormat is 'json' | 'pretty' | 'compact'
  new Runtime(provider, { logFormat: 'xml' })
  // @ts-expect-error logLevel is a known level
  new Runtime(provider, { logLevel: 'verbose' })
  // @ts-expect-error workerTagFilter strings are 'defaultOnly' | 'any' | 'none' (or the legacy 'tags' | 'defaultAnd')
  new Runtime(provider, { workerTagFilter: 'all' })
  // @ts-expect-error tags and defaultAnd cannot both be given
  new Runtime(provider, { workerTagFilter: { tags: ['a'], defaultAnd: ['b'] } })
  // @ts-expect-error tags are strings
  new Runtime(provider, { workerTagFilter: { tags: [1] } })
  // @ts-expect-error unregisteredBackoff fields end in Ms
  new Runtime(provider, { unregisteredBackoff: { baseDelay: 5 } })
  // @ts-expect-error supportedReplayVersions needs both bounds
  new Runtime(provider, { supportedReplayVersions: { min: '1.0.0' } })
  // @ts-expect-error allowUnrenewableLocks is a boolean
  new Runtime(provider, { allowUnrenewableLocks: 'yes' })
  // @ts-expect-error a provider is required
  new Runtime()
  // @ts-expect-error a URL is not a provider
  new Runtime('sqlite:./x.db')
  // @ts-expect-error a plain object is not a provider
  new Runtime({}, {})
  return eff
}

export async function providers(): Promise<void> {
  const url = 'postgresql://postgres@127.0.0.1:5432/postgres'
  const a: PostgresProvider = await PostgresProvider.connect(url)
  await PostgresProvider.connect(url, { maxConnections: 4, migrations: 'verifyOnly' })
  await PostgresProvider.connectWithSchema(url, 'app', { migrations: 'apply' })
  await PostgresProvider.connectWithEntra('host', 5432, 'db', 'user')
  await PostgresProvider.connectWithEntra('host', 5432, 'db', 'user', { audience: 'x', maxConnections: 2, acquireTimeoutMs: 1000, refreshIntervalMs: 60000 })
  await PostgresProvider.connectWithSchemaAndEntra('host', 5432, 'db', 'user', 'app', { maxConnections: 2 })
  const b: SqliteProvider = await SqliteProvider.inMemory()
  new Runtime(a)
  new Runtime(b)

  // @ts-expect-error migrations is 'apply' | 'verifyOnly'
  await PostgresProvider.connect(url, { migrations: 'skip' })
  // @ts-expect-error unknown provider option
  await PostgresProvider.connectWithSchema(url, 'app', { poolSize: 3 })
  // @ts-expect-error the port is a number
  await PostgresProvider.connectWithEntra('host', '5432', 'db', 'user')
  // @ts-expect-error providers come from the static factories
  new SqliteProvider()
  // @ts-expect-error a SqliteProvider is not a PostgresProvider
  const c: PostgresProvider = b
  void c
}
