'use strict'
// The module surface: every export api.md lists exists with the right kind,
// the limits are the crate's, and index.d.ts declares exactly what the JS
// exports (methods of each class included), without leaking native.d.ts.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const api = require('..')
const dts = require('./dts')

const root = path.join(__dirname, '..')

const CLASSES = ['SqliteProvider', 'PostgresProvider', 'Client', 'Runtime', 'OrchestrationContext', 'ActivityContext', 'OrchestrationHandle']
const ERROR_CODES = {
  DuroxideError: 'ERR_INTERNAL',
  InvalidOptionError: 'ERR_INVALID_OPTION',
  InvalidArgumentError: 'ERR_INVALID_ARGUMENT',
  NotFoundError: 'ERR_NOT_FOUND',
  AlreadyExistsError: 'ERR_ALREADY_EXISTS',
  TimeoutError: 'ERR_TIMEOUT',
  ProviderError: 'ERR_PROVIDER',
  RuntimeStateError: 'ERR_RUNTIME_STATE',
  OrchestrationFailedError: 'ERR_ORCHESTRATION_FAILED',
  AbortError: 'ERR_ABORTED',
  ActivityFailedError: 'ERR_ACTIVITY_FAILED',
  SubOrchestrationFailedError: 'ERR_SUB_ORCHESTRATION_FAILED',
  NondeterministicError: 'ERR_NONDETERMINISTIC',
}
const LIMITS = {
  MAX_WORKER_TAGS: 5,
  MAX_TAG_NAME_BYTES: 256,
  MAX_KV_KEYS: 150,
  MAX_KV_VALUE_BYTES: 65536,
  MAX_CUSTOM_STATUS_BYTES: 262144,
}

const isClass = (v) => typeof v === 'function' && /^class\b/.test(Function.prototype.toString.call(v))

/** Public methods a JS class really has (prototype functions, not `_internal` ones). */
function jsMethods(Cls) {
  return Object.getOwnPropertyNames(Cls.prototype)
    .filter((n) => n !== 'constructor' && !n.startsWith('_'))
    .filter((n) => typeof Object.getOwnPropertyDescriptor(Cls.prototype, n).value === 'function')
    .sort()
}

function jsStatics(Cls) {
  return Object.getOwnPropertyNames(Cls)
    .filter((n) => !['length', 'name', 'prototype'].includes(n) && typeof Cls[n] === 'function')
    .sort()
}

test('every class of api.md is exported as a class', () => {
  for (const name of CLASSES) assert.ok(isClass(api[name]), `${name} should be a class, got ${typeof api[name]}`)
})

test('initTracing is a plain function', () => {
  assert.equal(typeof api.initTracing, 'function')
  assert.equal(isClass(api.initTracing), false)
})

test('the limits equal duroxide runtime::limits', () => {
  for (const [name, value] of Object.entries(LIMITS)) {
    assert.equal(api[name], value, name)
    assert.ok(Number.isInteger(api[name]), `${name} is an integer`)
  }
})

test('providers are built by their static factories', () => {
  assert.deepEqual(jsStatics(api.SqliteProvider), ['inMemory', 'open'])
  assert.deepEqual(jsStatics(api.PostgresProvider), ['connect', 'connectWithEntra', 'connectWithSchema', 'connectWithSchemaAndEntra', 'migrate'])
})

test('each error class is a DuroxideError with its own stable code and name', () => {
  for (const [name, code] of Object.entries(ERROR_CODES)) {
    const Cls = api[name]
    assert.ok(isClass(Cls), `${name} is a class`)
    const err = name === 'DuroxideError' ? new Cls('boom') : new Cls('boom', { cause: 'why' })
    assert.ok(err instanceof Error, `${name} extends Error`)
    assert.ok(err instanceof api.DuroxideError, `${name} extends DuroxideError`)
    assert.equal(err.code, code, `${name}.code`)
    assert.equal(err.name, name)
    assert.equal(err.message, 'boom')
    if (name !== 'DuroxideError') assert.equal(err.cause, 'why')
  }
})

test('index.d.ts compiles on its own', () => {
  assert.deepEqual(dts.diagnostics(), [])
})

test('index.d.ts declares exactly the values index.js exports, with the same kinds', () => {
  const kinds = dts.exportKinds()
  const declaredValues = Object.keys(kinds).filter((n) => kinds[n] !== 'type').sort()
  assert.deepEqual(declaredValues, Object.keys(api).sort())
  for (const [name, kind] of Object.entries(kinds)) {
    if (kind === 'class') assert.ok(isClass(api[name]), `${name} is declared a class`)
    if (kind === 'function') assert.ok(typeof api[name] === 'function' && !isClass(api[name]), `${name} is declared a function`)
    if (kind === 'const') assert.equal(typeof api[name], 'number', `${name} is declared a constant`)
  }
})

test('declared methods of every class match the JS prototype, typed aliases included', () => {
  for (const name of [...CLASSES, ...Object.keys(ERROR_CODES)]) {
    const declared = dts.classMembers(name)
    const Cls = api[name]
    if (name in ERROR_CODES) {
      assert.deepEqual(declared.methods, [], `${name} declares no methods of its own`)
      continue
    }
    assert.deepEqual(declared.methods, jsMethods(Cls), `${name} methods: index.d.ts vs lib/`)
    assert.deepEqual(declared.statics, jsStatics(Cls), `${name} static methods: index.d.ts vs lib/`)
  }
})

test('accessors on the JS prototypes are declared as properties', () => {
  for (const name of CLASSES) {
    const accessors = Object.getOwnPropertyNames(api[name].prototype).filter(
      (n) => !n.startsWith('_') && typeof Object.getOwnPropertyDescriptor(api[name].prototype, n).get === 'function',
    )
    const declared = dts.classMembers(name).properties
    for (const a of accessors) assert.ok(declared.includes(a), `${name}.${a} is declared`)
  }
})

test('the types never expose the napi-generated native module', () => {
  const files = dts.declarationFiles()
  assert.ok(files.length > 1, 'index.d.ts imports its parts')
  for (const file of files) {
    const text = fs.readFileSync(file, 'utf8')
    assert.doesNotMatch(text, /from\s+['"][./]*native(\.js|\.d\.ts)?['"]/, `${path.relative(root, file)} imports native`)
    assert.doesNotMatch(text, /\bNative(Runtime|Client|Provider|OrchestrationContext|ActivityContext)\b/, path.relative(root, file))
  }
  assert.ok(!('NativeRuntime' in api) && !('NativeClient' in api), 'native classes are not exported')
})

test('every declaration file ships in the package', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'))
  assert.equal(pkg.types, 'index.d.ts')
  assert.equal(pkg.exports['.'].require.types, './index.d.ts')
  assert.equal(pkg.exports['.'].import.types, './index.d.mts')
  for (const file of dts.declarationFiles()) {
    const rel = path.relative(root, file).split(path.sep).join('/')
    const shipped = pkg.files.some((f) => (f.endsWith('/') ? rel.startsWith(f) : rel === f))
    assert.ok(shipped, `${rel} is covered by package.json "files"`)
  }
})
