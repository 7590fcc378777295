'use strict'
// The dashboard's JSON API under `<basePath>/api/`: GET routes read, POST
// routes write (security.js has already refused what may not write). Each
// route takes the request's query or JSON body and returns a plain object.
const { InvalidArgumentError } = require('../errors')

/** List filters, as query parameters, and the native search fields they become. */
const TEXT_FILTERS = {
  status: 'status',
  name: 'orchestrationName',
  version: 'orchestrationVersion',
  prefix: 'idPrefix',
  text: 'text',
  order: 'order',
  cursor: 'cursor',
}
const NUMBER_FILTERS = {
  createdFrom: 'createdFrom',
  createdTo: 'createdTo',
  completedFrom: 'completedFrom',
  completedTo: 'completedTo',
  limit: 'limit',
}

function intParam(query, name, { required = false } = {}) {
  const raw = query.get(name)
  if (raw === null || raw === '') {
    if (required) throw new InvalidArgumentError(`the '${name}' parameter is required`)
    return undefined
  }
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new InvalidArgumentError(`the '${name}' parameter must be a non-negative integer, got '${raw}'`)
  }
  return Number(raw)
}

function idParam(query) {
  const id = query.get('id')
  if (!id) throw new InvalidArgumentError("the 'id' parameter (an instance id) is required")
  return id
}

/** The native search of a list request; the values are judged natively (src/rules.rs). */
function searchOf(query) {
  const known = new Set([...Object.keys(TEXT_FILTERS), ...Object.keys(NUMBER_FILTERS)])
  for (const key of query.keys()) {
    if (!known.has(key)) throw new InvalidArgumentError(`unknown list parameter '${key}' (known: ${[...known].join(', ')})`)
  }
  const search = {}
  for (const [param, fieldName] of Object.entries(TEXT_FILTERS)) {
    const v = query.get(param)
    if (v !== null && v !== '') search[fieldName] = v
  }
  for (const [param, fieldName] of Object.entries(NUMBER_FILTERS)) {
    const v = intParam(query, param)
    if (v !== undefined) search[fieldName] = v
  }
  return search
}

/** `{ 'GET /overview': (query, body) => Promise<object>, ... }` for one dashboard. */
function routes({ reads, writes, config }) {
  return {
    'GET /config': async () => config,
    'GET /overview': async () => reads.overview(),
    'GET /instances': async (query) => reads.instances(searchOf(query)),
    'GET /instance': async (query) => reads.instance(idParam(query), query.get('full') === '1'),
    'GET /tree': async (query) => reads.tree(idParam(query)),
    'GET /history': async (query) => reads.history(idParam(query), intParam(query, 'execution')),
    'GET /event': async (query) =>
      reads.event(idParam(query), intParam(query, 'execution', { required: true }), intParam(query, 'event', { required: true })),
    'POST /raise': async (query, body) => writes.raise(body),
    'POST /cancel': async (query, body) => writes.cancel(body),
    'POST /delete': async (query, body) => writes.delete(body),
    'POST /prune': async (query, body) => writes.prune(body),
    'POST /bulk': async (query, body) => writes.bulk(body),
  }
}

/** The HTTP status of an error's code. */
function httpStatus(code) {
  switch (code) {
    case 'ERR_INVALID_ARGUMENT':
    case 'ERR_INVALID_OPTION':
      return 400
    case 'ERR_NOT_FOUND':
      return 404
    case 'ERR_RUNTIME_STATE':
      return 409
    case 'ERR_PROVIDER':
      return 502
    case 'ERR_TIMEOUT':
      return 504
    default:
      return 500
  }
}

module.exports = { routes, httpStatus, searchOf }
