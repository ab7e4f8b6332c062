import { MeshError } from '@ge-mesh/protocol';

/**
 * What went wrong, coarsely, so callers and tests can branch without
 * matching message text.
 * - syntax: the text is not protobuf text format (unterminated string, stray brace, ...)
 * - unknown_field: a field name ModelConfig (or a nested message) does not have
 * - type: a value of the wrong kind, range or enum, or a list on a non-repeated field
 * - duplicate: a non-repeated field set twice
 * - oneof: a second member of a oneof
 * - invalid: well-formed but rejected by the model config rules
 * - io: a file or folder the model needs is missing or unreadable
 */
export type ConfigErrorKind = 'syntax' | 'unknown_field' | 'type' | 'duplicate' | 'oneof' | 'invalid' | 'io';

export interface SourcePosition {
  /** 1-based. */
  readonly line: number;
  /** 1-based, in UTF-16 code units (a tab counts as one). */
  readonly column: number;
}

export interface ConfigErrorInit {
  readonly kind: ConfigErrorKind;
  readonly file: string;
  /** Absent when the problem belongs to the whole file (e.g. a field that is missing). */
  readonly position?: SourcePosition | undefined;
  /** Dotted path of the field at fault, e.g. `dynamic_batching.preferred_batch_size[1]`. */
  readonly field?: string | undefined;
  /** What is wrong and how to fix it, without the location prefix. */
  readonly detail: string;
}

/**
 * A model configuration that cannot be loaded. The message reads
 * `<file>:<line>:<column>: <detail>` (or `<file>: <detail>` without a
 * position), the form editors and compilers use, so it can be clicked.
 * It is a MeshError (INVALID_ARGUMENT), so it can cross service boundaries.
 */
/** `<file>:<line>:<column>` (or `<file>` without a position): how errors and warnings name a place. */
export function located(file: string, position: SourcePosition | undefined): string {
  return position ? `${file}:${position.line}:${position.column}` : file;
}

export class ConfigError extends MeshError {
  readonly kind: ConfigErrorKind;
  readonly file: string;
  readonly line: number | undefined;
  readonly column: number | undefined;
  readonly field: string | undefined;
  readonly detail: string;

  constructor(init: ConfigErrorInit) {
    super('INVALID_ARGUMENT', `${located(init.file, init.position)}: ${init.detail}`);
    this.name = 'ConfigError';
    this.kind = init.kind;
    this.file = init.file;
    this.line = init.position?.line;
    this.column = init.position?.column;
    this.field = init.field;
    this.detail = init.detail;
  }
}
