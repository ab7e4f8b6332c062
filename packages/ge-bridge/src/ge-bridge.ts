import type { DataType } from '@ge-mesh/protocol';
import { dataTypeOfGe, geDtypeOf } from './data-types.js';
import { GeBridgeError, statusName } from './errors.js';
import { nativeBridge } from './native-library.js';

/** GE options (key → value); see reference/ge-api.md §2 for the keys. */
export type GeOptions = Readonly<Record<string, string>>;

export interface GeTensorInfo {
  readonly dataType: DataType;
  readonly dims: readonly number[];
  readonly byteSize: number;
}

export interface GeInputSpec {
  /** ONNX graph input name. */
  readonly name: string;
  readonly dataType: DataType;
}

export interface GeModelConfig {
  readonly modelPath: string;
  readonly deviceId: number;
  /** Streams (lanes) on the device; each gets its own graph per tier. */
  readonly streams: number;
  /** Every ONNX input of the model (any order; matched by name). */
  readonly inputs: readonly GeInputSpec[];
  /** Per tier, the full dims of each input in `inputs` order, e.g. [[[1, 3, 224, 224]], [[4, 3, 224, 224]]]. */
  readonly tiers: readonly (readonly (readonly number[])[])[];
  readonly sessionOptions?: GeOptions;
  readonly graphOptions?: GeOptions;
  /**
   * Loads in this process with the same key, device, model file, session and graph options share one GE
   * session, so the weights sit in device memory once per device; each load keeps its own graphs,
   * streams and buffers. Include the model's version and a digest of its bytes. Unset: a session of
   * its own.
   */
  readonly shareKey?: string;
}

/** Per-tier input dims for batch tiers: [batch, ...row dims] for every input. */
export function batchTiers(rowDims: readonly (readonly number[])[], batches: readonly number[]): number[][][] {
  return batches.map((b) => rowDims.map((dims) => [b, ...dims]));
}

function check(status: number): void {
  if (status === 0) return;
  const bridge = nativeBridge();
  // Read on the same thread, right after the call: the slot is thread-local.
  const message = bridge.lastErrorMessage() as string;
  const code = Number(bridge.lastErrorNativeCode());
  throw new GeBridgeError(statusName(status), message, code);
}

function optionArray(options: GeOptions | undefined): { key: string; value: string }[] | null {
  const entries = Object.entries(options ?? {});
  return entries.length === 0 ? null : entries.map(([key, value]) => ({ key, value }));
}

function lines(text: string): string[] {
  return text === '' ? [] : text.split('\n');
}

export interface GePrecision {
  /** ge.exec.precision_mode or ge.exec.precision_mode_v2. */
  readonly key: string;
  readonly value: string;
  /**
   * Where it was set: graph, session or global options (graph wins), or
   * default: none was, and the bridge passed GE's own inference default
   * (precision_mode_v2=fp16, which the GE backend runs at) explicitly.
   */
  readonly source: 'graph' | 'session' | 'global' | 'default';
}

/** Reads gemesh_model_precision's "key=value (source)". */
export function parsePrecision(text: string): GePrecision {
  const m = /^(\S+)=(\S*) \((graph|session|global|default)\)$/.exec(text);
  if (!m) throw new Error(`the bridge reported the precision as "${text}"`);
  return { key: m[1] as string, value: m[2] as string, source: m[3] as GePrecision['source'] };
}

export interface BridgeInfo {
  readonly apiVersion: number;
  /** 'cann' on an Ascend toolkit, 'cann-simulator' otherwise. */
  readonly backend: string;
  readonly libraryPath: string;
}

export function bridgeInfo(): BridgeInfo {
  const b = nativeBridge();
  return { apiVersion: b.apiVersion() as number, backend: b.backend() as string, libraryPath: b.path };
}

/**
 * aclInit + GEInitialize (process-wide, reference-counted: pair every call
 * with finalizeGe). Returns GE's warnings about the options, one per entry.
 */
export function initGe(globalOptions?: GeOptions): { warnings: string[] } {
  const b = nativeBridge();
  const opts = optionArray(globalOptions);
  check(b.init(opts, opts?.length ?? 0) as number);
  return { warnings: lines(b.initWarnings() as string) };
}

export function finalizeGe(): void {
  check(nativeBridge().finalize() as number);
}

export function deviceCount(): number {
  const out = [0];
  check(nativeBridge().deviceCount(out) as number);
  return out[0] as number;
}

export interface DeviceMemory {
  readonly freeBytes: number;
  readonly totalBytes: number;
}

export function deviceMemory(deviceId: number): DeviceMemory {
  const free = [0];
  const total = [0];
  check(nativeBridge().deviceMemory(deviceId, free, total) as number);
  return { freeBytes: Number(free[0]), totalBytes: Number(total[0]) };
}

interface NativeTensorInfo {
  dtype: number;
  rank: number;
  dims: ArrayLike<bigint | number>;
  byte_size: number | bigint;
}

function toInfo(raw: NativeTensorInfo): GeTensorInfo {
  const dims: number[] = [];
  for (let i = 0; i < raw.rank; i++) dims.push(Number(raw.dims[i]));
  return { dataType: dataTypeOfGe(raw.dtype), dims, byteSize: Number(raw.byte_size) };
}

/**
 * A model loaded on one device: graphs for every (tier, stream) and their
 * device buffers. The handle is a plain number, so a lane in another
 * worker_thread can use the same model through GeModel.attach(handle).
 */
export class GeModel {
  readonly tierCount: number;
  readonly streamCount: number;
  readonly inputCount: number;
  readonly outputCount: number;
  private readonly inputInfos: GeTensorInfo[][] = [];
  private readonly outputInfos: GeTensorInfo[][] = [];

