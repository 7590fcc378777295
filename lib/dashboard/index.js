'use strict'
// createDashboard(provider, options): a plain Node `(req, res[, next])`
// handler serving the dashboard's page, its static files and its JSON API,
// to mount in Express, Fastify, Koa or http.createServer (docs/dashboard.md).
// `duroxide-node dashboard` serves the same handler (server.js).
const { InvalidOptionError, describe } = require('../errors')
const { nativeProviderOf, PostgresProvider } = require('../providers')
const { Runtime } = require('../runtime')
const { Reads } = require('./reads')
const { Writes } = require('./writes')
const { routes, httpStatus } = require('./api')
const { loadAssets } = require('./assets')
const { SECURITY_HEADERS, checkToken, checkWrite, redact } = require('./security')
const pkg = require('../../package.json')

/** Largest JSON body a write takes. */
const MAX_BODY = 1024 * 1024

const OPTION_CHECKS = {
  readOnly: (v) => typeof v === 'boolean' || 'a boolean',
  token: (v) => (typeof v === 'string' && v.length > 0) || 'a non-empty string',
  basePath: (v) => (typeof v === 'string' && (v === '' || /^\/[^?#]*[^/?#]$/.test(v))) || "a path like '/duroxide' (starting with '/', not ending with '/'), or ''",
  runtime: (v) => v instanceof Runtime || 'a Runtime',
  label: (v) => typeof v === 'string' || 'a string',
}

function dashboardOptions(options) {
  if (options === undefined || options === null) return {}
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidOptionError(`createDashboard() options must be an object, got ${describe(options)}`)
  }
  const out = {}
  for (const [key, value] of Object.entries(options)) {
    if (!(key in OPTION_CHECKS)) {
      throw new InvalidOptionError(`createDashboard(): unknown option '${key}' (known: ${Object.keys(OPTION_CHECKS).join(', ')})`)
    }
    if (value === undefined) continue
    const ok = OPTION_CHECKS[key](value)
    if (ok !== true) throw new InvalidOptionError(`createDashboard(): ${key} must be ${ok}, got ${describe(value)}`)
    out[key] = value
  }
  return out
}

function send(res, status, body, headers = {}) {
  res.writeHead(status, { ...SECURITY_HEADERS, ...headers })
  res.end(body)
}

function sendJson(res, status, value) {
  send(res, status, JSON.stringify(value), { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' })
}

function sendError(res, status, code, message) {
  sendJson(res, status, { error: { code, message: redact(message) } })
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    // Frameworks that parsed the body already (express.json()) leave it here.
    if (req.body !== undefined && typeof req.body === 'object' && !Buffer.isBuffer(req.body)) return resolve(req.body)
    const chunks = []
    let size = 0
    req.on('data', (c) => {
      size += c.length
      if (size > MAX_BODY) {
        reject(Object.assign(new Error(`the request body is larger than ${MAX_BODY} bytes`), { code: 'ERR_INVALID_ARGUMENT' }))
        req.destroy()
      } else chunks.push(c)
    })
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      try {
        const body = text === '' ? {} : JSON.parse(text)
        if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new Error('not a JSON object')
        resolve(body)
      } catch (err) {
        reject(Object.assign(new Error(`the request body must be a JSON object: ${err.message}`), { code: 'ERR_INVALID_ARGUMENT' }))
      }
    })
    req.on('error', reject)
  })
}

/**
 * A request handler for the dashboard of `provider` (a SqliteProvider or
 * PostgresProvider). Options: `readOnly` (no writes: 403, and no write
 * controls on the page), `token` (every request must present it),
 * `basePath` (where it is mounted, e.g. '/duroxide'), `runtime` (a Runtime
 * of this process whose health and counters the overview shows), `label`
 * (a name for the store shown in the page's header).
 */
function createDashboard(provider, options) {
  nativeProviderOf(provider, 'createDashboard()')
  const opts = dashboardOptions(options)
  const basePath = opts.basePath ?? ''
  const readOnly = opts.readOnly === true
  const reads = new Reads(provider, opts.runtime)
  const config = {
    readOnly,
    label: opts.label === undefined ? undefined : redact(opts.label),
    backend: provider instanceof PostgresProvider ? 'postgres' : 'sqlite',
    runtime: opts.runtime !== undefined,
    version: pkg.version,
  }
  const api = routes({ reads, writes: new Writes(reads.client), config })
  const assets = loadAssets()

  async function serveApi(req, res, route, query) {
    const isWrite = req.method === 'POST'
    if (isWrite && readOnly) return sendError(res, 403, 'ERR_READ_ONLY', 'this dashboard is read-only')
    if (isWrite) {
      const refused = checkWrite(req)
      if (refused) return sendError(res, refused.status, refused.code, refused.message)
    }
    const handler = api[`${req.method} ${route}`]
    if (!handler) {
      const known = ['GET', 'POST'].filter((m) => api[`${m} ${route}`])
      if (known.length === 0) return sendError(res, 404, 'ERR_NOT_FOUND', `no API route '${route}'`)
      res.setHeader('Allow', known.join(', '))
      return sendError(res, 405, 'ERR_METHOD', `${req.method} is not allowed on '${route}'`)
    }
    try {
      const body = isWrite ? await readBody(req) : undefined
      sendJson(res, 200, await handler(query, body))
    } catch (err) {
      const code = (err && err.code) || 'ERR_INTERNAL'
      sendError(res, httpStatus(code), code, err && err.message ? err.message : String(err))
    }
  }

  function serveAsset(req, res, rel) {
    const file = assets.get(rel)
    if (!file) return send(res, 404, 'not found', { 'Content-Type': 'text/plain; charset=utf-8' })
    if (req.headers['if-none-match'] === file.etag) return send(res, 304, undefined, { ETag: file.etag })
    send(res, 200, file.body, { 'Content-Type': file.type, ETag: file.etag, 'Cache-Control': 'no-cache' })
  }

  return function dashboard(req, res, next) {
    // Express strips its mount path from req.url and keeps the whole one in originalUrl.
    const url = new URL(req.originalUrl || req.url, 'http://dashboard.invalid')
    const inside = url.pathname === basePath || url.pathname.startsWith(`${basePath}/`)
    if (!inside) {
      if (typeof next === 'function') return next()
      return send(res, 404, 'not found', { 'Content-Type': 'text/plain; charset=utf-8' })
    }
    const denied = checkToken(req, url, opts.token, `${basePath}/`)
    if (denied && denied.redirect) return send(res, 303, undefined, { Location: denied.redirect, 'Set-Cookie': denied.cookie })
    if (denied) return sendError(res, denied.status, denied.code, denied.message)
    const rel = url.pathname.slice(basePath.length)
    // The page's URLs are relative: it must be served at '<basePath>/'.
    if (rel === '') return send(res, 308, undefined, { Location: `${basePath}/${url.search}` })
    if (rel.startsWith('/api/')) return serveApi(req, res, rel.slice(4), url.searchParams)
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return send(res, 405, 'method not allowed', { Allow: 'GET', 'Content-Type': 'text/plain; charset=utf-8' })
    }
    serveAsset(req, res, rel === '/' ? 'index.html' : rel.slice(1))
  }
}

module.exports = { createDashboard }
