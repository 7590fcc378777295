// Types of the ESM entry (index.mjs). Its named exports are index.js's own
// objects, so they are declared once, in index.d.ts, and re-exported here; the
// default export is module.exports, as Node gives it to `import api from`.
// This file exists so `import` resolves to ESM-format types: with only
// index.d.ts, TypeScript would type an ES module as CommonJS.
export * from './index.js'
import api from './index.js'
export default api
