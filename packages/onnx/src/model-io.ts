import type { DataType } from '@ge-mesh/protocol';
import { dataTypeFromElemType } from './data-types.js';
import { ModelIOViewType, TO_PLAIN } from './onnx-proto.js';
import type { ValueInfoProto } from './types.js';

/** One graph input or output as the model file declares it. */
export interface OnnxTensorInfo {
  name: string;
  /** Wire datatype; undefined for element types with no wire form or non-tensor values. */
  dataType: DataType | undefined;
  /** Full shape, batch dim included; -1 where the dim is symbolic or unknown. */
  dims: number[];
  /** The symbolic name of each dim (`dim_param`), null where the dim is fixed or unnamed. */
  dimParams: (string | null)[];
  /** False when the file gives no shape at all (unknown rank); dims is then []. */
  shapeKnown: boolean;
}

export interface ModelIO {
  inputs: OnnxTensorInfo[];
  outputs: OnnxTensorInfo[];
}

export interface GraphIOView {
  initializer?: { name?: string }[];
  sparseInitializer?: { values?: { name?: string } }[];
  input?: ValueInfoProto[];
  output?: ValueInfoProto[];
}

/**
 * Lists a model's graph inputs and outputs. Inputs that are also
 * initializers (constants a caller may override) are left out, as ONNX
 * runtimes do. Weight payloads are skipped, not decoded.
 */
export function readModelIO(bytes: Uint8Array): ModelIO {
  const graph = readGraphIOView(bytes);
  const constants = initializerNames(graph);
  return {
    inputs: (graph.input ?? []).filter((v) => !constants.has(v.name ?? '')).map(tensorInfo),
    outputs: (graph.output ?? []).map(tensorInfo),
  };
}

/** Decodes only a model's graph inputs, outputs and initializer names. */
export function readGraphIOView(bytes: Uint8Array): GraphIOView {
  const view = ModelIOViewType.toObject(ModelIOViewType.decode(bytes), TO_PLAIN) as { graph?: GraphIOView };
  if (!view.graph) throw new Error('ONNX model has no graph');
  return view.graph;
}

export function initializerNames(graph: GraphIOView): Set<string> {
  const names = new Set<string>();
  for (const t of graph.initializer ?? []) if (t.name) names.add(t.name);
  for (const s of graph.sparseInitializer ?? []) if (s.values?.name) names.add(s.values.name);
  return names;
}

export function tensorInfo(v: ValueInfoProto): OnnxTensorInfo {
  const tensor = v.type?.tensorType;
  const dims = tensor?.shape?.dim;
  return {
    name: v.name ?? '',
    dataType: dataTypeFromElemType(tensor?.elemType),
    dims: (dims ?? []).map((d) => (d.dimValue !== undefined && d.dimValue >= 0 ? d.dimValue : -1)),
    dimParams: (dims ?? []).map((d) => (d.dimValue === undefined && d.dimParam ? d.dimParam : null)),
    shapeKnown: tensor?.shape !== undefined,
  };
}
