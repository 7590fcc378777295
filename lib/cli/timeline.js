'use strict'
// A readable one-line summary of each history event, for `history` on a
// terminal. `data` arrives as JSON text with payloads embedded as values
// (lib/client.js, src/client/history.rs); the summaries read the
// per-kind shapes documented in types/client.d.ts.
const { when, clip } = require('./output')

const json = (v) => JSON.stringify(v)

/** The first `message` found in a failure's details (their shape is the crate's). */
function failureMessage(details) {
  if (details && typeof details === 'object') {
    if (typeof details.message === 'string') return details.message
    for (const v of Object.values(details)) {
      const m = failureMessage(v)
      if (m !== undefined) return m
    }
  }
  return undefined
}

/**
 * The reason of a cancellation failure (`cancelInstance`), whose details
 * carry it in `Application.kind.Cancelled` with an empty message; else undefined.
 */
function cancelReason(details) {
  const reason = details?.Application?.kind?.Cancelled?.reason
  return typeof reason === 'string' ? reason : undefined
}

/** What one event says, from its parsed data. */
function summary(kind, data) {
  if (data === undefined) return ''
  switch (kind) {
    case 'OrchestrationStarted':
      return `${data.name}@${data.version} input=${json(data.input)}`
    case 'ActivityScheduled':
      return `${data.name} input=${json(data.input)}`
    case 'SubOrchestrationScheduled':
      return `${data.name} as ${data.instance} input=${json(data.input)}`
    case 'ActivityCompleted':
    case 'SubOrchestrationCompleted':
      return `result=${json(data)}`
    case 'OrchestrationCompleted':
      return `output=${json(data)}`
    case 'ActivityFailed':
    case 'SubOrchestrationFailed':
    case 'OrchestrationFailed': {
      const cancelled = cancelReason(data)
      if (cancelled !== undefined) return `cancelled: ${cancelled}`
      return `error=${failureMessage(data) ?? json(data)}`
    }
    case 'TimerCreated':
      return `fires at ${when(data.fireAtMs)}`
    case 'TimerFired':
      return `was due at ${when(data.fireAtMs)}`
    case 'ExternalSubscribed':
    case 'QueueSubscribed':
      return `name=${data.name}`
    case 'ExternalEvent':
    case 'QueueEventDelivered':
      return `name=${data.name} data=${json(data.data)}`
    case 'QueueSubscriptionCancelled':
      return `reason=${data.reason}`
    default:
      return json(data)
  }
}

/** Table rows of a history: time since the first event, kind, link to the scheduling event, summary. */
function timelineRows(events) {
  const t0 = events.length > 0 ? events[0].timestampMs : 0
  return events.map((e) => ({
    id: `#${e.eventId}`,
    at: when(e.timestampMs),
    offset: `+${((e.timestampMs - t0) / 1000).toFixed(3)}s`,
    kind: e.kind,
    source: e.sourceEventId === undefined ? '' : `#${e.sourceEventId}`,
    what: clip(summary(e.kind, e.data), 120),
  }))
}

module.exports = { timelineRows, summary, failureMessage, cancelReason }
