import { PROTO_FILES, PROTO_LOADER_OPTIONS } from '@ge-mesh/protocol/proto';
import { type Client, type ClientDuplexStream, credentials, loadPackageDefinition, Metadata } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import type { Send } from './driver.js';
import { buildInputSets, type MetaTargetOptions, type ModelMeta, modelMetaOf } from './kserve-http.js';

/**
 * The gateway's KServe v2 gRPC API as a load target (perf_analyzer's
 * default protocol): ModelInfer per request, or with `streaming` one
 * ModelStreamInfer stream that carries every request, answers matched by id.
 * Tensors travel as raw_input_contents. The model's metadata comes from the
 * gateway's HTTP API, as for the other targets.
 */
export interface GrpcTargetOptions extends MetaTargetOptions {
  /** host:port of the gateway's gRPC server. */
  grpcUrl: string;
  streaming?: boolean;
}

type Msg = Record<string, unknown>;
type Unary = (req: Msg, md: Metadata, cb: (err: Error | null, res: Msg) => void) => void;

export async function grpcTarget(
  o: GrpcTargetOptions,
): Promise<{ send: Send; meta: ModelMeta; close(): Promise<void> }> {
  const meta = await modelMetaOf(o);
  const requests = buildInputSets(meta, o).map((set) => ({
    model_name: o.model,
    model_version: o.version ?? '',
    inputs: set.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape })),
    raw_input_contents: set.map((t) => Buffer.from(t.bytes.buffer, t.bytes.byteOffset, t.bytes.byteLength)),
  }));
  const defs = loadSync([...PROTO_FILES], PROTO_LOADER_OPTIONS);
  const Service = (loadPackageDefinition(defs).inference as Record<string, unknown>).GRPCInferenceService as new (
    address: string,
    creds: ReturnType<typeof credentials.createInsecure>,
    options: Msg,
  ) => Client & Record<string, unknown>;
  const client = new Service(o.grpcUrl, credentials.createInsecure(), {
    'grpc.max_receive_message_length': 256 << 20,
    'grpc.max_send_message_length': 256 << 20,
  });
  const md = new Metadata();
  if (o.apiKey) md.set('authorization', `Bearer ${o.apiKey}`);
  const pick = (seq: number) => requests[seq % requests.length] as Msg;

  if (!o.streaming) {
    const infer = (client.ModelInfer as Unary).bind(client);
    const send: Send = (seq) =>
      new Promise((resolve, reject) => infer(pick(seq), md, (err) => (err ? reject(err) : resolve(true))));
    return { send, meta, close: async () => client.close() };
  }

  const stream = (client.ModelStreamInfer as (md: Metadata) => ClientDuplexStream<Msg, Msg>).call(client, md);
  const waiting = new Map<string, { resolve: (ok: boolean) => void; reject: (e: Error) => void }>();
  stream.on('data', (m: Msg) => {
    const id = String((m.infer_response as Msg | null)?.id ?? '');
    const w = waiting.get(id);
    if (!w) return;
    waiting.delete(id);
    if (m.error_message) w.reject(new Error(String(m.error_message)));
    else w.resolve(true);
  });
  stream.on('error', (err: Error) => {
    for (const w of waiting.values()) w.reject(err);
    waiting.clear();
  });
  let next = 0;
  const send: Send = (seq) =>
    new Promise((resolve, reject) => {
      const id = `${seq}.${next++}`;
      waiting.set(id, { resolve, reject });
      stream.write({ ...pick(seq), id });
    });
  return {
    send,
    meta,
    close: async () => {
      stream.end();
      client.close();
    },
  };
}
