#!/usr/bin/env node
'use strict'
// Generates docs/options.md from the option definitions, so the page cannot
// drift from the code:
// - the option names and their order: `OPTION_NAMES` in src/options/mod.rs
//   (the table the Rust parser accepts; an unknown name is refused there);
// - each option's type and description: its JSDoc in `RuntimeOptions` of
//   types/options.d.ts (what editors show);
// - each option's default: `runtime.effectiveOptions()` of a runtime built
//   with no options (the defaults Rust fills in; on SQLite).
// The client's options follow, from `CLIENT_OPTION_NAMES` in
// src/options/client.rs, `ClientOptions` and `client.effectiveOptions()`.
// A name without a documented field, or a documented field Rust does not
// accept, is an error. __test__/options.doc.test.js fails when the page
// differs from what this script generates.
//
//   node scripts/options-doc.js           rewrite docs/options.md
//   node scripts/options-doc.js --check   exit 1 if docs/options.md is stale
const fs = require('node:fs')
const path = require('node:path')

const ROOT = path.join(__dirname, '..')
const OUT = path.join(ROOT, 'docs', 'options.md')

/** The string literals of `const OPTION_NAMES: &[&str] = &[ ... ];` (or another `constant`). */
function optionNames(rustSource, constant = 'OPTION_NAMES') {
  const m = new RegExp(`const ${constant}: &\\[&str\\] = &\\[([\\s\\S]*?)\\];`).exec(rustSource)
  if (!m) throw new Error(`${constant} not found in src/options`)
  return [...m[1].matchAll(/"([^"]+)"/g)].map((x) => x[1])
}

/** `{ name -> { type, doc } }` of the fields of `interface RuntimeOptions` (or another `iface`) in a .d.ts. */
function documentedFields(dts, iface = 'RuntimeOptions') {
  const start = dts.indexOf(`export interface ${iface} {`)
  if (start < 0) throw new Error(`interface ${iface} not found in types/options.d.ts`)
  const lines = dts.slice(start).split('\n').slice(1)
  const fields = new Map()
  let comment = null
  let inComment = false
  for (const line of lines) {
    const t = line.trim()
    if (t === '}') break
    if (t.startsWith('/**')) {
      inComment = !t.endsWith('*/')
      comment = [t.replace(/^\/\*\*\s?/, '').replace(/\s?\*\/$/, '')]
      continue
    }
    if (inComment) {
      if (t.endsWith('*/')) inComment = false
      comment.push(t.replace(/^\*\/?\s?/, '').replace(/\s?\*\/$/, ''))
      continue
    }
    const f = /^([A-Za-z0-9_]+)\?: (.*)$/.exec(t)
    if (f) {
      if (!comment) throw new Error(`types/options.d.ts: ${f[1]} has no doc comment`)
      const type = f[2].replace(/\s*\|\s*undefined$/, '')
      fields.set(f[1], { type, doc: paragraphs(comment) })
      comment = null
    }
  }
  return fields
}

/** Comment lines joined into paragraphs; `- ` list items kept on their own lines. */
function paragraphs(lines) {
  const out = []
  let cur = ''
  const flush = () => {
    if (cur) out.push(cur)
    cur = ''
  }
  for (const raw of lines) {
    const l = raw.trim()
    if (l === '') flush()
    else if (l.startsWith('- ')) {
      flush()
      cur = l
    } else cur = cur ? `${cur} ${l}` : l
  }
  flush()
  return out.join('\n\n').trim()
}

/** A value as JS source (`{ a: 1 }`, `'x'`). */
function js(value) {
  if (typeof value === 'string') return `'${value}'`
  if (Array.isArray(value)) return `[${value.map(js).join(', ')}]`
  if (value !== null && typeof value === 'object') {
    return `{ ${Object.entries(value).map(([k, v]) => `${k}: ${js(v)}`).join(', ')} }`
  }
  return String(value)
}

function code(value) {
  return value === undefined ? '—' : `\`${js(value)}\``
}

function cell(text) {
  return text.replace(/\|/g, '\\|').replace(/\n+/g, ' ')
}

/** Throws when the accepted `names` and the documented `fields` differ. */
function sameNames(names, fields, where) {
  const missing = names.filter((n) => !fields.has(n))
  if (missing.length) throw new Error(`option(s) ${missing.join(', ')} accepted by src/options but not documented in types/options.d.ts (${where})`)
  const extra = [...fields.keys()].filter((n) => !names.includes(n))
  if (extra.length) throw new Error(`option(s) ${extra.join(', ')} documented in types/options.d.ts but not accepted by src/options (${where})`)
}

