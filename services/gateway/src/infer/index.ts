/**
 * The KServe v2 inference request/response layer of the gateway, free of I/O:
 *
 *   body ──parseInferBody (REST) / parseInferObject (AMQP)──► ParsedInfer ──validateInfer(config)──► ValidatedInfer ──► broker
 *   worker outputs ──encodeInferResponse──► { body, contentType, headerLength? } ──► HTTP
 *
 * Errors are MeshError with a stable code from @ge-mesh/protocol's ERRORS
 * table and Triton's own message text (see messages.ts for the few cases
 * where GE Mesh is stricter than Triton).
 */

export { formatCFixed6 } from './classification.js';
export { encodeInferResponse, selectOutputs } from './encode-response.js';
export { type ParseOptions, parseInferBody, parseInferObject } from './parse-body.js';
export { formatJsonDouble } from './tensor-to-json.js';
export type {
  ClassificationRequest,
  EncodedResponse,
  InferResult,
  ParsedInfer,
  ParsedOutput,
  RequestedOutput,
  ValidatedInfer,
} from './types.js';
export { validateInfer } from './validate.js';
