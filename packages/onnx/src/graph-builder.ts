import type { DataType } from '@ge-mesh/protocol';
import { floatTensor, int64Tensor, tensorValueInfo } from './tensors.js';
import {
  type AttributeProto,
  AttributeType,
  type GraphProto,
  type ModelProto,
  type NodeProto,
  type TensorProto,
  type ValueInfoProto,
} from './types.js';

/** An attribute value with its ONNX type made explicit (1 and 1.0 are the same JS number). */
export type AttrValue =
  | { kind: 'int'; value: number }
  | { kind: 'float'; value: number }
  | { kind: 'ints'; value: readonly number[] }
  | { kind: 'floats'; value: readonly number[] }
  | { kind: 'string'; value: string }
  | { kind: 'tensor'; value: TensorProto };

export const attr = {
  int: (value: number): AttrValue => ({ kind: 'int', value }),
  float: (value: number): AttrValue => ({ kind: 'float', value }),
  ints: (...value: number[]): AttrValue => ({ kind: 'ints', value }),
  floats: (...value: number[]): AttrValue => ({ kind: 'floats', value }),
  string: (value: string): AttrValue => ({ kind: 'string', value }),
  tensor: (value: TensorProto): AttrValue => ({ kind: 'tensor', value }),
};

export function attribute(name: string, v: AttrValue): AttributeProto {
  switch (v.kind) {
    case 'int':
      return { name, type: AttributeType.INT, i: v.value };
    case 'float':
      return { name, type: AttributeType.FLOAT, f: v.value };
    case 'ints':
      return { name, type: AttributeType.INTS, ints: [...v.value] };
    case 'floats':
      return { name, type: AttributeType.FLOATS, floats: [...v.value] };
    case 'string':
      return { name, type: AttributeType.STRING, s: new TextEncoder().encode(v.value) };
    case 'tensor':
      return { name, type: AttributeType.TENSOR, t: v.value };
  }
}

/**
 * Builds a graph node by node. Outputs that are not named get names from the
 * op type and a counter, so the same build steps always give the same graph.
 */
export class GraphBuilder {
  private readonly nodes: NodeProto[] = [];
  private readonly initializers: TensorProto[] = [];
  private readonly inputs: ValueInfoProto[] = [];
  private readonly outputs: ValueInfoProto[] = [];
  private readonly names = new Set<string>();
  // An initializer may share its name with a graph input: a constant the caller can override.
  private readonly inputNames = new Set<string>();
  private readonly initializerNames = new Set<string>();
  private counter = 0;

  constructor(readonly name: string) {}

  input(name: string, dataType: DataType, dims: readonly (number | string | null)[]): string {
    if (this.inputNames.has(name) || !this.initializerNames.has(name)) this.claim(name);
    this.inputNames.add(name);
    this.inputs.push(tensorValueInfo(name, dataType, dims));
    return name;
  }

  /** Declares `value` (an existing value name) as a graph output. */
  output(value: string, dataType: DataType, dims: readonly (number | string | null)[]): void {
    this.outputs.push(tensorValueInfo(value, dataType, dims));
  }

  initializer(t: TensorProto): string {
    const name = t.name ?? this.fresh('const');
    if (this.initializerNames.has(name) || !this.inputNames.has(name)) this.claim(name);
    this.initializerNames.add(name);
    this.initializers.push({ ...t, name });
    return name;
  }

  floats(name: string, dims: readonly number[], values: ArrayLike<number>): string {
    return this.initializer(floatTensor(name, dims, values));
  }

  int64s(name: string, dims: readonly number[], values: ArrayLike<number>): string {
    return this.initializer(int64Tensor(name, dims, values));
  }

  /** Adds a node and returns its output names. */
  node(
    opType: string,
    inputs: readonly string[],
    attrs: Readonly<Record<string, AttrValue>> = {},
    outputs: readonly string[] | number = 1,
  ): string[] {
    const base = this.fresh(opType);
    const outs =
      typeof outputs === 'number'
        ? Array.from({ length: outputs }, (_, i) => (outputs === 1 ? base : `${base}_${i}`))
        : [...outputs];
    for (const o of outs) this.claim(o);
    const node: NodeProto = { name: base, opType, input: [...inputs], output: outs };
    const attributes = Object.entries(attrs).map(([k, v]) => attribute(k, v));
    if (attributes.length > 0) node.attribute = attributes;
    this.nodes.push(node);
    return outs;
  }

  /** Adds a single-output node and returns its output name (or `output` when given). */
  op(
    opType: string,
    inputs: readonly string[],
    attrs: Readonly<Record<string, AttrValue>> = {},
    output?: string,
  ): string {
    return this.node(opType, inputs, attrs, output === undefined ? 1 : [output])[0] as string;
  }

  build(): GraphProto {
    return {
      name: this.name,
      node: [...this.nodes],
      initializer: [...this.initializers],
      input: [...this.inputs],
      output: [...this.outputs],
    };
  }

  private fresh(prefix: string): string {
    let name: string;
    do name = `${prefix}_${this.counter++}`;
    while (this.names.has(name));
    return name;
  }

  private claim(name: string): void {
    if (this.names.has(name)) throw new Error(`value name ${name} is already used in graph ${this.name}`);
    this.names.add(name);
  }
}

export interface ModelOptions {
  /** Default-domain opset; 17 unless given. */
  opset?: number;
  /** IR version; 8 (the IR of opset 17) unless given. */
  irVersion?: number;
  producerName?: string;
  producerVersion?: string;
  docString?: string;
}

export function makeModel(graph: GraphProto, opts: ModelOptions = {}): ModelProto {
  const model: ModelProto = {
    irVersion: opts.irVersion ?? 8,
    opsetImport: [{ domain: '', version: opts.opset ?? 17 }],
    graph,
  };
  if (opts.producerName !== undefined) model.producerName = opts.producerName;
  if (opts.producerVersion !== undefined) model.producerVersion = opts.producerVersion;
  if (opts.docString !== undefined) model.docString = opts.docString;
  return model;
}