/** The options table and one section per option, headings at `level`. */
function sections(out, { names, fields, defaults }, level) {
  out.push('| Option | Type | Default |')
  out.push('|---|---|---|')
  for (const name of names) {
    const { type } = fields.get(name)
    out.push(`| [\`${name}\`](#${anchor(level, name)}) | \`${cell(type)}\` | ${cell(code(defaults[name]))} |`)
  }
  for (const name of names) {
    const { type, doc } = fields.get(name)
    out.push('')
    out.push(`${'#'.repeat(level)} ${level === 2 ? name : `Client: ${name}`}`)
    out.push('')
    out.push(`Type: \`${type}\`. Default: ${code(defaults[name])}.`)
    out.push('')
    out.push(doc)
  }
}

/** The heading anchor of an option's section (client ones are prefixed, as names repeat). */
function anchor(level, name) {
  return level === 2 ? name.toLowerCase() : `client-${name.toLowerCase()}`
}

/** The page, from the three sources; throws when they disagree on the names. */
function render({ names, fields, defaults, client }) {
  sameNames(names, fields, 'RuntimeOptions, OPTION_NAMES')
  if (client) sameNames(client.names, client.fields, 'ClientOptions, CLIENT_OPTION_NAMES')
  const out = []
  out.push('# Runtime options')
  out.push('')
  out.push('<!-- Generated by scripts/options-doc.js from src/options/mod.rs (names), types/options.d.ts')
  out.push('     (types and descriptions) and runtime.effectiveOptions() (defaults). Do not edit:')
  out.push('     run `node scripts/options-doc.js`; __test__/options.doc.test.js fails when it is stale. -->')
  out.push('')
  out.push('`new Runtime(provider, options)` takes these options. Every one is optional:')
  out.push('an omitted or `undefined` option keeps its default. Durations are integer')
  out.push('milliseconds. Anything invalid (an unknown name, a wrong type, a value out of')
  out.push('range) throws `InvalidOptionError` (`ERR_INVALID_OPTION`) from the constructor,')
  out.push('naming the option; nothing is clamped. `runtime.effectiveOptions()` returns every')
  out.push('option with its defaults filled in. The defaults below are those of a runtime on')
  out.push('SQLite; where Postgres differs, the description says so.')
  out.push('')
  sections(out, { names, fields, defaults }, 2)
  if (client) {
    out.push('')
    out.push('## Client options')
    out.push('')
    out.push('`new Client(provider, options)` takes these options, with the same rules: every')
    out.push('one is optional, and anything invalid throws `InvalidOptionError` from the')
    out.push('constructor. `client.effectiveOptions()` returns them with defaults filled in.')
    out.push('')
    sections(out, client, 3)
  }
  out.push('')
  return out.join('\n')
}

/** The page from the sources in this checkout (the defaults need the built binary). */
async function generate() {
  const names = optionNames(fs.readFileSync(path.join(ROOT, 'src', 'options', 'mod.rs'), 'utf8'))
  const dts = fs.readFileSync(path.join(ROOT, 'types', 'options.d.ts'), 'utf8')
  const fields = documentedFields(dts)
  const { SqliteProvider, Runtime, Client } = require('..')
  // Only built, never started: an in-memory store is enough.
  const provider = await SqliteProvider.inMemory()
  const defaults = new Runtime(provider).effectiveOptions()
  const client = {
    names: optionNames(fs.readFileSync(path.join(ROOT, 'src', 'options', 'client.rs'), 'utf8'), 'CLIENT_OPTION_NAMES'),
    fields: documentedFields(dts, 'ClientOptions'),
    defaults: new Client(provider).effectiveOptions(),
  }
  return render({ names, fields, defaults, client })
}

async function main() {
  const text = await generate()
  if (process.argv.includes('--check')) {
    const current = fs.existsSync(OUT) ? fs.readFileSync(OUT, 'utf8') : ''
    if (current !== text) {
      console.error('docs/options.md is stale: run `node scripts/options-doc.js`')
      process.exit(1)
    }
    return
  }
  fs.writeFileSync(OUT, text)
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err.message)
    process.exit(1)
  })
}

module.exports = { optionNames, documentedFields, render, generate }
