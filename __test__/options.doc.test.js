'use strict'
// docs/options.md is generated from the option definitions (names from
// src/options/mod.rs, docs from types/options.d.ts, defaults from
// effectiveOptions()) and must match what the generator writes today.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { optionNames, documentedFields, render, generate } = require('../scripts/options-doc')

const ROOT = path.join(__dirname, '..')

test('docs/options.md is what scripts/options-doc.js generates', async () => {
  const expected = await generate()
  const actual = fs.readFileSync(path.join(ROOT, 'docs', 'options.md'), 'utf8')
  assert.equal(actual, expected, 'docs/options.md is stale: run `node scripts/options-doc.js`')
})

test('every option Rust accepts is documented, with its default, and nothing else', async () => {
  const names = optionNames(fs.readFileSync(path.join(ROOT, 'src', 'options', 'mod.rs'), 'utf8'))
  const fields = documentedFields(fs.readFileSync(path.join(ROOT, 'types', 'options.d.ts'), 'utf8'))
  assert.ok(names.length >= 31, `${names.length} names`)
  const page = await generate()
  for (const name of names) {
    assert.ok(page.includes(`\n## ${name}\n`), `${name} has a section`)
    assert.ok(fields.get(name).doc.length > 20, `${name} has a description`)
  }
  assert.match(page, /\| \[`orchestrationConcurrency`\]\(#orchestrationconcurrency\) \| `number` \| `2` \|/)
  assert.match(page, /\n## orchestratorLockTimeoutMs\n\nType: `number`\. Default: `5000`\.\n/)
})

test('the generator refuses an option that Rust accepts but the types do not document, and the reverse', () => {
  const fields = new Map([['a', { type: 'number', doc: 'A.' }]])
  assert.throws(() => render({ names: ['a', 'newOption'], fields, defaults: {} }), /newOption accepted by src\/options but not documented/)
  assert.throws(() => render({ names: [], fields, defaults: {} }), /a documented in types\/options\.d\.ts but not accepted/)
  const page = render({ names: ['a'], fields, defaults: { a: 3 } })
  assert.match(page, /\| \[`a`\]\(#a\) \| `number` \| `3` \|/)
})

test('the client options have their own section, from ClientOptions and CLIENT_OPTION_NAMES', async () => {
  const names = optionNames(fs.readFileSync(path.join(ROOT, 'src', 'options', 'client.rs'), 'utf8'), 'CLIENT_OPTION_NAMES')
  assert.deepEqual(names, ['maxPayloadBytes'])
  const page = await generate()
  assert.match(page, /\n## Client options\n/)
  assert.match(page, /\| \[`maxPayloadBytes`\]\(#client-maxpayloadbytes\) \| `number` \| `16777216` \|/)
  assert.match(page, /\n### Client: maxPayloadBytes\n\nType: `number`\. Default: `16777216`\.\n/)
  const fields = new Map([['a', { type: 'number', doc: 'A.' }]])
  const client = { names: ['a', 'b'], fields, defaults: { a: 1 } }
  assert.throws(() => render({ names: ['a'], fields, defaults: { a: 3 }, client }), /b accepted by src\/options but not documented .*ClientOptions/)
})
