import {
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  type SpanOptions,
  trace,
} from '@opentelemetry/api';

export type { Context, Span } from '@opentelemetry/api';
export { ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';

/**
 * OpenTelemetry traces. The SDK starts only when an exporter is configured
 * (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
 * OTEL_TRACES_EXPORTER) and OTEL_SDK_DISABLED is not true; otherwise nothing
 * is loaded and every helper here returns at once, so a default run pays a
 * boolean check per hop.
 */
let active = false;

/** Whether this process records and exports spans. */
export function tracingActive(): boolean {
  return active;
}

/** Whether the environment asks for traces (the OTel SDK's own rules). */
export function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  if (/^true$/i.test((env.OTEL_SDK_DISABLED ?? '').trim())) return false;
  const exporters = exporterNames(env);
  if (exporters.length > 0) return !exporters.every((e) => e === 'none');
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

function exporterNames(env: NodeJS.ProcessEnv): string[] {
  return (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
}

/** What startTracing reports through (pino's shape, so telemetry needs no logger here). */
interface TraceLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** Stops tracing: flushes the spans not exported yet. */
export type StopTracing = () => Promise<void>;

/**
 * Starts the SDK for `service` when the environment asks for it: OTLP over
 * HTTP (protobuf) and/or the console exporter, the sampler of
 * OTEL_TRACES_SAMPLER (default parentbased_always_on, so a caller's sampling
 * decision holds), W3C trace context and baggage propagation, the service
 * name `gemesh-<service>` unless OTEL_SERVICE_NAME names it.
 */
export interface TracingOptions {
  /**
   * Decides for each span that starts a trace here (no parent, or a parent
   * from another process) whether it is sampled, before the OTEL_TRACES_SAMPLER
   * sampler is asked; spans under a local parent follow their parent. The
   * gateway's trace settings (Triton's trace extension) decide through it.
   */
  readonly rootSampler?: (attributes: Readonly<Record<string, unknown>>) => boolean;
}

export async function startTracing(
  service: string,
  log?: TraceLog,
  options: TracingOptions = {},
): Promise<StopTracing> {
  const env = process.env;
  if (active || !tracingWanted(env)) return async () => undefined;
  const [sdk, { AsyncLocalStorageContextManager }, core, resources] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
  ]);
  const processors = [];
  const names = exporterNames(env);
  const wanted = names.length > 0 ? names : ['otlp'];
  const delay = Number(env.OTEL_BSP_SCHEDULE_DELAY);
  for (const name of wanted) {
    if (name === 'otlp') {
      const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf';
      if (protocol !== 'http/protobuf') {
        log?.warn({ protocol }, 'OTLP protocol not supported here; exporting with http/protobuf');
      }
      const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
      processors.push(
        new sdk.BatchSpanProcessor({
          exporter: new OTLPTraceExporter(),
          ...(Number.isFinite(delay) && delay > 0 ? { scheduledDelayMillis: delay } : {}),
        }),
      );
    } else if (name === 'console') {
      processors.push(new sdk.SimpleSpanProcessor({ exporter: new sdk.ConsoleSpanExporter() }));
    } else if (name !== 'none') {
      log?.warn({ exporter: name }, 'unknown OTEL_TRACES_EXPORTER entry ignored (otlp, console, none)');
    }
  }
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': `gemesh-${service}`, 'service.namespace': 'ge-mesh' }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const base = samplerFromEnv(sdk, env);
  const decide = options.rootSampler;
  const sampler: import('@opentelemetry/sdk-trace').Sampler = decide
    ? {
        shouldSample(ctx, traceId, name, kind, attributes, links) {
          const parent = trace.getSpanContext(ctx);
          if ((!parent || parent.isRemote) && !decide(attributes)) return { decision: sdk.SamplingDecision.NOT_RECORD };
          return base.shouldSample(ctx, traceId, name, kind, attributes, links);
        },
        toString: () => `RootSampler{${base.toString()}}`,
      }
    : base;
  const provider = new sdk.TracerProvider({ resource, sampler, spanProcessors: processors });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(
    new core.CompositePropagator({
      propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()],
    }),
  );
  trace.setGlobalTracerProvider(provider);
  active = true;
  log?.info({ exporters: wanted, sampler: env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on' }, 'tracing on');
  return async () => {
    await provider.forceFlush().catch(() => undefined);
    await provider.shutdown().catch(() => undefined);
  };
}

type Sdk = typeof import('@opentelemetry/sdk-trace');

/** OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG, as the specification names them. */
function samplerFromEnv(sdk: Sdk, env: NodeJS.ProcessEnv) {
  const name = (env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on').trim().toLowerCase();
  const arg = Number(env.OTEL_TRACES_SAMPLER_ARG ?? '1');
  const ratio = Number.isFinite(arg) && arg >= 0 && arg <= 1 ? arg : 1;
  switch (name) {
    case 'always_on':
      return new sdk.AlwaysOnSampler();
    case 'always_off':
      return new sdk.AlwaysOffSampler();
    case 'traceidratio':
      return new sdk.TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_off':
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(ratio) });
    default:
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
  }
}

/** The tracer every GE Mesh span comes from. */
export function meshTracer() {
  return trace.getTracer('ge-mesh');
}

/** A context carried in message or HTTP headers (traceparent, tracestate), or the root context. */
export function contextFromHeaders(headers: Readonly<Record<string, unknown>> | undefined): Context {
  if (!active || !headers) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, headers, {
    keys: (h) => Object.keys(h),
    get: (h, key) => {
      const v = h[key];
      if (typeof v === 'string') return v;
      if (Buffer.isBuffer(v)) return v.toString('utf8');
      if (Array.isArray(v) && typeof v[0] === 'string') return v[0];
      return undefined;
    },
  });
}

/** Headers carrying `ctx` to the next hop (traceparent, tracestate); undefined when not tracing. */
export function headersFromContext(ctx: Context = context.active()): Record<string, string> | undefined {
  if (!active) return undefined;
  const out: Record<string, string> = {};
  propagation.inject(ctx, out);
  return Object.keys(out).length > 0 ? out : undefined;
}

/** The W3C traceparent value of a span (what a response returns as `traceresponse`). */
export function traceparentOf(sc: SpanContext): string {
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 1).toString(16).padStart(2, '0')}`;
}

/** Records an error on a span: exception event, status ERROR, and the mesh's error code. */
export function spanFailed(span: Span, err: unknown): void {
  const e = err instanceof Error ? err : new Error(String(err));
  span.recordException(e);
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') span.setAttribute('gemesh.error.code', code);
  span.setStatus({ code: 2, message: e.message });
}

/** High-resolution wall-clock time (ms since the epoch), comparable across threads and processes. */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * Starts a span of this process's tracer at `epochMs()`: the SDK's own default
 * start is `Date.now()`, a whole millisecond, as long as a tiny request's stages.
 */
export function startClockedSpan(name: string, options: SpanOptions, ctx: Context): Span {
  return meshTracer().startSpan(name, { startTime: epochMs(), ...options }, ctx);
}

/** How a mesh span ends, once: done, or failed with its error recorded. */
export interface SpanEnding {
  end(): void;
  fail(err: unknown): void;
}

/** Ends `span` at `epochMs()` (see startClockedSpan): an end without a time would be `Date.now()`. */
export function clockedEnding(span: Span): SpanEnding {
  return {
    end: () => span.end(epochMs()),
    fail(err) {
      spanFailed(span, err);
      span.end(epochMs());
    },
  };
}
