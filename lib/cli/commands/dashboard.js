'use strict'
// `dashboard`: serves the web dashboard (lib/dashboard/) on the store until
// Ctrl-C. The store is opened as every command opens it (lib/cli/store.js:
// nothing is created or migrated); the page's writes are the same calls as
// raise, cancel, delete and prune, and --read-only refuses them all.
const { UsageError } = require('../errors')
const { intOption } = require('../args')
const { serveDashboard } = require('../../dashboard/server')
const { redact } = require('../../dashboard/security')

const command = {
  name: 'dashboard',
  summary: 'serve a web dashboard of the store until Ctrl-C',
  usage: `Usage: duroxide-node dashboard [--host <address>] [--port <n>] [--read-only] [--token <secret>]

  --host <address>   address to listen on (default 127.0.0.1)
  --port <n>         port (default 0: a free one)
  --read-only        serve no writes: no raise, cancel, delete or prune
  --token <secret>   every request must present it; required off loopback, where
                     one is generated when none is given

  Prints the URL to open (with the token when there is one) and serves until
  Ctrl-C. Writes from the page are refused unless they come from the page
  itself (same origin).`,
  options: {
    host: { type: 'string' },
    port: { type: 'string' },
    'read-only': { type: 'boolean' },
    token: { type: 'string' },
  },
  positionals: [],

  prepare({ values }) {
    const port = intOption(command, 'port', values.port, { fallback: 0 })
    if (port > 65535) throw new UsageError(`dashboard: --port must be 0..65535, got '${values.port}'`, command.usage)
    if (values.token !== undefined && values.token.length < 16) {
      throw new UsageError('dashboard: --token must be at least 16 characters', command.usage)
    }
    return { port, host: values.host ?? '127.0.0.1' }
  },

  async run({ provider, backend, values, prepared: { port, host }, io }) {
    const label = storeLabel(backend, values, io.env || process.env)
    const served = await serveDashboard(provider, { host, port, token: values.token, readOnly: values['read-only'] === true, label })
    io.stdout.write(`duroxide-node dashboard on ${label}${values['read-only'] ? ' (read-only)' : ''}: ${served.url}\n`)
    // Until Ctrl-C (or a TERM from a supervisor); then the command ends as usual.
    await new Promise((resolve) => {
      const stop = () => {
        process.off('SIGINT', stop)
        process.off('SIGTERM', stop)
        served.close().then(resolve)
      }
      process.on('SIGINT', stop)
      process.on('SIGTERM', stop)
    })
    return { url: served.url.replace(/\?token=.*$/, ''), stopped: true }
  },

  render() {
    return ''
  },
}

/** Which store, for the page's header and the first line: the URL without its password. */
function storeLabel(backend, values, env) {
  const url = values['database-url'] ?? env.DUROXIDE_DATABASE_URL
  const schema = values.schema ?? (env.DUROXIDE_SCHEMA || undefined)
  let shown = redact(url)
  if (backend === 'postgres') {
    try {
      const u = new URL(url)
      if (u.password) u.password = '***'
      for (const key of [...u.searchParams.keys()]) if (/pass/i.test(key)) u.searchParams.set(key, '***')
      shown = u.toString()
    } catch {
      // redact() above already took any password out.
    }
  }
  return schema ? `${shown} (schema ${schema})` : shown
}

module.exports = command
