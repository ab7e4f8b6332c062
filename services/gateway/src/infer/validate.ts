import {
  describeGears,
  type GearSet,
  gearClassOf,
  type ModelConfig,
  priorityLevel,
  rowDimsOf,
  type TensorConfig,
} from '@ge-mesh/model-repository';
import {
  type BytesLayoutError,
  checkBytesLayout,
  type DataType,
  elementSize,
  MeshError,
  packBytesElements,
  TRITON_MESSAGES,
  type WireTensor,
} from '@ge-mesh/protocol';
import { dimsToString, MSG, requestPrefix } from './messages.js';
import type { ParsedInfer, RequestedOutput, ValidatedInfer } from './types.js';

// Datatypes Triton can rank for `classification`.
const CLASSIFIABLE: ReadonlySet<DataType> = new Set<DataType>([
  'UINT8',
  'UINT16',
  'UINT32',
  'UINT64',
  'INT8',
  'INT16',
  'INT32',
  'INT64',
  'FP32',
  'FP64',
]);

/**
 * Checks a parsed request against its model's config, in the order Triton's
 * core does (InferenceRequest::Normalize), and resolves what to send on:
 * inputs, the outputs to return and how, the batch size, the priority level
 * and the queue timeout. Throws MeshError with Triton's message.
 *
 * Beyond Triton: a required input is missed by name (Triton only counts), a
 * 0-row batch is refused by name (Triton as a byte-size mismatch), BYTES
 * elements may not run past the data, and an FP16/BF16 output asked as JSON
 * fails here instead of after inference.
 */
export function validateInfer(parsed: ParsedInfer, config: ModelConfig): ValidatedInfer {
  const model = config.name;
  const prefix = requestPrefix(parsed.id);
  const batching = config.maxBatchSize > 0;
  const inputs = parsed.raw !== undefined ? [rawInput(parsed.raw, config, prefix)] : [...parsed.inputs];

  const outputConfigs = new Map(config.output.map((o) => [o.name, o]));
  for (const o of parsed.outputs) {
    if (!outputConfigs.has(o.name)) throw new MeshError('UNKNOWN_OUTPUT', MSG.unknownOutput(o.name, model));
  }

  const inputConfigs = new Map(config.input.map((i) => [i.name, i]));
  const given = new Set(inputs.map((t) => t.name));
  const required = config.input.filter((i) => !i.optional);
  const missing = required.filter((i) => !given.has(i.name)).map((i) => i.name);
  const countMessage = () =>
    prefix +
    MSG.inputCount(
      required.length,
      config.input.length,
      inputs.map((t) => t.name),
      missing,
      model,
    );
  if (inputs.length > config.input.length) throw new MeshError('UNKNOWN_INPUT', countMessage());
  if (inputs.length < required.length) throw new MeshError('MISSING_INPUT', countMessage());

  // Every input is known, and with batching all share one leading dim.
  const configs: TensorConfig[] = [];
  let batch = 1;
  let first = true;
  for (const t of inputs) {
    const cfg = inputConfigs.get(t.name);
    if (cfg === undefined) throw new MeshError('UNKNOWN_INPUT', MSG.unknownInput(t.name, model));
    configs.push(cfg);
    if (!batching) continue;
    const lead = t.shape[0];
    if (lead === undefined) throw new MeshError('SHAPE_MISMATCH', prefix + MSG.noBatchDim(t.name, model));
    if (first) {
      batch = lead;
      first = false;
    } else if (lead !== batch) {
      throw new MeshError('SHAPE_MISMATCH', prefix + MSG.batchMismatch(t.name, model));
    }
  }
  if (missing.length > 0) throw new MeshError('MISSING_INPUT', countMessage());
  if (batching && !first) {
    if (batch < 0) {
      const t = inputs[0] as WireTensor;
      throw new MeshError('SHAPE_MISMATCH', prefix + MSG.wildcardInRequest(t.name, model, t.shape));
    }
    if (batch === 0) throw new MeshError('SHAPE_MISMATCH', prefix + MSG.batchZero(model));
    if (batch > config.maxBatchSize) {
      throw new MeshError('BATCH_TOO_LARGE', prefix + TRITON_MESSAGES.batchTooLarge(model, config.maxBatchSize));
    }
  }

  for (const [i, t] of inputs.entries()) checkInput(t, configs[i] as TensorConfig, model, batching, prefix);
  if (config.gears) checkGear(config.gears, inputs, batch, model, prefix);

  const binaryDataOutput = parsed.binaryDataOutput ?? false;
  const allOutputs = parsed.outputs.length === 0;
  // Triton: an output the client lists is JSON unless it says binary_data;
  // binary_data_output only sets the form of outputs it did not list.
  const outputs: RequestedOutput[] = allOutputs
    ? config.output.map((o) => ({ name: o.name, binary: binaryDataOutput }))
    : parsed.outputs.map((o) => ({
        name: o.name,
        binary: o.binary ?? false,
        ...(o.classification > 0 ? { classification: { count: o.classification, batched: batching } } : {}),
      }));
  for (const o of outputs) checkOutputForm(o, outputConfigs.get(o.name) as TensorConfig);

  const priority = priorityLevel(config.dynamicBatching, parsed.priority);

  return {
    inputs,
    outputs,
    allOutputs,
    binaryDataOutput,
    batch,
    ...(parsed.id !== undefined ? { clientId: parsed.id } : {}),
    priority,
    timeoutUs: parsed.timeoutUs,
    parameters: { ...parsed.parameters },
  };
}

