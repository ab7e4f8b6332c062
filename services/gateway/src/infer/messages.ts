import type { DataType } from '@ge-mesh/protocol';

/**
 * The error texts a Triton client sees for inference requests, as Triton's
 * HTTP front end (server src/http_server.cc) and core (src/infer_request.cc,
 * src/model.cc) word them. Texts marked "GE Mesh" cover cases Triton lets
 * through (truncated integers, lossy INT64, ...).
 */

/** Triton stops reading nested `data` arrays at this depth. */
export const MAX_JSON_NESTING_DEPTH = 100;

/**
 * The prefix core puts on request-level messages. Triton writes
 * "[request id: <id_unknown>] " when the request has no id; GE Mesh leaves the
 * prefix out then, and writes it when the client sent an id.
 */
export function requestPrefix(id: string | undefined): string {
  return id ? `[request id: ${id}] ` : '';
}

/** `[1,3,224,224]`, as Triton prints dims. */
export function dimsToString(dims: readonly number[]): string {
  return `[${dims.join(',')}]`;
}

function forModel(model: string | undefined): string {
  return model === undefined ? '' : ` for model '${model}'`;
}

/** TritonJson's wording for a value of the wrong JSON type. */
export const JSON_TYPE = {
  string: 'attempt to access JSON non-string as string',
  bool: 'attempt to access JSON non-boolean as boolean',
  int: 'attempt to access JSON non-signed-integer as signed-integer',
  uint: 'attempt to access JSON non-unsigned-integer as unsigned-integer',
  number: 'attempt to access JSON non-number as double',
  array: 'attempt to access JSON non-array as array',
  object: 'attempt to access JSON non-object as object',
  members: 'attempt to get members for non-object',
  missing: (member: string) => `attempt to access non-existing object member '${member}'`,
} as const;

