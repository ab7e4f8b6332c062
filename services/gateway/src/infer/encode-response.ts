import { elementSize, MeshError, type WireTensor } from '@ge-mesh/protocol';
import { classify } from './classification.js';
import { MSG } from './messages.js';
import { tensorToJson } from './tensor-to-json.js';
import type { EncodedResponse, InferResult, RequestedOutput } from './types.js';

/**
 * Builds Triton's inference response: `{id?, model_name, model_version,
 * parameters?, outputs[{name, datatype, shape, parameters?|data}]}`, then the
 * blobs of the binary outputs in output order.
 *
 * - `requested` lists the outputs to return and their form, in order; when it
 *   is empty every output in `resp` is returned, binary if `binaryByDefault`.
 * - `id` is written only when given; `model_version` is always a string.
 * - A binary output carries `parameters.binary_data_size`; when at least one
 *   non-empty blob follows, the content type is application/octet-stream and
 *   `headerLength` is the JSON's byte length (Inference-Header-Content-Length).
 * - FP16/BF16 outputs asked as JSON fail with Triton's message (400).
 */
export function encodeInferResponse(
  resp: InferResult,
  requested: readonly RequestedOutput[],
  binaryByDefault: boolean,
): EncodedResponse {
  const plan = selectOutputs(resp, requested, binaryByDefault);
  const blobs: Uint8Array[] = [];
  const outputs = plan.map(({ tensor: t, binary }) => {
    const head = `{"name":${JSON.stringify(t.name)},"datatype":"${t.datatype}","shape":[${t.shape.join(',')}],`;
    if (!binary) return `${head}"data":${tensorToJson(t)}}`;
    checkBinarySize(t);
    if (t.data.length > 0) blobs.push(t.data);
    return `${head}"parameters":{"binary_data_size":${t.data.length}}}`;
  });

  let json = resp.id ? `{"id":${JSON.stringify(resp.id)},` : '{';
  json += `"model_name":${JSON.stringify(resp.model)},"model_version":${JSON.stringify(resp.version)}`;
  if (resp.parameters && Object.keys(resp.parameters).length > 0) {
    json += `,"parameters":${JSON.stringify(resp.parameters)}`;
  }
  json += `,"outputs":[${outputs.join(',')}]}`;
  const header = Buffer.from(json, 'utf8');
  if (blobs.length === 0) return { body: header, contentType: 'application/json' };
  return {
    body: Buffer.concat([header, ...blobs]),
    contentType: 'application/octet-stream',
    headerLength: header.length,
  };
}

// Triton sends binary outputs unchecked; a size that does not fit the shape
// here means a fault in the mesh, so it is an error rather than bad data.
function checkBinarySize(t: WireTensor): void {
  const size = elementSize(t.datatype);
  if (size === 0) return;
  let count = 1;
  for (const d of t.shape) count *= d;
  if (t.data.length !== count * size) throw new MeshError('INTERNAL', MSG.outputSize(t.name));
}

/**
 * The outputs to send, in order, each with its form: what `requested` lists
 * (classification applied), or every output of `resp` when it lists none.
 */
export function selectOutputs(
  resp: InferResult,
  requested: readonly RequestedOutput[],
  binaryByDefault: boolean,
): { tensor: WireTensor; binary: boolean }[] {
  if (requested.length === 0) return resp.outputs.map((tensor) => ({ tensor, binary: binaryByDefault }));
  const byName = new Map(resp.outputs.map((t) => [t.name, t]));
  return requested.map((r) => {
    const t = byName.get(r.name);
    if (t === undefined) throw new MeshError('INTERNAL', MSG.outputMissing(r.name, resp.model));
    const tensor = r.classification ? classify(t, r.classification, resp.labels?.get(r.name)) : t;
    return { tensor, binary: r.binary };
  });
}
