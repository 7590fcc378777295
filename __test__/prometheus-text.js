'use strict'
// A strict reader of the Prometheus text exposition format (0.0.4), for the
// metrics tests: every line must be a HELP/TYPE comment or a sample, every
// sample's family must have a TYPE, and values must be numbers.
const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const TYPES = ['counter', 'gauge', 'histogram', 'summary', 'untyped']
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( -?\d+)?$/
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/

function parseLabels(text, line) {
  const labels = {}
  let rest = text
  while (rest.length > 0) {
    const m = LABEL.exec(rest)
    if (!m) throw new Error(`bad labels in: ${line}`)
    labels[m[1]] = m[2].replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\')
    rest = rest.slice(m[0].length)
  }
  return labels
}

/** The family a sample belongs to (`x_bucket` -> `x` for histograms). */
function familyOf(name, types) {
  if (types.has(name)) return name
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (name.endsWith(suffix)) {
      const base = name.slice(0, -suffix.length)
      if (['histogram', 'summary'].includes(types.get(base))) return base
    }
  }
  return null
}

/** Parses `text`; throws on any line that is not valid exposition format. */
function parsePrometheus(text) {
  const types = new Map()
  const samples = []
  for (const line of text.split('\n')) {
    if (line === '') continue
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line)
      if (!m) {
        if (/^# (HELP|TYPE)/.test(line)) throw new Error(`bad comment: ${line}`)
        continue
      }
      if (!NAME.test(m[2])) throw new Error(`bad metric name: ${line}`)
      if (m[1] === 'TYPE') {
        if (!TYPES.includes(m[3])) throw new Error(`bad type: ${line}`)
        if (types.has(m[2])) throw new Error(`second TYPE for ${m[2]}`)
        types.set(m[2], m[3])
      }
      continue
    }
    const m = SAMPLE.exec(line)
    if (!m) throw new Error(`bad sample line: ${line}`)
    const value = m[4] === '+Inf' ? Infinity : m[4] === '-Inf' ? -Infinity : m[4] === 'NaN' ? NaN : Number(m[4])
    if (!['+Inf', '-Inf', 'NaN'].includes(m[4]) && !Number.isFinite(value)) throw new Error(`bad value: ${line}`)
    const family = familyOf(m[1], types)
    if (!family) throw new Error(`sample without a TYPE: ${line}`)
    samples.push({ name: m[1], family, type: types.get(family), labels: parseLabels(m[3] ?? '', line), value })
  }
  return { types, samples }
}

/** Sum of the samples named `name` whose labels include `where`. */
function sum(parsed, name, where = {}) {
  return parsed.samples
    .filter((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0)
}

module.exports = { parsePrometheus, sum }
