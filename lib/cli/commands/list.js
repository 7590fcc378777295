'use strict'
// `list`: instances in the store's order (newest first where the store
// records creation), optionally only one status or orchestration name.
const { INSTANCE_STATUSES, statusOption } = require('../statuses')
const { intOption } = require('../args')
const { mapLimited } = require('../concurrent')
const { table, when } = require('../output')

const command = {
  name: 'list',
  summary: 'list instances with their status',
  usage: `Usage: duroxide-node list [--status <status>] [--name <orchestration>] [--limit <n>]

  --status <status>   only instances whose current execution is ${INSTANCE_STATUSES.join(', ')}
  --name <name>       only instances of this orchestration
  --limit <n>         at most n instances (default 50; 0 = all)`,
  options: {
    status: { type: 'string' },
    name: { type: 'string' },
    limit: { type: 'string' },
  },
  positionals: [],

  prepare({ values }) {
    return { status: statusOption(command, values.status), limit: intOption(command, 'limit', values.limit, { fallback: 50 }) }
  },

  async run({ client, values, prepared: { status, limit } }) {
    const ids = status === undefined ? await client.listAllInstances() : await client.listInstancesByStatus(status)
    const instances = []
    let truncated = false
    // Info is read in pages, so a small --limit reads little; scanning stops
    // at the first match past the limit, which is how `truncated` is known.
    const page = 32
    for (let start = 0; start < ids.length && !truncated; start += page) {
      const infos = await mapLimited(ids.slice(start, start + page), 4, (id) => infoOrNull(client, id))
      for (const info of infos) {
        if (!info || (values.name !== undefined && info.orchestrationName !== values.name)) continue
        if (limit !== 0 && instances.length === limit) {
          truncated = true
          break
        }
        instances.push(info)
      }
    }
    return { instances, truncated }
  },

  render(result) {
    const rows = result.instances.map((i) => ({
      id: i.instanceId,
      name: i.orchestrationName,
      version: i.orchestrationVersion,
      status: i.status,
      exec: i.currentExecutionId,
      created: when(i.createdAt),
      updated: when(i.updatedAt),
      parent: i.parentInstanceId,
    }))
    let text = table([
      { key: 'id', title: 'INSTANCE' },
      { key: 'name', title: 'ORCHESTRATION' },
      { key: 'version', title: 'VERSION' },
      { key: 'status', title: 'STATUS' },
      { key: 'exec', title: 'EXEC' },
      { key: 'created', title: 'CREATED' },
      { key: 'updated', title: 'UPDATED' },
      { key: 'parent', title: 'PARENT' },
    ], rows)
    if (result.truncated) text += `(more instances match: --limit 0 lists all)\n`
    return text
  },
}

/** An instance deleted between the listing and the read is skipped, not an error. */
async function infoOrNull(client, id) {
  try {
    return await client.getInstanceInfo(id)
  } catch (err) {
    if (err.code === 'ERR_NOT_FOUND') return null
    throw err
  }
}

module.exports = command
