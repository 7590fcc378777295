'use strict'
// Packaging: what a user's `npm install duroxide-node` gets. The root package
// and this host's platform package (npm/<platform>, with the binary the build
// produced) are packed with `npm pack`, installed from the tarballs into an
// empty directory offline and with cargo off the PATH, and a hello
// orchestration runs through `require` and through `import`. Without the
// platform package the loader must say which package it looked for.
const test = require('node:test')
const assert = require('node:assert/strict')
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const ts = require('typescript')

const root = path.join(__dirname, '..')
const rootPkg = readJson(path.join(root, 'package.json'))
const npmDir = path.join(root, 'npm')
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'))
}

/** The npm/ folder napi-rs uses for this host: <platform>-<arch>[-<abi>]. */
function hostTarget() {
  const { platform, arch } = process
  if (platform === 'linux') return `linux-${arch}-${process.report.getReport().header.glibcVersionRuntime ? 'gnu' : 'musl'}`
  if (platform === 'win32') return `win32-${arch}-msvc`
  return `${platform}-${arch}`
}

/**
 * A user's shell: no npm_* variables inherited from `npm test`, PATH without
 * any directory holding cargo (so nothing can be built from source), and the
 * Node under test first, so npm and the app run on it.
 */
function userEnv() {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)))
  const cargo = process.platform === 'win32' ? 'cargo.exe' : 'cargo'
  const dirs = (env.PATH ?? '').split(path.delimiter).filter((d) => d && !fs.existsSync(path.join(d, cargo)))
  env.PATH = [path.dirname(process.execPath), ...dirs].join(path.delimiter)
  // No preloads of this checkout (`--fast-paths=off` preloads one): it would
  // load the repository's native module beside the installed one, and glibc
  // has static TLS for one copy only ("cannot allocate memory in static TLS block").
  delete env.NODE_OPTIONS
  return env
}

function run(cmd, args, opts) {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 180000, ...opts })
}

/** `npm pack` in dir; returns the tarball's path and the files it holds. */
function pack(dir, dest, env) {
  const [info] = JSON.parse(run(npm, ['pack', '--json', '--pack-destination', dest], { cwd: dir, env }))
  return { tarball: path.join(dest, info.filename), files: info.files.map((f) => f.path).sort() }
}

/** A fresh app directory with the given tarballs installed from the local files only. */
function installApp(dir, tarballs, env, cache) {
  fs.mkdirSync(dir)
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: path.basename(dir), version: '1.0.0', private: true }))
  run(npm, ['install', '--offline', '--no-audit', '--no-fund', '--cache', cache, ...tarballs], { cwd: dir, env })
  return dir
}

const target = hostTarget()
const platformPkgName = `${rootPkg.name}-${target}`

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dx-pack-'))
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }))

// Filled once before the tests: the packed tarballs and the installed apps.
const setup = {}

test.before(() => {
  const env = userEnv()
  assert.throws(() => run('cargo', ['--version'], { env }), /ENOENT/, 'cargo must not be reachable from the install')

  const platformSrc = path.join(npmDir, target)
  assert.ok(fs.existsSync(platformSrc), `npm/${target} exists for this host`)
  const binaryName = readJson(path.join(platformSrc, 'package.json')).main
  const built = path.join(root, binaryName)
  assert.ok(fs.existsSync(built), `${binaryName} was built (npm run build:debug)`)

  const packs = path.join(tmp, 'packs')
  fs.mkdirSync(packs)
  setup.root = pack(root, packs, env)

  const platformDir = path.join(tmp, target)
  fs.cpSync(platformSrc, platformDir, { recursive: true })
  // A debug binary is mostly debug info (~185 MB); stripping the copy, as the
  // release profile does, keeps packing and installing fast. The code is the same.
  try {
    run('strip', ['--strip-all', '-o', path.join(platformDir, binaryName), built])
  } catch (err) {
    if (err.code !== 'ENOENT') throw err
    fs.copyFileSync(built, path.join(platformDir, binaryName))
  }
  setup.platform = pack(platformDir, packs, env)
  setup.binaryName = binaryName

  const cache = path.join(tmp, 'npm-cache')
  setup.app = installApp(path.join(tmp, 'app'), [setup.root.tarball, setup.platform.tarball], env, cache)
  setup.bare = installApp(path.join(tmp, 'bare'), [setup.root.tarball], env, cache)
  setup.env = env
}, { timeout: 600000 })

test('the root tarball holds both entry points, both type entries and the loader, but no binary', () => {
  for (const f of ['package.json', 'index.js', 'index.mjs', 'index.d.ts', 'index.d.mts', 'native.js', 'lib/native.js', 'types/runtime.d.ts']) {
    assert.ok(setup.root.files.includes(f), `root tarball has ${f}`)
  }
  assert.deepEqual(setup.root.files.filter((f) => f.endsWith('.node')), [])
  assert.deepEqual(setup.platform.files, [setup.binaryName, 'README.md', 'package.json'].sort())
})

