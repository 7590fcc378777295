'use strict'
// Every code block of README.md runs as written: each ```js block is saved
// under the file name the text gives it and run with node; each ```ts block
// compiles under tsc --strict and its output runs too; each ```sh line is a
// command this package has. A `console.log(...) // text` line says what the
// example prints, and the run must print it. Relative links lead to files.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const root = path.join(__dirname, '..')
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc')
const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8')
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'))

/** `{ lang, code, name }` of each fenced block; `name` is the last `file.ext` the text named before it. */
function blocks(markdown) {
  return [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => {
    const before = markdown.slice(0, m.index)
    const names = [...before.matchAll(/`([\w.-]+\.(?:js|mjs|cjs|ts))`/g)].map((n) => n[1])
    return { lang: m[1], code: m[2], name: names[names.length - 1] }
  })
}

/** What a block says it prints: the `// text` after each console.log line. */
function expectedOutput(code) {
  return [...code.matchAll(/^\s*console\.log\(.*\) \/\/ (.+)$/gm)].map((m) => m[1])
}

/** A directory inside the package, so that 'duroxide-node' resolves to it through "exports". */
function workDir(t) {
  const dir = fs.mkdtempSync(path.join(root, '__test__', '.readme-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

function runNode(file, cwd) {
  const env = { ...process.env }
  delete env.RUST_LOG
  return spawnSync(process.execPath, [file], { cwd, env, encoding: 'utf8', timeout: 120000 })
}

function assertPrints(r, code, what) {
  assert.equal(r.status, 0, `${what} failed:\n${r.stdout}\n${r.stderr}`)
  const expected = expectedOutput(code)
  assert.ok(expected.length > 0, `${what} says what it prints`)
  assert.deepEqual(r.stdout.trim().split('\n'), expected, `${what} printed:\n${r.stdout}\n${r.stderr}`)
}

test('the README is short and its blocks are js, ts or sh', () => {
  const lines = readme.trimEnd().split('\n').length
  assert.ok(lines <= 150, `README.md has ${lines} lines`)
  const langs = blocks(readme).map((b) => b.lang)
  assert.deepEqual([...new Set(langs)].sort(), ['js', 'sh', 'ts'])
})

test('every README js block runs as written, saved as the file the text names', (t) => {
  const js = blocks(readme).filter((b) => b.lang === 'js')
  assert.ok(js.length >= 1)
  for (const b of js) {
    assert.ok(b.name && /\.(c?js|mjs)$/.test(b.name), `the text names a file for:\n${b.code}`)
    const dir = workDir(t)
    fs.writeFileSync(path.join(dir, b.name), b.code)
    assertPrints(runNode(b.name, dir), b.code, b.name)
  }
})

test('every README ts block compiles under tsc --strict and runs', (t) => {
  const ts = blocks(readme).filter((b) => b.lang === 'ts')
  assert.ok(ts.length >= 1)
  for (const b of ts) {
    assert.ok(b.name && b.name.endsWith('.ts'), `the text names a file for:\n${b.code}`)
    const dir = workDir(t)
    fs.writeFileSync(path.join(dir, b.name), b.code)
    fs.writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          exactOptionalPropertyTypes: true,
          noUncheckedIndexedAccess: true,
          target: 'ES2022',
          lib: ['ES2022'],
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          types: ['node'],
          typeRoots: [path.join(root, 'node_modules', '@types')],
          rootDir: '.',
          outDir: 'out',
        },
        include: [b.name],
      }),
    )
    const r = spawnSync(process.execPath, [tsc, '-p', path.join(dir, 'tsconfig.json')], { encoding: 'utf8', timeout: 120000 })
    assert.equal(r.status, 0, `tsc failed on ${b.name}:\n${r.stdout}${r.stderr}`)
    assertPrints(runNode(path.join('out', b.name.replace(/\.ts$/, '.js')), dir), b.code, b.name)
  }
})

test('every README sh line is a command of this package', () => {
  const lines = blocks(readme)
    .filter((b) => b.lang === 'sh')
    .flatMap((b) => b.code.split('\n'))
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter(Boolean)
  assert.ok(lines.length >= 3)
  for (const line of lines) {
    const install = /^npm install (\S+)$/.exec(line)
    const script = /^npm (?:run (\S+)|(test))$/.exec(line)
    if (install) assert.equal(install[1], pkg.name, line)
    else if (script) assert.ok(pkg.scripts[script[1] ?? script[2]], `package.json has no script for: ${line}`)
    else assert.fail(`not a command this test knows: ${line}`)
  }
})

test('the README names the two commands and links files that exist', () => {
  assert.match(readme, /^npm run quickstart\b/m)
  assert.match(readme, /^npm test\b/m)
  const links = [...readme.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)].map((m) => m[1]).filter((l) => !/^[a-z]+:/.test(l))
  assert.ok(links.length >= 8)
  for (const link of links) {
    assert.ok(fs.existsSync(path.join(root, link)), `README links ${link}, which does not exist`)
  }
})
