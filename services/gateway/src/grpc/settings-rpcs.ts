import type { LoggingControl } from '../pipeline/logging-control.js';
import type { TraceControl } from '../pipeline/trace-control.js';

/**
 * TraceSetting and LogSettings over gRPC: Triton's message shapes around the
 * same controls as REST. An empty request reads the settings; one with
 * settings changes them (a trace setting with no values resets it, as
 * Triton's clients send to clear one).
 */
type Msg = Record<string, unknown>;

export async function traceSetting(control: TraceControl, auth: string | undefined, r: Msg): Promise<Msg> {
  const model = typeof r.model_name === 'string' && r.model_name !== '' ? r.model_name : undefined;
  const entries = Object.entries((r.settings as Record<string, { value?: string[] }> | undefined) ?? {});
  const current =
    entries.length === 0
      ? control.get(auth, model)
      : await control.update(
          auth,
          model,
          Object.fromEntries(entries.map(([k, v]) => [k, (v.value ?? []).length === 0 ? null : (v.value as string[])])),
          'grpc',
        );
  return Object.fromEntries(
    Object.entries(current).map(([k, v]) => [k, { value: Array.isArray(v) ? v : [String(v)] }]),
  );
}

type LogValue = { bool_param?: boolean; uint32_param?: number; string_param?: string; parameter_choice?: string };

export async function logSettings(control: LoggingControl, auth: string | undefined, r: Msg): Promise<Msg> {
  const entries = Object.entries((r.settings as Record<string, LogValue> | undefined) ?? {});
  const current =
    entries.length === 0
      ? control.get(auth)
      : await control.update(auth, Object.fromEntries(entries.map(([k, v]) => [k, chosenValue(v)])), 'grpc');
  return Object.fromEntries(
    Object.entries(current).map(([k, v]) => [
      k,
      typeof v === 'boolean' ? { bool_param: v } : typeof v === 'number' ? { uint32_param: v } : { string_param: v },
    ]),
  );
}

/** The value of the oneof that is set (proto-loader names it in `parameter_choice` when asked to). */
function chosenValue(v: LogValue): unknown {
  if (v.parameter_choice) return v[v.parameter_choice as keyof LogValue];
  return v.bool_param ?? v.uint32_param ?? v.string_param;
}