const HELLO = `
  rt.registerActivity('Greet', async (_ctx, name) => 'Hello, ' + name + '!')
  rt.registerOrchestration('Hello', function* (ctx, name) {
    return yield ctx.scheduleActivity('Greet', name)
  })
  await rt.start()
  const client = new Client(provider)
  await client.startOrchestration('hello-1', 'Hello', 'packed')
  const status = await client.waitForOrchestration('hello-1', 30000)
  await rt.shutdown(1000)
  const binaries = Object.keys(require.cache).filter((f) => f.endsWith('.node'))
  process.stdout.write(JSON.stringify({ status: status.status, output: status.output, entry, binaries }))
`

function checkHello(out, app, entryFile) {
  const result = JSON.parse(out)
  assert.equal(result.status, 'Completed')
  assert.equal(result.output, 'Hello, packed!')
  assert.equal(result.entry, path.join(fs.realpathSync(app), 'node_modules', rootPkg.name, entryFile))
  // The binary came from the installed platform package, not from the checkout.
  assert.deepEqual(result.binaries, [path.join(fs.realpathSync(app), 'node_modules', platformPkgName, setup.binaryName)])
}

test("require('duroxide-node') in the installed app runs a hello orchestration on SQLite", () => {
  const script = path.join(setup.app, 'hello.cjs')
  fs.writeFileSync(
    script,
    `const { SqliteProvider, Runtime, Client } = require('duroxide-node')
    const entry = require.resolve('duroxide-node')
    ;(async () => {
      const provider = await SqliteProvider.open('sqlite:' + require('node:path').join(__dirname, 'cjs.db'))
      const rt = new Runtime(provider, { dispatcherPollIntervalMs: 5 })
      ${HELLO}
    })()`,
  )
  checkHello(run(process.execPath, [script], { cwd: setup.app, env: setup.env }), setup.app, 'index.js')
})

test("import { Runtime } from 'duroxide-node' in the installed app runs a hello orchestration on SQLite", () => {
  const script = path.join(setup.app, 'hello.mjs')
  fs.writeFileSync(
    script,
    `import { SqliteProvider, Runtime, Client } from 'duroxide-node'
    import { createRequire } from 'node:module'
    import { fileURLToPath } from 'node:url'
    const require = createRequire(import.meta.url)
    const entry = fileURLToPath(import.meta.resolve('duroxide-node'))
    const provider = await SqliteProvider.open('sqlite:' + fileURLToPath(new URL('esm.db', import.meta.url)))
    const rt = new Runtime(provider, { dispatcherPollIntervalMs: 5 })
    ${HELLO}`,
  )
  checkHello(run(process.execPath, [script], { cwd: setup.app, env: setup.env }), setup.app, 'index.mjs')
})

test('the installed package puts the duroxide-node command on the app\'s PATH (node_modules/.bin)', () => {
  const bin = path.join(setup.app, 'node_modules', '.bin', process.platform === 'win32' ? 'duroxide-node.cmd' : 'duroxide-node')
  assert.match(run(bin, ['--help'], { cwd: setup.app, env: setup.env }), /^Usage: duroxide-node <command>/)
})

test('without its platform package, loading fails with ERR_NATIVE_BINARY_MISSING naming the host and the package', () => {
  const script = path.join(setup.bare, 'load.cjs')
  fs.writeFileSync(
    script,
    `try { require('duroxide-node'); process.stdout.write('loaded') } catch (e) {
      process.stdout.write(JSON.stringify({ code: e.code, message: e.message, platform: e.platform, arch: e.arch, libc: e.libc, packageName: e.packageName }))
    }`,
  )
  const err = JSON.parse(run(process.execPath, [script], { cwd: setup.bare, env: setup.env }))
  const libc = process.platform === 'linux' ? (target.endsWith('-musl') ? 'musl' : 'glibc') : null
  assert.deepEqual(
    { code: err.code, platform: err.platform, arch: err.arch, libc: err.libc, packageName: err.packageName },
    { code: 'ERR_NATIVE_BINARY_MISSING', platform: process.platform, arch: process.arch, libc, packageName: platformPkgName },
  )
  assert.match(err.message, new RegExp(`${process.platform}/${process.arch}`))
  assert.ok(err.message.includes(`${platformPkgName}@${rootPkg.version}`), err.message)
})

