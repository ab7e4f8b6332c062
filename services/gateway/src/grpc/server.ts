import { MeshError } from '@ge-mesh/protocol';
import type { Logger } from '@ge-mesh/telemetry';
import type { InferenceMetrics } from '@ge-mesh/telemetry/metrics';
import {
  Metadata,
  Server,
  ServerCredentials,
  type ServerDuplexStream,
  type ServerUnaryCall,
  type ServerWritableStream,
  type ServiceDefinition,
  type ServiceError,
  type sendUnaryData,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { SERVER_NAME, SERVER_VERSION, serverExtensions } from '../http/app.js';
import { selectOutputs } from '../infer/index.js';
import { answerError } from '../pipeline/error-answer.js';
import type { InferPipeline } from '../pipeline/infer-pipeline.js';
import type { LoggingControl } from '../pipeline/logging-control.js';
import type { MeshQueries } from '../pipeline/queries.js';
import type { ControlParameter, RepositoryControl } from '../pipeline/repository-control.js';
import { checkRegionStatus, refuseRegistration, type SharedMemoryKind } from '../pipeline/shared-memory.js';
import type { TraceControl } from '../pipeline/trace-control.js';
import { decodeInferRequest, encodeInferResponse, type ModelInferRequestMsg } from './infer-codec.js';
import { loadServices } from './proto.js';
import { logSettings, traceSetting } from './settings-rpcs.js';

export interface GrpcTls {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** When given, clients must present a certificate this CA signed. */
  readonly clientCa?: Buffer;
}

export interface GrpcFrontendDeps {
  pipeline: InferPipeline;
  queries: MeshQueries;
  /** Absent: load/unload answer UNIMPLEMENTED (e.g. a gateway without a registry). */
  control?: RepositoryControl;
  /** Triton's logging and trace extensions; absent: LogSettings and TraceSetting answer UNAVAILABLE. */
  logging?: LoggingControl;
  trace?: TraceControl;
  maxTensorElements: number;
  maxMessageBytes: number;
  keepaliveTimeMs: number;
  keepaliveTimeoutMs: number;
  tls?: GrpcTls;
  log?: Logger;
  metrics?: InferenceMetrics;
}

type Unary<Req, Res> = (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void;
type Msg = Record<string, unknown>;

const INFERENCE_SERVICE = 'inference.GRPCInferenceService';

/** Triton marks every stream answer with whether it is the request's last; a mesh model answers once. */
const FINAL_RESPONSE = { triton_final_response: { bool_param: true } };

/** A request whose bytes are not a message of its type (see tolerant()). */
class MalformedRequest {
  constructor(readonly reason: string) {}
}

/**
 * grpc-js answers a request it cannot deserialize with INTERNAL, as if the
 * server were at fault. These deserializers hand the failure to the handler
 * instead, which answers INVALID_ARGUMENT: the bytes the client sent are wrong.
 */
function tolerant(def: ServiceDefinition): ServiceDefinition {
  const out: Record<string, ServiceDefinition[string]> = {};
  for (const [name, method] of Object.entries(def)) {
    out[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return method.requestDeserialize(bytes);
        } catch (err) {
          return new MalformedRequest((err as Error).message);
        }
      },
    };
  }
  return out as ServiceDefinition;
}

function malformed(req: unknown): void {
  if (req instanceof MalformedRequest) {
    throw new MeshError('INVALID_ARGUMENT', `the request is not a valid protobuf message: ${req.reason}`);
  }
}
const HEALTH_POLL_MS = 1000;

/**
 * The KServe v2 / Triton gRPC API (inference.GRPCInferenceService) plus
 * grpc.health.v1.Health. Every RPC goes through the same pipeline, queries
 * and repository control as REST; this only turns protobuf messages into
 * calls and MeshErrors into gRPC statuses (the ERRORS table's mapping).
 */
export class GrpcFrontend {
  private readonly server: Server;
  private readonly streams = new Set<{ drain: () => void }>();
  private readonly watchers = new Set<ServerWritableStream<Msg, Msg>>();
  private draining = false;
  private healthTimer?: NodeJS.Timeout;