export const MSG = {
  // HTTP front end: body and JSON.
  badJson: (detail: string) => `failed to parse the request JSON buffer: ${detail}`,
  numberTooBig: (offset?: number) =>
    `Number too big to be stored in double.${offset !== undefined && offset >= 0 ? ` at ${offset}` : ''}`,
  unableToParse: (field: string, detail: string) => `Unable to parse '${field}': ${detail}`,
  unableToSet: (field: string, detail: string) => `Unable to set '${field}': ${detail}`,
  badParams: (detail: string) => `failed to get request params.: ${detail}`,
  headerLengthRange: (contentLength: number, got: number) =>
    `inference header size should be in range (0, ${contentLength}), got: ${got}`,
  reservedParameter: () =>
    "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.",
  // gRPC front end: typed contents (infer_handler.cc).
  noInputData: (name: string, model: string) =>
    `unable to find data for input tensor '${name}' for model '${model}' in request.`,
  contentsAlreadySupplied: (name: string, model: string) =>
    `unexpected explicit tensor data for input tensor '${name}' for model '${model}', binary data was already supplied.`,
  contentsDatatype: (name: string, model: string, sent: string, dt: string) =>
    `unexpected explicit tensor data for input tensor '${name}' for model '${model}' of type '${sent}', expected datatype '${dt}'`,
  reservedGrpcParameter: (allowed: readonly string[]) =>
    `parameter keys starting with 'triton_' are reserved for Triton usage. Only the following keys starting with 'triton_' are allowed: ${allowed.join(' ')}`,
  parameterType: (key: string) =>
    `parameter '${key}' has invalid type. It should be either 'int', 'bool', or 'string'.`,
  inputContent: (set: readonly string[]) =>
    "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', " +
    `'shared_memory_region' in 'parameters'. But${set.length === 0 ? ' no field is set' : ` set ${set.join(' ')}`}`,
  invalidDatatype: (input: string) => `invalid datatype for input ${input}`,
  jsonHalf: (dt: 'FP16' | 'BF16', input: string) =>
    `receiving ${dt} data via JSON is not supported. Please use the binary data format for input ${input}`,
  jsonHalfOutput: (dt: 'FP16' | 'BF16') =>
    `sending ${dt} data via JSON is not supported. Please use the binary data format for output`,
  // Triton's header name in this text is its own, not the HTTP header's.
  binaryNeedsHeader: () =>
    "must specify valid 'Infer-Header-Content-Length' in request header and 'binary_data_size' when passing inputs in binary data format",
  blobShort: (input: string, missing: number, model: string | undefined) =>
    `unexpected size for input '${input}', expecting ${missing} additional bytes${forModel(model)}`,
  blobExtra: (model: string | undefined) => `unexpected additional input data${forModel(model)}`,
  jsonTooManyElements: () => "Unable to parse 'data': Shape does not match true shape of 'data' field",
  jsonTooFewElements: () => "Failed to parse 'data' field: shape does not match true shape",
  nestingDepth: () => `JSON nesting depth exceeds maximum allowed limit (${MAX_JSON_NESTING_DEPTH})`,
  jsonBytesArray: (detail: string) => `Unable to parse JSON bytes array: ${detail}`,
  shapeTooLarge: (input: string, shape: readonly number[]) =>
    `invalid shape for input '${input}': shape ${dimsToString(shape)} causes total element count to exceed maximum size of 9223372036854775807`,
  sharedMemoryOutputClassification: () => "Output can't set both 'shared_memory_region' and 'classification'",
  sharedMemoryOutputBinary: () => "Output can't set both 'shared_memory_region' and 'binary_data'",
  // GE Mesh: Triton truncates such values silently.
  intOutOfRange: (v: number, dt: DataType, input: string) =>
    `Unable to parse 'data': value ${v} is out of range for ${dt} input '${input}'`,
  // GE Mesh: JSON numbers are doubles here, so INT64 beyond 2^53 would be altered.
  intInexact: (v: number, dt: DataType, input: string) =>
    `Unable to parse 'data': value ${v} of ${dt} input '${input}' is beyond ±(2^53-1) and cannot be read exactly from JSON; send it as binary data`,
  // GE Mesh: the gateway's own limit (--max-tensor-elements).
  tooManyElements: (input: string, shape: readonly number[], count: number, limit: number) =>
    `input '${input}' has shape ${dimsToString(shape)} with ${count} elements, more than the limit of ${limit} elements per tensor`,
  // GE Mesh: an AMQP request body that is msgpack but not a map.
  notAMap: () => 'the request must be a msgpack map with model, inputs and optional id, parameters, outputs',
  sharedMemory: (what: 'input' | 'output', name: string) =>
    `shared memory is not supported; send ${what} '${name}' as JSON data or binary data`,

  // Core: checks against the model config. Callers add requestPrefix where Triton has it.
  duplicateInput: (input: string) => `input '${input}' already exists in request`,
  duplicateOutput: (output: string) => `output '${output}' already exists in request`,
  unknownInput: (input: string, model: string) => `unexpected inference input '${input}' for model '${model}'`,
  unknownOutput: (output: string, model: string) => `unexpected inference output '${output}' for model '${model}'`,
  inputCount: (required: number, total: number, got: readonly string[], missing: readonly string[], model: string) => {
    const expected =
      required === total ? `expected ${total} inputs` : `expected number of inputs between ${required} and ${total}`;
    const list = (names: readonly string[]) => `[${names.map((n) => `'${n}'`).join(',')}]`;
    return (
      `${expected} but got ${got.length} inputs for model '${model}'. Got input(s) ${list(got)}, ` +
      `but missing required input(s) ${list(missing)}. Please provide all required input(s).`
    );
  },
  noBatchDim: (input: string, model: string) =>
    `input '${input}' has no shape but model requires batch dimension for '${model}'`,
  batchMismatch: (input: string, model: string) =>
    `input '${input}' batch size does not match other inputs for '${model}'`,
  // GE Mesh: Triton's core drops a 0 batch dim and then refuses the empty data as a byte-size
  // mismatch against one row's size; this names the cause instead.
  batchZero: (model: string) => `inference request batch-size must be >= 1 for '${model}'`,
  datatypeMismatch: (input: string, got: DataType, model: string, expected: DataType) =>
    `inference input '${input}' data-type is '${got}', but model '${model}' expects '${expected}'`,
  wildcardInRequest: (input: string, model: string, shape: readonly number[]) =>
    `All input dimensions should be specified for input '${input}' for model '${model}', got ${dimsToString(shape)}`,
  unexpectedShape: (
    input: string,
    model: string,
    expected: readonly number[],
    got: readonly number[],
    batched: boolean,
  ) =>
    `unexpected shape for input '${input}' for model '${model}'. Expected ${dimsToString(expected)}, got ${dimsToString(got)}. ` +
    (batched
      ? 'NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. ' +
        'If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. ' +
        'See the model configuration docs for more info on max_batch_size.'
      : ''),
  // GE Mesh: the GE backend fails such a request at execution ("execute model failed").
  noGear: (model: string, shapes: string, gears: string, padded: readonly string[]) =>
    `input shapes ${shapes} fit no gear of model '${model}'; its gears are: ${gears}. ` +
    (padded.length > 0
      ? `Inputs ${padded.join(', ')} are padded up to a gear; every other dim must match a gear exactly`
      : 'No input may be padded (set gear.pad_value.<input> in the model config to allow it), so the shapes must match a gear exactly'),
  byteSizeMismatch: (input: string, model: string, expected: number, got: number) =>
    `input byte size mismatch for input '${input}' for model '${model}'. Expected ${expected}, got ${got}`,
  bytesIncompleteLength: (input: string, model: string, available: number) =>
    `incomplete string length indicator for inference input '${input}' for model '${model}', expecting 4 bytes but only ${available} bytes available. Please make sure the string length indicator is in one buffer.`,
  bytesTooMany: (checked: number, input: string, model: string, expected: number) =>
    `unexpected number of string elements ${checked} for inference input '${input}' for model '${model}', expecting ${expected}`,
  bytesCount: (expected: number, input: string, model: string, got: number) =>
    `expected ${expected} string elements for inference input '${input}' for model '${model}', got ${got}`,
  // GE Mesh: Triton accepts a last element whose length runs past the data.
  bytesTruncated: (input: string, model: string, element: number, length: number, available: number) =>
    `string element ${element} of inference input '${input}' for model '${model}' declares ${length} bytes but only ${available} bytes remain`,
  rawInputCount: (found: number, configured: number, model: string) =>
    `Raw request must only have 1 input (found ${found}) to be deduced but got ${configured} inputs in '${model}' model configuration`,
  rawShape: (input: string) =>
    `The shape of the raw input '${input}' can not be deduced because there are more than one variable-sized dimension`,
  rawBytesShape: (input: string) => `For BYTE datatype raw input '${input}', the model must have input shape [1]`,
  classificationType: (dt: DataType) => `class result not available for output due to unsupported type '${dt}'`,

  // Response encoding: the worker returned something that does not fit.
  outputSize: (output: string) => `output tensor shape does not match size of output for '${output}'`,
  outputSizeJson: (output: string) =>
    `Failed to write 'data' field: output tensor shape does not match size of output for '${output}'`,
  outputMissing: (output: string, model: string) => `model '${model}' returned no output '${output}'`,
} as const;
