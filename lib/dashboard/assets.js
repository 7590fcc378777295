'use strict'
// The page's static files (lib/dashboard/assets/), shipped in the package
// as they are: no build step, nothing fetched from elsewhere. Read once per
// dashboard and served from memory with an ETag.
const fs = require('node:fs')
const path = require('node:path')
const crypto = require('node:crypto')

const DIR = path.join(__dirname, 'assets')

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.txt': 'text/plain; charset=utf-8',
}

/** Every file under the assets directory, by its path relative to it (`app.js`, `vendor/uPlot.iife.min.js`). */
function loadAssets() {
  const files = new Map()
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name)
      if (entry.isDirectory()) walk(full)
      else if (TYPES[path.extname(entry.name)]) {
        const body = fs.readFileSync(full)
        const rel = path.relative(DIR, full).split(path.sep).join('/')
        files.set(rel, {
          body,
          type: TYPES[path.extname(entry.name)],
          etag: `"${crypto.createHash('sha256').update(body).digest('base64url').slice(0, 16)}"`,
        })
      }
    }
  }
  walk(DIR)
  return files
}

module.exports = { loadAssets, ASSETS_DIR: DIR }
