'use strict'
// Output: every command builds one plain result object; `--json` prints it as
// one JSON document, otherwise the command's `render` turns it into text
// (tables and key/value blocks) with the helpers here. Nothing but results
// goes to stdout; errors and prompts go to stderr.
//
// Stored text (ids, names, payloads, errors, event data) may hold control
// characters, and printed raw they would drive the operator's terminal:
// retitle it, clear it, or move the cursor to forge other lines (the class
// of kubectl's CVE-2021-25743). So every text this CLI prints goes through
// `escapeControls`, which shows them as escapes (`\u001b`); `--json` stays
// exact JSON, with the characters JSON leaves raw (DEL, C1) escaped too.

/** C0, DEL and C1: what a terminal may act on. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g
const SHORT = { '\t': '\\t', '\n': '\\n', '\r': '\\r' }

/**
 * `text` with every control character written as an escape (`\n`, `\t`, `\r`,
 * otherwise `\u001b`). `keepNewlines` leaves line breaks alone, for a whole
 * rendered page whose fields were escaped already.
 */
function escapeControls(text, { keepNewlines = false } = {}) {
  return String(text).replace(CONTROL, (c) => {
    if (keepNewlines && c === '\n') return c
    return SHORT[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`
  })
}

/** Left-aligned columns separated by two spaces, with a header row. */
function table(columns, rows) {
  if (rows.length === 0) return '(none)\n'
  const cells = rows.map((row) => columns.map((c) => cell(row[c.key])))
  const widths = columns.map((c, i) => Math.max(c.title.length, ...cells.map((r) => r[i].length)))
  const line = (values) => values.map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i]))).join('  ').trimEnd()
  return [line(columns.map((c) => c.title)), ...cells.map(line)].join('\n') + '\n'
}

/** `key: value` lines, keys padded to one width; undefined values are left out. */
function fields(pairs) {
  const present = pairs.filter(([, v]) => v !== undefined)
  const width = Math.max(0, ...present.map(([k]) => k.length))
  return present.map(([k, v]) => `${(k + ':').padEnd(width + 1)} ${cell(v)}`).join('\n') + '\n'
}

/** One value on one line, control characters escaped. */
function cell(v) {
  if (v === undefined || v === null) return '-'
  return escapeControls(v)
}

/** An ISO timestamp of epoch ms, or '-' when unknown (0 or absent). */
function when(ms) {
  return typeof ms === 'number' && ms > 0 ? new Date(ms).toISOString() : '-'
}

/** One line of at most `max` characters, for payloads shown in a table. */
function clip(text, max = 100) {
  const flat = String(text).replace(/\s*\n\s*/g, ' ')
  return flat.length > max ? flat.slice(0, max - 1) + '…' : flat
}

/** Parses stored JSON text; text that is not JSON stays as it is. */
function parseStored(text) {
  if (typeof text !== 'string') return text
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** JSON escapes C0 itself; DEL and C1 only occur inside strings, where `\u` escapes keep the value exact. */
function printJson(stream, value) {
  const text = JSON.stringify(value, null, 2).replace(/[\u007f-\u009f]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`)
  stream.write(text + '\n')
}

module.exports = { table, fields, when, clip, parseStored, printJson, escapeControls }
