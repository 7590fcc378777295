'use strict'
// The dashboard, measured (printed, not asserted):
//
// 1. The list query's server time at 100,000 instances, on SQLite and
//    Postgres: the first page, a page deep into the list, and each filter,
//    as the median of repeated `searchInstances` calls (the native query the
//    API runs), plus the API's round trip for the first page. On Postgres
//    the same queries again with an index on instances (created_at,
//    instance_id), which duroxide-pg's schema lacks, to show the query
//    walks it when there is one.
// 2. The time Chromium takes to show a 10,000-event history: the timeline
//    and the history table of one execution, and the longest main-thread
//    task meanwhile.
//
//   node bench/dashboard.js [--instances 100000] [--activities 5000] [--runs 15]
//
// The 100,000 instances are rows written with SQL (instances and their
// current executions, as duroxide writes them), since the list query reads
// nothing else; the 10,000-event history is a real orchestration's.
const { parseArgs } = require('node:util')
const { execFileSync } = require('node:child_process')
const { SqliteProvider, PostgresProvider, Runtime, Client, createDashboard } = require('..')
const native = require('../lib/native')
const { nativeProviderOf } = require('../lib/providers')
const { PgBench, sqliteStore } = require('./stores')
const { serve } = require('../__test__/fixtures/dashboard-serve')
const { openBrowser } = require('../__test__/fixtures/browser')

const { values: args } = parseArgs({
  options: {
    instances: { type: 'string', default: '100000' },
    activities: { type: 'string', default: '5000' },
    runs: { type: 'string', default: '15' },
  },
})
const N = Number(args.instances)
const ACTIVITIES = Number(args.activities)
const RUNS = Number(args.runs)

const psql = (url, sql) => execFileSync('psql', [url, '-v', 'ON_ERROR_STOP=1', '-At', '-c', sql], { encoding: 'utf8' }).trim()
const sqlite = (file, sql) => execFileSync('sqlite3', [file, sql], { encoding: 'utf8' }).trim()
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

/** Rows of N instances: 5 names, 70% Completed, 20% Running, 10% Failed, created over the last 30 days. */
const ROWS = {
  sqlite: `
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${N})
    INSERT INTO instances (instance_id, orchestration_name, orchestration_version, current_execution_id, custom_status, custom_status_version, created_at)
    SELECT printf('bench-%07d', i), 'Flow' || (i % 5), '1.0.0', 1, CASE WHEN i % 10 = 3 THEN 'step ' || i END, 1,
           datetime('now', printf('-%d seconds', (${N} - i) * 2592000 / ${N}))
    FROM n;
    INSERT INTO executions (instance_id, execution_id, status, output, completed_at)
    SELECT instance_id, 1,
           CASE WHEN rowid % 10 < 7 THEN 'Completed' WHEN rowid % 10 < 9 THEN 'Running' ELSE 'Failed' END,
           CASE WHEN rowid % 10 < 7 THEN '{"total":' || rowid || '}' WHEN rowid % 10 = 9 THEN 'payment declined ' || rowid END,
           CASE WHEN rowid % 10 < 7 OR rowid % 10 = 9 THEN CAST((julianday(created_at) - 2440587.5) * 86400000 AS INTEGER) + 5000 END
    FROM instances;`,
  postgres: (s) => `
    INSERT INTO ${s}.instances (instance_id, orchestration_name, orchestration_version, current_execution_id, custom_status, custom_status_version, created_at, updated_at)
    SELECT 'bench-' || lpad(i::text, 7, '0'), 'Flow' || (i % 5), '1.0.0', 1, CASE WHEN i % 10 = 3 THEN 'step ' || i END, 1,
           now() - (${N} - i) * (interval '1 second' * ${2592000 / N}), now()
    FROM generate_series(1, ${N}) i;
    INSERT INTO ${s}.executions (instance_id, execution_id, status, output, started_at, completed_at)
    SELECT instance_id, 1,
           CASE WHEN right(instance_id, 1)::int < 7 THEN 'Completed' WHEN right(instance_id, 1)::int < 9 THEN 'Running' ELSE 'Failed' END,
           CASE WHEN right(instance_id, 1)::int < 7 THEN '{"total":1}' WHEN right(instance_id, 1) = '9' THEN 'payment declined ' || ltrim(right(instance_id, 7), '0') END,
           created_at,
           CASE WHEN right(instance_id, 1)::int < 7 OR right(instance_id, 1) = '9' THEN created_at + interval '5 seconds' END
    FROM ${s}.instances;
    ANALYZE ${s}.instances; ANALYZE ${s}.executions;`,
}

