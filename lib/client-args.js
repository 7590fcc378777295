'use strict'
// The arguments and results of the Client's management calls: filter and
// prune options shaped for the native client (a Date becomes epoch ms,
// unknown keys are refused), and results without their absent fields.
const { InvalidArgumentError, InvalidOptionError, describe } = require('./errors')
const { identifier } = require('./validate')

/** Copies `src` without its null/undefined fields (`output?` means absent, not null). */
function compact(src) {
  const out = {}
  for (const [k, v] of Object.entries(src)) if (v !== null && v !== undefined) out[k] = v
  return out
}

function plainObject(name, value) {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidArgumentError(`${name} must be an object, got ${describe(value)}`)
  }
  return value
}

function checkKeys(name, value, known) {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      throw new InvalidOptionError(`${name}.${key} is not a known field (expected ${known.join(', ')})`)
    }
  }
}

/** Epoch ms from a number or a Date. */
function epochMs(name, value) {
  if (value === undefined || value === null) return undefined
  const ms = value instanceof Date ? value.getTime() : value
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0) {
    throw new InvalidOptionError(`${name} must be a Date or non-negative integer epoch milliseconds, got ${describe(value)}`)
  }
  return ms
}

function u32(name, value, max = 0xffffffff) {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
    throw new InvalidOptionError(`${name} must be an integer 0..${max}, got ${describe(value)}`)
  }
  return value
}

function filterArg(filter) {
  const f = plainObject('filter', filter)
  if (!f) return null
  checkKeys('filter', f, ['instanceIds', 'completedBefore', 'limit'])
  const out = {}
  if (f.instanceIds !== undefined && f.instanceIds !== null) {
    if (!Array.isArray(f.instanceIds)) {
      throw new InvalidOptionError(`filter.instanceIds must be an array of instance ids, got ${describe(f.instanceIds)}`)
    }
    out.instanceIds = f.instanceIds.map((id, i) => {
      if (typeof id !== 'string' || id.length === 0) {
        throw new InvalidOptionError(`filter.instanceIds[${i}] must be a non-empty string, got ${describe(id)}`)
      }
      return identifier(`filter.instanceIds[${i}]`, id)
    })
  }
  const completedBefore = epochMs('filter.completedBefore', f.completedBefore)
  if (completedBefore !== undefined) out.completedBefore = completedBefore
  const limit = u32('filter.limit', f.limit)
  if (limit !== undefined) out.limit = limit
  return out
}

function pruneOptionsArg(options) {
  const o = plainObject('options', options)
  if (!o) return null
  checkKeys('options', o, ['keepLast', 'completedBefore'])
  const out = {}
  // duroxide-pg hands keepLast to SQL as a signed 32-bit integer.
  const keepLast = u32('options.keepLast', o.keepLast, 0x7fffffff)
  if (keepLast !== undefined) out.keepLast = keepLast
  const completedBefore = epochMs('options.completedBefore', o.completedBefore)
  if (completedBefore !== undefined) out.completedBefore = completedBefore
  return out
}

/**
 * The options of a start, as the native trace context (or undefined): only
 * the types are checked here, the header formats in src/rules.rs.
 */
function startOptionsArg(options) {
  const o = plainObject('options', options)
  if (!o) return undefined
  checkKeys('options', o, ['traceparent', 'tracestate'])
  for (const key of ['traceparent', 'tracestate']) {
    if (o[key] !== undefined && o[key] !== null && typeof o[key] !== 'string') {
      throw new InvalidArgumentError(`options.${key} must be a string, got ${describe(o[key])}`)
    }
  }
  if (o.traceparent == null) {
    if (o.tracestate != null) throw new InvalidArgumentError('options.tracestate needs options.traceparent')
    return undefined
  }
  return o.tracestate == null ? { traceparent: o.traceparent } : { traceparent: o.traceparent, tracestate: o.tracestate }
}

/**
 * `new Client(provider, options)`'s options for Rust (src/options/client.rs
 * judges them): an object or nothing; what JSON cannot carry is refused here.
 */
function clientOptionsArg(options) {
  if (options === undefined || options === null) return undefined
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidOptionError(`options must be an object, got ${describe(options)}`)
  }
  const out = {}
  for (const [k, v] of Object.entries(options)) {
    if (v === undefined) continue
    if (typeof v === 'number' && !Number.isFinite(v)) throw new InvalidOptionError(`${k} must be a finite number, got ${v}`)
    out[k] = v
  }
  return out
}

module.exports = { compact, filterArg, pruneOptionsArg, startOptionsArg, clientOptionsArg }
