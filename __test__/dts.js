'use strict'
// Reads index.d.ts with the TypeScript compiler, so tests can hold the
// declared surface against what the JS really exports and returns: a method
// added to the JS but not the types (or the reverse), or a result field whose
// name or type drifted, fails a test instead of misleading editors.
const path = require('node:path')
const ts = require('typescript')

const root = path.join(__dirname, '..')
const entry = path.join(root, 'index.d.ts')

let cached

function load() {
  if (cached) return cached
  const program = ts.createProgram([entry], {
    noEmit: true,
    strict: true,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2022.d.ts'],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: ['node'],
  })
  const checker = program.getTypeChecker()
  const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(entry))
  const exports = new Map()
  for (const s of checker.getExportsOfModule(moduleSymbol)) {
    exports.set(s.name, s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s)
  }
  const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
  cached = { program, checker, exports, diagnostics }
  return cached
}

/** Compiler errors in index.d.ts and the files it imports. */
function diagnostics() {
  return load().diagnostics
}

/** Every source file the declarations are made of (index.d.ts and what it imports). */
function declarationFiles() {
  return load()
    .program.getSourceFiles()
    .map((f) => path.resolve(f.fileName))
    .filter((f) => f.startsWith(root + path.sep) && !f.includes(`${path.sep}node_modules${path.sep}`))
}

/** Names exported as values (classes, functions, constants) vs as types only. */
function exportKinds() {
  const out = {}
  for (const [name, s] of load().exports) {
    if (s.flags & ts.SymbolFlags.Class) out[name] = 'class'
    else if (s.flags & ts.SymbolFlags.Function) out[name] = 'function'
    else if (s.flags & ts.SymbolFlags.Variable) out[name] = 'const'
    else out[name] = 'type'
  }
  return out
}

function isPrivate(symbol) {
  return (symbol.declarations || []).some((d) => ts.getCombinedModifierFlags(d) & ts.ModifierFlags.Private)
}

function symbolOf(name) {
  const s = load().exports.get(name)
  if (!s) throw new Error(`index.d.ts does not export ${name}`)
  return s
}

/**
 * Public members of an exported class: instance methods, instance properties
 * (fields and accessors) and static methods, each sorted.
 */
function classMembers(name) {
  const { checker } = load()
  const s = symbolOf(name)
  const instance = checker.getDeclaredTypeOfSymbol(s).getProperties().filter((p) => !isPrivate(p))
  const decl = s.valueDeclaration || s.declarations[0]
  const statics = checker
    .getTypeOfSymbolAtLocation(s, decl)
    .getProperties()
    .filter((p) => p.name !== 'prototype' && !isPrivate(p))
  const sorted = (list) => list.map((p) => p.name).sort()
  return {
    methods: sorted(instance.filter((p) => p.flags & ts.SymbolFlags.Method)),
    properties: sorted(instance.filter((p) => !(p.flags & ts.SymbolFlags.Method))),
    statics: sorted(statics.filter((p) => p.flags & ts.SymbolFlags.Method)),
  }
}

/** The declared type of an exported interface, type alias or class instance. */
function typeOf(name) {
  return load().checker.getDeclaredTypeOfSymbol(symbolOf(name))
}

/** Property names of an exported interface (or class instance type). */
function propertiesOf(name) {
  return typeOf(name)
    .getProperties()
    .filter((p) => !isPrivate(p))
    .map((p) => p.name)
    .sort()
}

/** The declared type of `name`'s instance property `prop`. */
function propertyType(name, prop) {
  const { checker } = load()
  const p = typeOf(name).getProperty(prop)
  if (!p) throw new Error(`${name} declares no ${prop}`)
  return checker.getTypeOfSymbol(p)
}

/** True when a type is declared in this package (so its shape is ours to check). */
function isOurs(type) {
  const s = type.aliasSymbol || type.getSymbol()
  return !!s && (s.declarations || []).some((d) => path.resolve(d.getSourceFile().fileName).startsWith(root + path.sep) &&
    !d.getSourceFile().fileName.includes('node_modules'))
}

/**
 * Checks a runtime value against a declared type; returns the mismatches as
 * readable strings (empty when the value conforms). Object types of this
 * package are checked field by field, with extra fields reported; foreign
 * object types (AbortSignal, ...) only need to be objects.
 */
