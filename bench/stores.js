'use strict'
// Stores for one bench run: a fresh SQLite file, or a fresh schema in a
// database of the bench's own (so pg_stat_database counts only the bench's
// transactions), dropped afterwards.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const crypto = require('node:crypto')
const { execFileSync } = require('node:child_process')

const DATABASE_URL = process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/postgres'

function psql(url, sql) {
  return execFileSync('psql', [url, '-v', 'ON_ERROR_STOP=1', '-At', '-c', sql], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim()
}

const uniqueName = (prefix) => `${prefix}_${process.pid}_${crypto.randomBytes(3).toString('hex')}`

function withDatabase(url, name) {
  const u = new URL(url)
  u.pathname = `/${name}`
  return u.toString()
}

/**
 * The Postgres side of a bench run: its own database when the server allows
 * CREATE DATABASE, else the DATABASE_URL database (then `idle` counts include
 * other sessions' transactions, and the run says so).
 */
class PgBench {
  constructor() {
    this.dbName = uniqueName('dxbench')
    try {
      psql(DATABASE_URL, `CREATE DATABASE ${this.dbName}`)
      this.url = withDatabase(DATABASE_URL, this.dbName)
      this.ownDatabase = true
    } catch (err) {
      process.stderr.write(`bench: cannot create a database (${err.message.split('\n')[0]}); using DATABASE_URL, idle counts include other sessions\n`)
      this.url = DATABASE_URL
      this.ownDatabase = false
    }
  }

  version() {
    return psql(this.url, 'SHOW server_version')
  }

  /** Committed plus rolled-back transactions of the database so far. */
  transactions() {
    return Number(psql(this.url, 'SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()'))
  }

  store() {
    const schema = uniqueName('dxb')
    return { store: 'postgres', url: this.url, schema, remove: () => psql(this.url, `DROP SCHEMA IF EXISTS ${schema} CASCADE`) }
  }

  close() {
    if (this.ownDatabase) psql(DATABASE_URL, `DROP DATABASE IF EXISTS ${this.dbName} WITH (FORCE)`)
  }
}

function sqliteStore() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dxbench-'))
  const file = path.join(dir, 'bench.db')
  // duroxide's SqliteProvider opens but does not create the file.
  fs.writeFileSync(file, '')
  return { store: 'sqlite', url: `sqlite:${file}`, remove: () => fs.rmSync(dir, { recursive: true, force: true }) }
}

module.exports = { PgBench, sqliteStore, DATABASE_URL }