test('TypeScript (module nodenext) gives import ESM declarations and require CommonJS ones, and both compile', () => {
  fs.writeFileSync(
    path.join(setup.app, 'consumer.mts'),
    `import api, { Runtime, SqliteProvider, type RuntimeOptions } from 'duroxide-node'
    export async function esm(): Promise<string> {
      const options: RuntimeOptions = { workerConcurrency: 1 }
      const rt: Runtime = new api.Runtime(await SqliteProvider.inMemory(), options)
      // @ts-expect-error a misspelt option is a type error
      new Runtime(await SqliteProvider.inMemory(), { workerConcurency: 1 })
      return rt.effectiveOptions().logLevel
    }`,
  )
  fs.writeFileSync(
    path.join(setup.app, 'consumer.cts'),
    `import duroxide = require('duroxide-node')
    export async function cjs(): Promise<duroxide.Runtime> {
      return new duroxide.Runtime(await duroxide.SqliteProvider.inMemory(), { workerConcurrency: 1 })
    }`,
  )
  const options = {
    noEmit: true,
    strict: true,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2022.d.ts'],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    // The declarations use AbortSignal, so consumers need @types/node; the app borrows ours.
    types: ['node'],
    typeRoots: [path.join(root, 'node_modules', '@types')],
  }
  const app = fs.realpathSync(setup.app)
  const installed = path.join(app, 'node_modules', rootPkg.name)
  const expected = { 'consumer.mts': ['index.d.mts', ts.ModuleKind.ESNext], 'consumer.cts': ['index.d.ts', ts.ModuleKind.CommonJS] }
  for (const [file, [dts, format]] of Object.entries(expected)) {
    const from = path.join(app, file)
    const { resolvedModule } = ts.resolveModuleName(rootPkg.name, from, options, ts.sys, undefined, undefined, format)
    assert.equal(resolvedModule?.resolvedFileName, path.join(installed, dts), `${file} resolves its types`)
    const program = ts.createProgram([from], options)
    const source = program.getSourceFile(resolvedModule.resolvedFileName)
    // ESM types for ESM JS (index.mjs), CJS types for CJS JS: not "masquerading".
    assert.equal(source.impliedNodeFormat, format, `${dts} is read in the format of the JS it describes`)
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
    assert.deepEqual(diagnostics, [], file)
  }
})

test('package.json lists every npm/ platform package as an optional dependency of the same version', () => {
  const dirs = fs.readdirSync(npmDir).sort()
  const optional = rootPkg.optionalDependencies ?? {}
  assert.deepEqual(Object.keys(optional).sort(), dirs.map((d) => `${rootPkg.name}-${d}`).sort())
  assert.equal(rootPkg.napi.targets.length, dirs.length, 'one npm/ folder per napi target')
  for (const dir of dirs) {
    const p = readJson(path.join(npmDir, dir, 'package.json'))
    assert.equal(p.name, `${rootPkg.name}-${dir}`)
    assert.equal(p.version, rootPkg.version, `${p.name} version`)
    assert.equal(optional[p.name], rootPkg.version, `${p.name} is pinned to the root version`)
    assert.equal(p.main, `${rootPkg.napi.binaryName}.${dir}.node`)
    assert.deepEqual(p.files, [p.main])
    assert.deepEqual(p.os, [dir.split('-')[0]])
    assert.deepEqual(p.cpu, [dir.split('-')[1]])
    if (dir.startsWith('linux-')) assert.deepEqual(p.libc, [dir.endsWith('-musl') ? 'musl' : 'glibc'])
    assert.deepEqual(p.engines, rootPkg.engines, `${p.name} engines`)
  }
  for (const want of ['linux-x64-gnu', 'linux-x64-musl', 'linux-arm64-gnu', 'linux-arm64-musl', 'darwin-x64', 'darwin-arm64', 'win32-x64-msvc']) {
    assert.ok(dirs.includes(want), `npm/${want}`)
  }
})

test('release rehearsal: `npm run artifacts` fills every npm/ package, prepublish accepts them, `npm version` keeps them in step', () => {
  // A copy of what the release scripts touch, with one stand-in binary per
  // target laid out the way CI downloads its build artifacts.
  const rel = path.join(tmp, 'release')
  fs.mkdirSync(rel)
  fs.copyFileSync(path.join(root, 'package.json'), path.join(rel, 'package.json'))
  fs.cpSync(npmDir, path.join(rel, 'npm'), { recursive: true })
  fs.cpSync(path.join(root, 'scripts'), path.join(rel, 'scripts'), { recursive: true })
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(rel, 'node_modules'), 'junction')
  const targets = fs.readdirSync(npmDir)
  for (const t of targets) {
    fs.mkdirSync(path.join(rel, 'artifacts', `bindings-${t}`), { recursive: true })
    fs.writeFileSync(path.join(rel, 'artifacts', `bindings-${t}`, `${rootPkg.napi.binaryName}.${t}.node`), `binary for ${t}`)
  }
  const env = userEnv()
  run(npm, ['run', 'artifacts', '--', '--output-dir', 'artifacts'], { cwd: rel, env })
  for (const t of targets) {
    const file = path.join(rel, 'npm', t, `${rootPkg.napi.binaryName}.${t}.node`)
    assert.equal(fs.readFileSync(file, 'utf8'), `binary for ${t}`, `npm/${t} got its binary`)
  }
  // napi validates each platform package against its target (name, os, cpu,
  // libc, files, binary present) before it would publish anything.
  run(npm, ['run', 'prepublishOnly', '--', '--dry-run'], { cwd: rel, env })

  run(npm, ['version', '9.8.7', '--no-git-tag-version'], { cwd: rel, env })
  const bumped = readJson(path.join(rel, 'package.json'))
  assert.equal(bumped.version, '9.8.7')
  assert.deepEqual(new Set(Object.values(bumped.optionalDependencies)), new Set(['9.8.7']))
  for (const t of targets) assert.equal(readJson(path.join(rel, 'npm', t, 'package.json')).version, '9.8.7', `npm/${t} version`)
})