function conformance(value, type, where = 'value') {
  const { checker } = load()
  const F = ts.TypeFlags
  const problems = []
  const show = (v) => (typeof v === 'string' ? JSON.stringify(v) : Array.isArray(v) ? 'an array' : v === null ? 'null' : typeof v)
  const typeText = () => checker.typeToString(type)
  if (type.flags & (F.Any | F.Unknown | F.TypeParameter)) return problems
  if (type.isUnion()) {
    const tries = type.types.map((t) => conformance(value, t, where))
    if (tries.some((p) => p.length === 0)) return problems
    // For an object, the closest member's field-level problems say more than "not A | B".
    const fieldLevel = tries.filter((p) => p.every((m) => m.startsWith(`${where}.`) || m.startsWith(`${where}[`)))
    if (fieldLevel.length) return fieldLevel.reduce((a, b) => (b.length < a.length ? b : a))
    return [`${where}: ${show(value)} is not ${typeText()}`]
  }
  if (value === null) return type.flags & F.Null ? problems : [`${where}: null is not ${typeText()}`]
  if (value === undefined) return type.flags & (F.Undefined | F.Void) ? problems : [`${where}: undefined is not ${typeText()}`]
  if (type.flags & F.StringLiteral) return value === type.value ? problems : [`${where}: ${show(value)} is not ${typeText()}`]
  if (type.flags & F.NumberLiteral) return value === type.value ? problems : [`${where}: ${show(value)} is not ${typeText()}`]
  if (type.flags & F.BooleanLiteral) {
    return value === (type.intrinsicName === 'true') ? problems : [`${where}: ${show(value)} is not ${typeText()}`]
  }
  if (type.flags & F.String) return typeof value === 'string' ? problems : [`${where}: ${show(value)} is not a string`]
  if (type.flags & F.Number) return typeof value === 'number' ? problems : [`${where}: ${show(value)} is not a number`]
  if (type.flags & F.Boolean) return typeof value === 'boolean' ? problems : [`${where}: ${show(value)} is not a boolean`]
  if (type.flags & F.Never) return [`${where}: no value is allowed here`]
  if (checker.isArrayType(type) || checker.isTupleType(type)) {
    if (!Array.isArray(value)) return [`${where}: ${show(value)} is not an array`]
    const args = checker.getTypeArguments(type)
    value.forEach((v, i) => problems.push(...conformance(v, checker.isTupleType(type) ? args[i] : args[0], `${where}[${i}]`)))
    return problems
  }
  if (type.flags & F.Object && type.getCallSignatures().length > 0) {
    // A method or function member (e.g. `ctx.log.info`): only its kind is checkable.
    return typeof value === 'function' ? problems : [`${where}: ${show(value)} is not a function`]
  }
  if (type.flags & F.Object) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return [`${where}: ${show(value)} is not an object`]
    if (!isOurs(type) && !type.getStringIndexType()) return problems
    const indexType = type.getStringIndexType()
    const props = type.getProperties()
    for (const p of props) {
      const optional = (p.flags & ts.SymbolFlags.Optional) !== 0
      if (!(p.name in value)) {
        if (!optional) problems.push(`${where}.${p.name} is missing`)
        continue
      }
      problems.push(...conformance(value[p.name], checker.getTypeOfSymbol(p), `${where}.${p.name}`))
    }
    for (const key of Object.keys(value)) {
      if (props.some((p) => p.name === key)) continue
      if (indexType) problems.push(...conformance(value[key], indexType, `${where}.${key}`))
      else problems.push(`${where}.${key} is not declared in ${typeText()}`)
    }
    return problems
  }
  return [`${where}: cannot check against ${typeText()}`]
}

/**
 * What calling `className.prototype[method]` produces, as declared: the
 * awaited value for a Promise, the yielded value (`T`) for a `Task<T>`, else
 * the return type. Uses the first overload that is not generic (a generic
 * one's result depends on its type arguments, e.g. `race<Ts>`), else the first.
 */
function methodResult(className, method) {
  const { checker } = load()
  const p = typeOf(className).getProperty(method)
  if (!p) throw new Error(`${className} declares no ${method}`)
  const signatures = checker.getTypeOfSymbol(p).getCallSignatures()
  const signature = signatures.find((sig) => !sig.typeParameters || sig.typeParameters.length === 0) || signatures[0]
  const returned = checker.getReturnTypeOfSignature(signature)
  const taskKey = returned.getProperties().find((q) => q.name.startsWith('__@taskResult'))
  if (taskKey) return checker.getTypeOfSymbol(taskKey)
  return checker.getAwaitedType(returned) || returned
}

/** `conformance` against an exported type by name. */
function conformsTo(value, name, where = name) {
  return conformance(value, typeOf(name), where)
}

module.exports = {
  diagnostics,
  declarationFiles,
  exportKinds,
  classMembers,
  typeOf,
  propertiesOf,
  propertyType,
  methodResult,
  conformance,
  conformsTo,
}
