/** gemesh_status values of native/include/gemesh_bridge.h, by name. */
export const GE_STATUS = [
  'OK',
  'INVALID_ARGUMENT',
  'STATE',
  'INIT',
  'PARSE',
  'GRAPH',
  'LOAD',
  'OUT_OF_MEMORY',
  'EXECUTE',
  'INTERNAL',
] as const;

export type GeStatus = (typeof GE_STATUS)[number];

/**
 * A failed bridge call: the status, the readable message the bridge captured
 * inside the failing call (its own text plus GE's and AscendCL's), and the
 * GE/ACL code of the CANN call that failed (0 when the bridge itself refused).
 */
export class GeBridgeError extends Error {
  readonly status: GeStatus;
  readonly nativeCode: number;
  constructor(status: GeStatus, message: string, nativeCode: number) {
    super(message);
    this.name = 'GeBridgeError';
    this.status = status;
    this.nativeCode = nativeCode;
  }
}

export function statusName(code: number): GeStatus {
  return GE_STATUS[code] ?? 'INTERNAL';
}
