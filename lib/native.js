'use strict'
// The napi-generated loader (../native.js) is internal: only lib/ uses it.
// When no binary loads it throws a generic "Cannot find native binding";
// users then need to know which platform was detected and which package
// should have supplied the binary, so that error is replaced by one that
// says both (the loader's own errors stay in `cause`).
const pkg = require('../package.json')

/** 'glibc' or 'musl' on Linux, null elsewhere (same test as the napi loader). */
function detectLibc() {
  if (process.platform !== 'linux') return null
  try {
    process.report.excludeNetwork = true
    const header = process.report.getReport().header
    return header.glibcVersionRuntime ? 'glibc' : 'musl'
  } catch {
    return 'glibc'
  }
}

/** The platform package napi-rs names for this host: duroxide-node-<platform>-<arch>[-<abi>]. */
function platformPackageName(platform, arch, libc) {
  const abi = platform === 'linux' ? (libc === 'musl' ? '-musl' : '-gnu') : platform === 'win32' ? '-msvc' : ''
  return `${pkg.name}-${platform}-${arch}${abi}`
}

function isInstalled(name) {
  try {
    require.resolve(`${name}/package.json`)
    return true
  } catch {
    return false
  }
}

function missingBinaryError(cause) {
  const { platform, arch } = process
  const libc = detectLibc()
  const packageName = platformPackageName(platform, arch, libc)
  const supported = Object.keys(pkg.optionalDependencies ?? {})
  const host = `${platform}/${arch}${libc ? ` (${libc})` : ''}`
  let why
  if (!supported.includes(packageName)) {
    why =
      `${pkg.name} ships no prebuilt binary for ${host}; the platform packages are ${supported.join(', ')}. ` +
      'Build one from a clone of the repository (`npm run build`, needs Rust) and set NAPI_RS_NATIVE_LIBRARY_PATH to the .node file.'
  } else if (isInstalled(packageName)) {
    why = `${packageName} is installed but its binary did not load (see cause).`
  } else {
    why =
      `the optional dependency ${packageName}@${pkg.version} is not installed (npm skips optional dependencies ` +
      'under --omit=optional, when they cannot be downloaded, and with a lockfile made on another platform). ' +
      `Reinstall with optional dependencies, or add ${packageName}@${pkg.version} to your dependencies.`
  }
  const err = new Error(`${pkg.name}: no native binary for ${host}: ${why}`)
  err.code = 'ERR_NATIVE_BINARY_MISSING'
  err.platform = platform
  err.arch = arch
  err.libc = libc
  err.packageName = packageName
  err.cause = cause
  return err
}

let native
try {
  native = require('../native.js')
} catch (err) {
  // Only the loader's own "nothing fits" error is about a missing binary; a
  // missing native.js itself (an unbuilt checkout) or anything else passes.
  if (!(err instanceof Error) || !/Cannot find native binding|Failed to load native binding/.test(err.message)) throw err
  throw missingBinaryError(err)
}

module.exports = native