const DAY = 86400000
/** The searches timed: name → search fields. */
function searches(deepCursor) {
  const now = Date.now()
  return {
    'first page (50)': {},
    'page 101 (cursor)': { cursor: deepCursor },
    'status Failed': { status: 'Failed' },
    'name Flow3': { orchestrationName: 'Flow3' },
    'id prefix bench-00999': { idPrefix: 'bench-00999' },
    'created in one day, 3 weeks ago': { createdFrom: now - 21 * DAY, createdTo: now - 20 * DAY },
    'completed in the last hour': { completedFrom: now - 3600000 },
    'text "declined 9999"': { text: 'declined 9999' },
    'oldest first': { order: 'oldest' },
  }
}

async function timeSearches(search) {
  let cursor
  for (let i = 0; i < 100; i++) cursor = (await search.searchInstances({ cursor })).nextCursor
  const out = {}
  for (const [name, query] of Object.entries(searches(cursor))) {
    const times = []
    let rows = 0
    for (let r = 0; r < RUNS; r++) {
      const t = process.hrtime.bigint()
      rows = (await search.searchInstances(query)).instances.length
      times.push(Number(process.hrtime.bigint() - t) / 1e6)
    }
    out[name] = { ms: median(times), rows }
  }
  return out
}

async function apiRoundTrip(provider) {
  const web = await serve(createDashboard(provider, { readOnly: true }))
  const times = []
  for (let r = 0; r < RUNS; r++) {
    const t = process.hrtime.bigint()
    await (await fetch(`${web.base}api/instances`)).json()
    times.push(Number(process.hrtime.bigint() - t) / 1e6)
  }
  await web.close()
  return median(times)
}

function printTable(title, columns) {
  const names = Object.keys(Object.values(columns)[0])
  const heads = Object.keys(columns)
  console.log(`\n${title}`)
  console.log(`  ${'query'.padEnd(34)}${heads.map((h) => h.padStart(22)).join('')}`)
  for (const n of names) {
    console.log(`  ${n.padEnd(34)}${heads.map((h) => `${columns[h][n].ms.toFixed(1)} ms (${columns[h][n].rows})`.padStart(22)).join('')}`)
  }
}

async function listBench() {
  const results = {}
  // SQLite
  const ls = sqliteStore()
  try {
    const provider = await SqliteProvider.open(ls.url)
    const file = ls.url.slice('sqlite:'.length)
    sqlite(file, ROWS.sqlite)
    const search = new native.NativeClient(nativeProviderOf(provider, 'bench'))
    results.sqlite = await timeSearches(search)
    results.sqliteApi = await apiRoundTrip(provider)
  } finally {
    ls.remove()
  }
  // Postgres, without and with an index on the creation time.
  const pg = new PgBench()
  const target = pg.store()
  try {
    const provider = await PostgresProvider.connectWithSchema(target.url, target.schema, { maxConnections: 2 })
    psql(target.url, ROWS.postgres(target.schema))
    const search = new native.NativeClient(nativeProviderOf(provider, 'bench'))
    results.postgres = await timeSearches(search)
    results.postgresApi = await apiRoundTrip(provider)
    psql(target.url, `CREATE INDEX bench_created ON ${target.schema}.instances (created_at, instance_id); ANALYZE ${target.schema}.instances`)
    results.postgresIndexed = await timeSearches(search)
  } finally {
    target.remove()
    pg.close()
  }
  printTable(`List query server time at ${N.toLocaleString('en-US')} instances (median of ${RUNS}; rows returned)`, {
    SQLite: results.sqlite,
    Postgres: results.postgres,
    'Postgres + index': results.postgresIndexed,
  })
  console.log(`  API round trip, first page: SQLite ${results.sqliteApi.toFixed(1)} ms, Postgres ${results.postgresApi.toFixed(1)} ms`)
}

