'use strict'
// The HTTP server of `duroxide-node dashboard`: createDashboard's handler on
// a host and port. A loopback address needs no token; any other address
// gets one (generated when none is given), since anyone who can reach the
// port could otherwise read and operate every instance.
const http = require('node:http')
const { createDashboard } = require('./index')
const { generateToken, SECURITY_HEADERS } = require('./security')

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '[::1]'])

function isLoopback(host) {
  return LOOPBACK_NAMES.has(host) || /^127(\.\d{1,3}){3}$/.test(host)
}

/**
 * A page of another site can reach a loopback server through a DNS name it
 * controls that resolves to 127.0.0.1 (DNS rebinding) and then reads its
 * answers as same-origin. Without a token, only requests that name the
 * server by a loopback address or `localhost` are served.
 */
function hostAllowed(hostHeader) {
  if (typeof hostHeader !== 'string') return false
  const name = hostHeader.startsWith('[') ? hostHeader.slice(0, hostHeader.indexOf(']') + 1) : hostHeader.split(':')[0]
  return isLoopback(name)
}

/**
 * Starts the server; resolves `{ url, token, server, close() }` once it
 * listens. `url` is the one to open, with the token when there is one.
 */
function serveDashboard(provider, { host = '127.0.0.1', port = 0, token, readOnly = false, label } = {}) {
  const loopback = isLoopback(host)
  const effectiveToken = token ?? (loopback ? undefined : generateToken())
  const handler = createDashboard(provider, { readOnly, label, ...(effectiveToken ? { token: effectiveToken } : {}) })
  const server = http.createServer((req, res) => {
    if (!effectiveToken && !hostAllowed(req.headers.host)) {
      res.writeHead(403, { ...SECURITY_HEADERS, 'Content-Type': 'text/plain; charset=utf-8' })
      res.end('this dashboard answers only to a loopback host name (127.0.0.1, localhost, [::1])\n')
      return
    }
    handler(req, res)
  })
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      const address = server.address()
      const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address
      const url = `http://${shownHost}:${address.port}/${effectiveToken ? `?token=${encodeURIComponent(effectiveToken)}` : ''}`
      const close = () => new Promise((done) => {
        server.close(() => done())
        server.closeAllConnections()
      })
      resolve({ url, token: effectiveToken, server, close })
    })
  })
}

module.exports = { serveDashboard, isLoopback }