  private constructor(readonly handle: number) {
    const b = nativeBridge();
    const tiers = [0];
    const streams = [0];
    const inputs = [0];
    const outputs = [0];
    check(b.modelCounts(handle, tiers, streams, inputs, outputs) as number);
    this.tierCount = tiers[0] as number;
    this.streamCount = streams[0] as number;
    this.inputCount = inputs[0] as number;
    this.outputCount = outputs[0] as number;
    for (let t = 0; t < this.tierCount; t++) {
      const ins: GeTensorInfo[] = [];
      for (let i = 0; i < this.inputCount; i++) {
        const raw = {} as NativeTensorInfo;
        check(b.modelInputInfo(handle, t, i, raw) as number);
        ins.push(toInfo(raw));
      }
      const outs: GeTensorInfo[] = [];
      for (let o = 0; o < this.outputCount; o++) {
        const raw = {} as NativeTensorInfo;
        check(b.modelOutputInfo(handle, t, o, raw) as number);
        outs.push(toInfo(raw));
      }
      this.inputInfos.push(ins);
      this.outputInfos.push(outs);
    }
  }

  /** Parses, compiles and loads the model (slow: tiers × streams graphs). */
  static load(config: GeModelConfig): GeModel {
    const b = nativeBridge();
    if (config.inputs.length === 0 || config.tiers.length === 0) throw new TypeError('a model needs inputs and tiers');
    const ranks = config.inputs.map((_, i) => config.tiers[0]?.[i]?.length ?? 0);
    const dims: bigint[] = [];
    config.tiers.forEach((tier, t) => {
      if (tier.length !== config.inputs.length) {
        throw new TypeError(
          `tier ${t} gives dims for ${tier.length} inputs, the model config lists ${config.inputs.length}`,
        );
      }
      tier.forEach((d, i) => {
        if (d.length !== ranks[i])
          throw new TypeError(`tier ${t} input ${config.inputs[i]?.name}: rank ${d.length}, tier 0 has ${ranks[i]}`);
        for (const v of d) dims.push(BigInt(v));
      });
    });
    const session = optionArray(config.sessionOptions);
    const graph = optionArray(config.graphOptions);
    const out = [0];
    check(
      b.modelLoad(
        {
          model_path: config.modelPath,
          device_id: config.deviceId,
          stream_count: config.streams,
          tier_count: config.tiers.length,
          input_count: config.inputs.length,
          input_names: config.inputs.map((i) => i.name),
          input_dtypes: Int32Array.from(config.inputs.map((i) => geDtypeOf(i.dataType))),
          input_ranks: Uint32Array.from(ranks),
          input_dims: BigInt64Array.from(dims),
          session_options: session,
          session_option_count: session?.length ?? 0,
          graph_options: graph,
          graph_option_count: graph?.length ?? 0,
          share_key: config.shareKey ?? null,
        },
        out,
      ) as number,
    );
    return new GeModel(out[0] as number);
  }

  /** A model loaded elsewhere in the process (e.g. by the worker's main thread). */
  static attach(handle: number): GeModel {
    return new GeModel(handle);
  }

  /** Loads sharing this model's GE session, this one included (1: a session of its own). */
  get sessionLoads(): number {
    const out = [0];
    check(nativeBridge().modelSessionLoads(this.handle, out) as number);
    return out[0] as number;
  }

  /** GE's warnings from loading (e.g. option keys it does not know). */
  get warnings(): string[] {
    return lines(nativeBridge().modelWarnings(this.handle) as string);
  }

  /** The precision GE compiled the model's graphs with, and where that setting came from. */
  get precision(): GePrecision {
    return parsePrecision(nativeBridge().modelPrecision(this.handle) as string);
  }

  /** Inputs of a tier in config order, with the exact byte size run() expects. */
  inputInfo(tier: number): readonly GeTensorInfo[] {
    return this.tierInfo(this.inputInfos, tier);
  }

  /** Outputs as GE compiled them, in the ONNX graph's output order (GE reports no names). */
  outputInfo(tier: number): readonly GeTensorInfo[] {
    return this.tierInfo(this.outputInfos, tier);
  }

  /**
   * Runs one batch of `tier` (an index) on `stream` and returns when `outputs`
   * hold the results. inputs[i] must have exactly inputInfo(tier)[i].byteSize
   * bytes; outputs[i] at least outputInfo(tier)[i].byteSize. Blocks the
   * calling thread; one caller per stream at a time.
   */
  run(stream: number, tier: number, inputs: readonly ArrayBufferView[], outputs: readonly ArrayBufferView[]): void {
    const inSizes = inputs.map((b) => b.byteLength);
    const outSizes = outputs.map((b) => b.byteLength);
    check(
      nativeBridge().modelRun(
        this.handle,
        stream,
        tier,
        inputs,
        inSizes,
        inputs.length,
        outputs,
        outSizes,
        outputs.length,
      ) as number,
    );
  }

  /** Output buffers sized for a tier, for callers that keep one set per (stream, tier). */
  allocateOutputs(tier: number): Uint8Array[] {
    return this.tierInfo(this.outputInfos, tier).map((o) => new Uint8Array(o.byteSize));
  }

  /** Waits for runs in flight, then releases graphs, session, streams and buffers. */
  destroy(): void {
    check(nativeBridge().modelDestroy(this.handle) as number);
  }

  private tierInfo(infos: GeTensorInfo[][], tier: number): readonly GeTensorInfo[] {
    const t = infos[tier];
    if (!t) throw new RangeError(`tier ${tier} is out of range (the model has ${this.tierCount})`);
    return t;
  }
}
