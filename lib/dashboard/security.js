'use strict'
// The dashboard's security checks, applied to every request before a route
// runs: the token (when one is set), the cross-site check of every write,
// the read-only switch, and the headers of every response. docs/dashboard.md
// ("Security") describes the model.
const crypto = require('node:crypto')

/**
 * The headers of every response. The page's scripts and styles are files of
 * its own origin, so the policy allows nothing inline and nothing from
 * elsewhere; no Access-Control-* header is ever sent, so other origins
 * cannot read an answer.
 */
const SECURITY_HEADERS = Object.freeze({
  'Content-Security-Policy': [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
})

/** The header a write must carry: a cross-origin page cannot add it without a CORS preflight, which is never answered. */
const WRITE_HEADER = 'x-duroxide-dashboard'

/** A token of 32 random bytes, URL-safe. */
function generateToken() {
  return crypto.randomBytes(32).toString('base64url')
}

/** The cookie that carries the token after the first visit; named after the token so two dashboards on one host do not clash. */
function cookieName(token) {
  return `duroxide_dashboard_${crypto.createHash('sha256').update(token).digest('hex').slice(0, 12)}`
}

function sameSecret(given, token) {
  if (typeof given !== 'string') return false
  const a = crypto.createHash('sha256').update(given).digest()
  const b = crypto.createHash('sha256').update(token).digest()
  return crypto.timingSafeEqual(a, b)
}

function cookies(req) {
  const out = {}
  for (const part of String(req.headers.cookie || '').split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0) out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim()
  }
  return out
}

/**
 * Which token the request presents: `Authorization: Bearer`, the cookie, or
 * `?token=` (the URL the CLI prints). `fromQuery` tells the caller to set
 * the cookie and redirect to the same URL without it.
 */
function presentedToken(req, url, token) {
  const auth = req.headers.authorization
  if (typeof auth === 'string' && auth.startsWith('Bearer ')) return { value: auth.slice(7), fromQuery: false }
  const cookie = cookies(req)[cookieName(token)]
  if (cookie !== undefined) return { value: decodeURIComponent(cookie), fromQuery: false }
  const q = url.searchParams.get('token')
  if (q !== null) return { value: q, fromQuery: true }
  return undefined
}

/**
 * `undefined` when the request may go on; otherwise `{ status, code, message }`
 * or `{ redirect, cookie }` for a first visit with `?token=`.
 */
function checkToken(req, url, token, cookiePath) {
  if (token === undefined) return undefined
  const given = presentedToken(req, url, token)
  if (!given || !sameSecret(given.value, token)) {
    return { status: 401, code: 'ERR_UNAUTHORIZED', message: 'this dashboard needs its token: open the URL it printed, or send Authorization: Bearer <token>' }
  }
  if (given.fromQuery && req.method === 'GET') {
    const clean = new URL(url)
    clean.searchParams.delete('token')
    return {
      redirect: clean.pathname + clean.search,
      cookie: `${cookieName(token)}=${encodeURIComponent(token)}; Path=${cookiePath}; HttpOnly; SameSite=Strict`,
    }
  }
  return undefined
}

/**
 * A write (POST) must come from the dashboard's own page: JSON, the
 * dashboard's header, and an Origin (when the browser sends one) naming this
 * very host. Browsers send Origin on every cross-origin POST, and
 * Sec-Fetch-Site tells same-origin requests apart even where Origin is
 * absent. Returns `{ status, code, message }` when refused.
 */
function checkWrite(req) {
  const refuse = (why) => ({ status: 403, code: 'ERR_CROSS_ORIGIN', message: `write refused: ${why}` })
  const site = req.headers['sec-fetch-site']
  if (site !== undefined && site !== 'same-origin') return refuse(`a ${site} request`)
  const origin = req.headers.origin
  if (origin !== undefined) {
    let host
    try {
      host = new URL(origin).host
    } catch {
      return refuse('the Origin header is not a URL')
    }
    if (host !== req.headers.host) return refuse(`Origin ${origin} is not this dashboard`)
  }
  if (req.headers[WRITE_HEADER] !== '1') return refuse(`the ${WRITE_HEADER} header is missing`)
  const type = String(req.headers['content-type'] || '')
  if (!type.startsWith('application/json')) return refuse('the body must be application/json')
  return undefined
}

/** Text with the password of any URL in it replaced by `***`. */
function redact(text) {
  return String(text).replace(/([a-z][a-z0-9+.-]*:\/\/[^:/@\s]*):[^@\s/]*@/gi, '$1:***@')
}

module.exports = { SECURITY_HEADERS, WRITE_HEADER, generateToken, checkToken, checkWrite, redact, cookieName }