async function historyBench() {
  const ls = sqliteStore()
  const provider = await SqliteProvider.open(ls.url)
  const rt = new Runtime(provider, { dispatcherPollIntervalMs: 5 })
  rt.registerActivity('Step', async (ctx, i) => ({ step: i, note: 'x'.repeat(40) }))
  rt.registerOrchestration('Wide', function* (ctx, n) {
    const tasks = []
    for (let i = 0; i < n; i++) tasks.push(ctx.scheduleActivity('Step', i))
    yield ctx.all(tasks)
    return n
  })
  await rt.start()
  const client = new Client(provider)
  const t0 = Date.now()
  await client.startOrchestration('wide-1', 'Wide', ACTIVITIES)
  const ended = await client.waitForOrchestration('wide-1', 600000)
  if (ended.status !== 'Completed') console.log(`  (the orchestration ended ${ended.status}: ${ended.error})`)
  const events = (await client.readExecutionHistory('wide-1', 1)).length
  await rt.shutdown(1000)
  console.log(`\nHistory render: ${events.toLocaleString('en-US')} events (the orchestration took ${((Date.now() - t0) / 1000).toFixed(1)} s to run)`)
  const web = await serve(createDashboard(provider, { readOnly: true }))
  const reads = []
  let bytes = 0
  for (let r = 0; r < 5; r++) {
    const t = process.hrtime.bigint()
    bytes = (await (await fetch(`${web.base}api/history?id=wide-1`)).text()).length
    reads.push(Number(process.hrtime.bigint() - t) / 1e6)
  }
  console.log(`  the API's history answer: ${median(reads).toFixed(0)} ms, ${(bytes / 1e6).toFixed(1)} MB (median of 5)`)
  const browser = await openBrowser()
  try {
    const { page } = browser
    await page.goto(web.base)
    await page.locator('.count .n').first().waitFor()
    await page.evaluate(() => {
      window.__longest = 0
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) window.__longest = Math.max(window.__longest, e.duration)
      }).observe({ type: 'longtask', buffered: false })
    })
    for (const tab of ['timeline', 'history']) {
      const selector = tab === 'timeline' ? '#timeline .tl-bar' : '.history-row'
      const start = Date.now()
      await page.evaluate((h) => { location.hash = h }, `#/instance?id=wide-1&tab=${tab}`)
      await page.locator(selector).first().waitFor({ timeout: 120000 })
      const shown = Date.now() - start
      const rows = await page.locator(tab === 'timeline' ? '#timeline .vrow' : '.history-row').count()
      // Scrolling to the end draws only the rows in view.
      const scrollStart = Date.now()
      await page.evaluate((sel) => { const v = document.querySelector(sel); v.scrollTop = v.scrollHeight }, tab === 'timeline' ? '.tl-viewport' : '.h-viewport')
      await page.waitForFunction(([sel, last]) => [...document.querySelectorAll(sel)].some((r) => r.textContent.includes(last)), [tab === 'timeline' ? '#timeline .vrow' : '.history-row', tab === 'timeline' ? 'Step' : `#${events}`])
      console.log(`  ${tab.padEnd(9)} shown in ${shown} ms (${rows} rows in the DOM); scrolled to the end in ${Date.now() - scrollStart} ms`)
    }
    console.log(`  longest main-thread task meanwhile: ${Math.round(await page.evaluate(() => window.__longest))} ms`)
  } finally {
    await browser.close()
    await web.close()
    ls.remove()
  }
}

async function main() {
  await listBench()
  await historyBench()
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
