// The dashboard's API, relative to the page (which is served at
// '<basePath>/'). Writes carry the dashboard's header; the server refuses
// writes without it (a cross-site page cannot add it).
const base = new URL('.', location.href)

async function answer(res) {
  let body
  try {
    body = await res.json()
  } catch {
    body = {}
  }
  if (!res.ok) {
    const e = body.error || {}
    throw Object.assign(new Error(e.message || `HTTP ${res.status}`), { code: e.code, status: res.status })
  }
  return body
}

export async function get(path, params = {}) {
  const url = new URL(`api/${path}`, base)
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, String(v))
  return answer(await fetch(url, { headers: { Accept: 'application/json' }, credentials: 'same-origin' }))
}

export async function post(path, body) {
  return answer(await fetch(new URL(`api/${path}`, base), {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', 'X-Duroxide-Dashboard': '1', Accept: 'application/json' },
    body: JSON.stringify(body),
  }))
}
