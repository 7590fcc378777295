// The closed sets of the public types are the native module's string enums
// (`#[napi(string_enum)]` in src/, generated into native.d.ts). The
// hand-written unions are what users see; each must equal its enum's values,
// so a variant added or renamed on one side fails `npm run typecheck`.
import type {
  ErrorCategory as NativeErrorCategory,
  ExecutionStatusName as NativeExecutionStatusName,
  HealthStatus as NativeHealthStatus,
  OrchestrationStatusName as NativeOrchestrationStatusName,
  RuntimeEventType as NativeRuntimeEventType,
  DeterminismGuard as NativeDeterminismGuard,
  FastPath as NativeFastPath,
} from '../../native'
import type { DeterminismGuard, ErrorCategory, ExecutionStatusName, FastPath, OrchestrationStatusName, RuntimeEventType, RuntimeHealth } from 'duroxide-node'

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false

export const sameSets: [
  Equal<OrchestrationStatusName, `${NativeOrchestrationStatusName}`>,
  Equal<ExecutionStatusName, `${NativeExecutionStatusName}`>,
  Equal<ErrorCategory, `${NativeErrorCategory}`>,
  Equal<RuntimeHealth['status'], `${NativeHealthStatus}`>,
  Equal<RuntimeEventType, `${NativeRuntimeEventType}`>,
  Equal<DeterminismGuard, `${NativeDeterminismGuard}`>,
  Equal<FastPath, `${NativeFastPath}`>,
] = [true, true, true, true, true, true, true]