function checkInput(t: WireTensor, cfg: TensorConfig, model: string, batching: boolean, prefix: string): void {
  if (t.datatype !== cfg.dataType) {
    throw new MeshError('DATATYPE_MISMATCH', prefix + MSG.datatypeMismatch(t.name, t.datatype, model, cfg.dataType));
  }
  const dims = batching ? t.shape.slice(1) : t.shape;
  let match = dims.length === cfg.dims.length;
  for (let i = 0; match && i < dims.length; i++) {
    const d = dims[i] as number;
    const c = cfg.dims[i] as number;
    if (d < 0) throw new MeshError('SHAPE_MISMATCH', prefix + MSG.wildcardInRequest(t.name, model, t.shape));
    if (c !== -1 && c !== d) match = false;
  }
  if (!match) {
    const expected = batching ? [-1, ...cfg.dims] : cfg.dims;
    throw new MeshError('SHAPE_MISMATCH', prefix + MSG.unexpectedShape(t.name, model, expected, t.shape, batching));
  }

  let count = 1;
  for (const d of t.shape) count *= d;
  if (t.datatype === 'BYTES') {
    const err = checkBytesLayout(t.data, count);
    if (err !== null) throw new MeshError('DATA_SIZE_MISMATCH', prefix + bytesMessage(err, t.name, model, count));
    return;
  }
  const expected = count * elementSize(t.datatype);
  if (t.data.length !== expected) {
    throw new MeshError('DATA_SIZE_MISMATCH', prefix + MSG.byteSizeMismatch(t.name, model, expected, t.data.length));
  }
}

/** A request runs on a gear that holds its rows and shapes (padded where the config allows); else 400 naming the gears. */
function checkGear(gears: GearSet, inputs: readonly WireTensor[], rows: number, model: string, prefix: string): void {
  if (gearClassOf(gears, { rows, dims: rowDimsOf(gears, inputs) })) return;
  const shapes = inputs
    .filter((t) => gears.inputs.includes(t.name))
    .map((t) => `${t.name} ${dimsToString(t.shape)}`)
    .join(', ');
  throw new MeshError(
    'GEAR_MISMATCH',
    prefix + MSG.noGear(model, shapes, describeGears(gears), Object.keys(gears.padValues)),
  );
}

function bytesMessage(err: BytesLayoutError, input: string, model: string, expected: number): string {
  switch (err.kind) {
    case 'incomplete-length':
      return MSG.bytesIncompleteLength(input, model, err.available);
    case 'too-many':
      return MSG.bytesTooMany(err.checked, input, model, expected);
    case 'truncated':
      return MSG.bytesTruncated(input, model, err.element, err.length, err.available);
    case 'count':
      return MSG.bytesCount(expected, input, model, err.got);
  }
}

// Triton fails these when it writes the response; here they fail before the
// request is queued, with the same text.
function checkOutputForm(o: RequestedOutput, cfg: TensorConfig): void {
  const dt = cfg.dataType;
  if (o.classification !== undefined) {
    if (!CLASSIFIABLE.has(dt)) throw new MeshError('INVALID_ARGUMENT', MSG.classificationType(dt));
    return;
  }
  if (!o.binary && (dt === 'FP16' || dt === 'BF16')) throw new MeshError('INVALID_ARGUMENT', MSG.jsonHalfOutput(dt));
}

/**
 * The single input of a raw-binary request, with the shape Triton deduces
 * from the config: batch 1, and at most one variable dim sized from the body.
 */
function rawInput(raw: Uint8Array, config: ModelConfig, prefix: string): WireTensor {
  const cfg = config.input[0];
  if (config.input.length !== 1 || cfg === undefined) {
    throw new MeshError('INVALID_ARGUMENT', prefix + MSG.rawInputCount(1, config.input.length, config.name));
  }
  const shape: number[] = config.maxBatchSize > 0 ? [1] : [];
  let dynamicAxis = -1;
  let count = 1;
  for (const d of cfg.dims) {
    if (d === -1) {
      if (dynamicAxis !== -1) throw new MeshError('INVALID_ARGUMENT', prefix + MSG.rawShape(cfg.name));
      dynamicAxis = shape.length;
    } else {
      count *= d;
    }
    shape.push(d);
  }
  if (cfg.dataType === 'BYTES') {
    if (dynamicAxis !== -1 || count !== 1)
      throw new MeshError('INVALID_ARGUMENT', prefix + MSG.rawBytesShape(cfg.name));
    // The body is the one element; it gets its length prefix here.
    return { name: cfg.name, datatype: cfg.dataType, shape, data: packBytesElements([raw]) };
  }
  if (dynamicAxis !== -1) {
    shape[dynamicAxis] = count === 0 ? 0 : Math.floor(raw.length / count / elementSize(cfg.dataType));
  }
  return { name: cfg.name, datatype: cfg.dataType, shape, data: raw };
}