  constructor(private readonly deps: GrpcFrontendDeps) {
    this.server = new Server({
      'grpc.max_receive_message_length': deps.maxMessageBytes,
      'grpc.max_send_message_length': deps.maxMessageBytes,
      'grpc.keepalive_time_ms': deps.keepaliveTimeMs,
      'grpc.keepalive_timeout_ms': deps.keepaliveTimeoutMs,
    });
    const services = loadServices();
    this.server.addService(tolerant(services.inference.service), this.inferenceService());
    this.server.addService(tolerant(services.health.service), this.healthService());
  }

  /** Binds and serves; resolves with the port (useful when asked for port 0). */
  async listen(host: string, port: number): Promise<number> {
    const tls = this.deps.tls;
    const creds = tls
      ? ServerCredentials.createSsl(
          tls.clientCa ?? null,
          [{ private_key: tls.key, cert_chain: tls.cert }],
          tls.clientCa !== undefined,
        )
      : ServerCredentials.createInsecure();
    const bound = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync(`${host.includes(':') ? `[${host}]` : host}:${port}`, creds, (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    return bound;
  }

  /**
   * Stops taking calls, lets unary calls and each stream's requests in
   * flight finish (streams are then ended by the server), and cuts whatever
   * is still open after `drainMs`.
   */
  async close(drainMs: number): Promise<void> {
    this.draining = true;
    if (this.healthTimer) clearInterval(this.healthTimer);
    for (const w of this.watchers) w.end();
    for (const s of this.streams) s.drain();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, drainMs);
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private fail(err: unknown): ServiceError {
    const a = answerError(err, 'grpc', this.deps);
    return Object.assign(new Error(a.body.error), { code: a.grpcStatus, details: a.body.error }) as ServiceError;
  }

  /** A unary handler: the result, or the error as its gRPC status. */
  unary<Req, Res>(fn: (req: Req, auth: string | undefined, call: ServerUnaryCall<Req, Res>) => Promise<Res> | Res) {
    const handler: Unary<Req, Res> = (call, callback) => {
      Promise.resolve()
        .then(() => {
          malformed(call.request);
          return fn(call.request, authorization(call.metadata), call);
        })
        .then(
          (res) => callback(null, res),
          (err) => callback(this.fail(err)),
        );
    };
    return handler;
  }

  private async infer(
    req: ModelInferRequestMsg,
    auth: string | undefined,
    deadlineMs: number | undefined,
    signal: AbortSignal,
    metadata?: Metadata,
    onTraced?: (traceparent: string) => void,
  ) {
    malformed(req);
    const { pipeline, maxTensorElements } = this.deps;
    const version = req.model_version === '' ? undefined : req.model_version;
    const {
      result,
      request,
      version: v,
    } = await pipeline.infer({
      ingress: 'grpc',
      // A caller's traceparent/tracestate travel as metadata, as OpenTelemetry's gRPC instrumentation sends them.
      ...(metadata ? { traceHeaders: metadata.getMap() } : {}),
      ...(onTraced ? { onTraced } : {}),
      model: req.model_name,
      ...(version !== undefined ? { version } : {}),
      versionFrom: 'field',
      ...(auth !== undefined ? { authorization: auth } : {}),
      // The `timeout` parameter is the queue policy's, as over REST (see the batcher).
      decode: (model) => decodeInferRequest(req, model.name, maxTensorElements),
      ...(deadlineMs !== undefined ? { deadlineMs } : {}),
      signal,
    });
    const outputs = selectOutputs(result, request.outputs, true).map((o) => o.tensor);
    return encodeInferResponse(result.model, v, result.id, outputs);
  }

  private inferenceService(): UntypedServiceImplementation {
    const { queries } = this.deps;
    const ref = (r: { name: string; version: string }) => ({
      name: r.name,
      ...(r.version !== '' ? { version: r.version } : {}),
      versionFrom: 'field' as const,
    });
    const control = () => {
      if (!this.deps.control) throw new MeshError('UNSUPPORTED', 'the model repository extension is not available');
      return this.deps.control;
    };
    const repositoryCall = (r: Msg, auth: string | undefined) => ({
      ...(auth !== undefined ? { authorization: auth } : {}),
      model: String(r.model_name ?? ''),
      repository: String(r.repository_name ?? ''),
      // ModelRepositoryParameter's oneof: file contents come as bytes_param, the config as string_param.
      parameters: () =>
        Object.fromEntries(
          Object.entries((r.parameters as Record<string, Msg> | undefined) ?? {}).map(([k, v]) => [
            k,
            (v.string_param ?? v.bytes_param ?? v.bool_param ?? v.int64_param ?? null) as ControlParameter,
          ]),
        ),
    });
    return {
      ServerLive: this.unary(() => ({ live: true })),
      ServerReady: this.unary(() => ({ ready: !this.draining && queries.serverReady() })),
      ModelReady: this.unary((r: { name: string; version: string }, auth) => {
        try {
          queries.ready(auth, ref(r));
          return { ready: !this.draining };
        } catch (err) {
          // Triton answers "not ready" for unknown or unavailable models; auth and a version that is not
          // a number (Triton's INVALID_ARGUMENT) are errors.
          if (err instanceof MeshError && ['UNAUTHENTICATED', 'FORBIDDEN', 'INVALID_ARGUMENT'].includes(err.code))
            throw err;
          return { ready: false };
        }
      }),
      ServerMetadata: this.unary((_r: Msg, auth) => {
        queries.authorize(auth);
        return {
          name: SERVER_NAME,
          version: SERVER_VERSION,
          extensions: serverExtensions(
            this.deps.control !== undefined,
            this.deps.logging !== undefined && this.deps.trace !== undefined,
          ),
        };
      }),
      ModelMetadata: this.unary((r: { name: string; version: string }, auth) => queries.metadata(auth, ref(r))),
      ModelConfig: this.unary((r: { name: string; version: string }, auth) => ({
        config: queries.config(auth, ref(r)),
      })),
      ModelStatistics: this.unary((r: { name: string; version: string }, auth) =>
        queries.statistics(auth, r.name === '' ? undefined : r.name, r.version === '' ? undefined : r.version, 'field'),
      ),
      RepositoryIndex: this.unary((r: { ready: boolean }, auth) => ({
        models: queries.index(auth, r.ready).map((e) => ({
          name: e.name,
          version: e.version ?? '',
          state: e.state,
          reason: e.reason ?? '',
        })),
      })),
      RepositoryModelLoad: this.unary(async (r: Msg, auth) => {
        await control().load(repositoryCall(r, auth));
        return {};
      }),
      RepositoryModelUnload: this.unary(async (r: Msg, auth) => {
        await control().unload(repositoryCall(r, auth));
        return {};
      }),
      ModelInfer: this.unary((r: ModelInferRequestMsg, auth, call) => {
        const abort = new AbortController();
        call.on('cancelled', () => abort.abort());
        if (this.draining) throw new MeshError('SERVER_STOPPING', 'Server is stopping');
        // The response's initial metadata names the request's trace, as REST's traceresponse header does.
        const traced = (traceparent: string) => {
          const md = new Metadata();
          md.set('traceresponse', traceparent);
          call.sendMetadata(md);
        };
        return this.infer(r, auth, deadlineOf(call.getDeadline()), abort.signal, call.metadata, traced);
      }),
      ModelStreamInfer: (call: ServerDuplexStream<ModelInferRequestMsg, Msg>) => this.stream(call),
      ...sharedMemoryHandlers(this.unary.bind(this), queries),
      TraceSetting: this.unary(async (r: Msg, auth) => {
        const control = this.deps.trace;
        if (!control) {
          queries.authorize(auth);
          throw new MeshError('UNAVAILABLE', 'the server does not support tracing');
        }
        return { settings: await traceSetting(control, auth, r) };
      }),
      LogSettings: this.unary(async (r: Msg, auth) => {
        const control = this.deps.logging;
        if (!control) {
          queries.authorize(auth);
          throw new MeshError('UNAVAILABLE', 'the server does not support logging');
        }
        return { settings: await logSettings(control, auth, r) };
      }),
    };
  }

  /**
   * ModelStreamInfer: requests run concurrently and are answered in the
   * order they complete; a failed request is answered on the stream with
   * `error_message` (and its id), never by ending the stream. The stream
   * ends when the client half-closes and every answer went out.
   */
  private stream(call: ServerDuplexStream<ModelInferRequestMsg, Msg>): void {
    const auth = authorization(call.metadata);
    const abort = new AbortController();
    let inFlight = 0;
    let ended = false;
    let closed = false;
    const finish = () => {
      if (closed || !ended || inFlight > 0) return;
      closed = true;
      this.streams.delete(entry);
      call.end();
    };
    const entry = {
      drain: () => {
        ended = true;
        finish();
      },
    };
    this.streams.add(entry);
    call.on('cancelled', () => {
      abort.abort();
      closed = true;
      this.streams.delete(entry);
    });
    call.on('error', () => abort.abort());
    call.on('end', () => entry.drain());
    call.on('data', (req: ModelInferRequestMsg) => {
      if (ended) return;
      inFlight++;
      this.infer(req, auth, deadlineOf(call.getDeadline()), abort.signal, call.metadata)
        .then(
          (res) => ({ error_message: '', infer_response: { ...res, parameters: FINAL_RESPONSE } }),
          (err) => {
            const a = answerError(err, 'grpc', this.deps);
            const infer_response = {
              model_name: req.model_name,
              model_version: req.model_version,
              ...(req.id !== '' ? { id: req.id } : {}),
              parameters: FINAL_RESPONSE,
            };
            return { error_message: a.body.error, infer_response };
          },
        )
        .then((msg) => {
          inFlight--;
          if (!closed) call.write(msg);
          finish();
        });
    });
  }

  private healthService(): UntypedServiceImplementation {
    const statusOf = (service: string): 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN' => {
      if (service !== '' && service !== INFERENCE_SERVICE && service !== 'grpc.health.v1.Health') {
        return 'SERVICE_UNKNOWN';
      }
      return !this.draining && this.deps.queries.serverReady() ? 'SERVING' : 'NOT_SERVING';
    };
    return {
      Check: this.unary((r: { service: string }) => {
        const s = statusOf(r.service);
        // The health protocol answers an unknown service with NOT_FOUND, not a status.
        if (s === 'SERVICE_UNKNOWN') throw new MeshError('NOT_FOUND', `unknown service '${r.service}'`);
        return { status: s };
      }),
      Watch: (call: ServerWritableStream<Msg, Msg>) => {
        if (call.request instanceof MalformedRequest) {
          call.emit('error', this.fail(new MeshError('INVALID_ARGUMENT', call.request.reason)));
          return;
        }
        const service = String(call.request.service ?? '');
        let last = '';
        const send = () => {
          const s = statusOf(service);
          if (s !== last) {
            last = s;
            call.write({ status: s });
          }
        };
        send();
        this.watchers.add(call);
        const timer = setInterval(send, HEALTH_POLL_MS);
        call.on('cancelled', () => {
          clearInterval(timer);
          this.watchers.delete(call);
        });
        call.on('finish', () => clearInterval(timer));
      },
    };
  }
}

/** Triton's shared-memory RPCs: no region is ever registered (see shared-memory.ts). */
function sharedMemoryHandlers(unary: GrpcFrontend['unary'], queries: MeshQueries) {
  const register = (kind: SharedMemoryKind) => (r: Msg, auth: string | undefined) => {
    queries.authorize(auth);
    return refuseRegistration(kind, String(r.name ?? ''));
  };
  const status = (kind: SharedMemoryKind) => (r: Msg, auth: string | undefined) => {
    queries.authorize(auth);
    checkRegionStatus(kind, String(r.name ?? ''));
    return { regions: {} };
  };
  const unregister = (_r: Msg, auth: string | undefined) => {
    queries.authorize(auth);
    return {};
  };
  return {
    SystemSharedMemoryStatus: unary(status('system')),
    SystemSharedMemoryRegister: unary(register('system')),
    SystemSharedMemoryUnregister: unary(unregister),
    CudaSharedMemoryStatus: unary(status('cuda')),
    CudaSharedMemoryRegister: unary(register('cuda')),
    CudaSharedMemoryUnregister: unary(unregister),
  };
}

function authorization(md: Metadata): string | undefined {
  const v = md.get('authorization')[0];
  return typeof v === 'string' ? v : Buffer.isBuffer(v) ? v.toString('utf8') : undefined;
}

function deadlineOf(d: Date | number): number | undefined {
  const ms = d instanceof Date ? d.getTime() : d;
  return Number.isFinite(ms) ? ms : undefined;
}
