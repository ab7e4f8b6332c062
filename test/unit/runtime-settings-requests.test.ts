import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MeshError } from '@ge-mesh/protocol';
import { logSettingsOfLevel } from '@ge-mesh/telemetry';
import { mergeLogSettings } from '../../services/gateway/src/pipeline/logging-control.js';
import { parseTraceChanges } from '../../services/gateway/src/pipeline/trace-control.js';

/** The bodies of Triton's trace and logging extensions, read with its rules and texts (http_server.cc). */
const refused = (run: () => unknown, code: string, message: string) =>
  assert.throws(run, (err: unknown) => err instanceof MeshError && err.code === code && err.message === message);

describe('trace setting requests', () => {
  it('takes levels, numbers as strings or numbers, and null to clear', () => {
    assert.deepEqual(
      parseTraceChanges({
        trace_level: ['TIMESTAMPS', 'TENSORS'],
        trace_rate: 10,
        trace_count: '-1',
        log_frequency: null,
      }),
      { trace_level: ['TIMESTAMPS', 'TENSORS'], trace_rate: '10', trace_count: '-1', log_frequency: null },
    );
    assert.deepEqual(parseTraceChanges({ trace_mode: 'opentelemetry' }), {});
  });

  it("refuses what Triton refuses, with Triton's texts", () => {
    refused(
      () => parseTraceChanges({ trace_level: ['OFF', 'TIMESTAMPS'] }),
      'INVALID_ARGUMENT',
      "Expect only one trace level 'OFF' is specified",
    );
    refused(
      () => parseTraceChanges({ trace_rate: 'abc' }),
      'INVALID_ARGUMENT',
      "Unable to parse 'trace_rate', got: abc",
    );
    refused(
      () => parseTraceChanges({ trace_count: '-5' }),
      'INVALID_ARGUMENT',
      "Unable to parse 'trace_count'. Expecting value >= -1, got:-5",
    );
    refused(
      () => parseTraceChanges({ trace_file: '/tmp/t.json' }),
      'UNSUPPORTED',
      'trace file location can not be updated through network protocol (traces go to the OTLP exporter: OTEL_EXPORTER_OTLP_ENDPOINT)',
    );
  });

  it("gRPC's texts where its front end words them differently; trace_file is checked first", () => {
    refused(
      () => parseTraceChanges({ trace_rate: ['2', '3'] }, 'grpc'),
      'INVALID_ARGUMENT',
      "expect only 1 value for 'trace_rate'",
    );
    refused(
      () => parseTraceChanges({ trace_count: ['-5'] }, 'grpc'),
      'INVALID_ARGUMENT',
      "Unable to parse 'trace_count'. Expecting value >= -1, got: -5",
    );
    assert.throws(
      () => parseTraceChanges({ trace_rate: 'abc', trace_file: '/tmp/t.json' }),
      (err: unknown) => err instanceof MeshError && err.code === 'UNSUPPORTED',
    );
  });

  it('refuses what Triton would ignore: a rate of 0, an unknown level or key', () => {
    refused(
      () => parseTraceChanges({ trace_rate: '0' }),
      'INVALID_ARGUMENT',
      "trace_rate must be an integer of at least 1, got '0'",
    );
    refused(
      () => parseTraceChanges({ trace_level: ['LOUD'] }),
      'INVALID_ARGUMENT',
      "trace_level must be OFF, TIMESTAMPS or TENSORS, got 'LOUD'",
    );
    refused(() => parseTraceChanges({ colour: 'red' }), 'INVALID_ARGUMENT', "unknown trace setting 'colour'");
  });
});

describe('log setting requests', () => {
  const current = logSettingsOfLevel('info');

  it('changes what is given; null changes nothing; the log_file read back is taken', () => {
    assert.deepEqual(
      mergeLogSettings(current, { log_verbose_level: 2, log_info: null, log_format: 'ISO8601', log_file: '' }),
      { ...current, log_verbose_level: 2, log_format: 'ISO8601' },
    );
  });

  it("refuses wrong types with TritonJson's texts, and a log file", () => {
    refused(
      () => mergeLogSettings(current, { log_info: 'yes' }),
      'INVALID_ARGUMENT',
      'attempt to access JSON non-boolean as boolean',
    );
    refused(
      () => mergeLogSettings(current, { log_verbose_level: -1 }),
      'INVALID_ARGUMENT',
      'attempt to access JSON non-unsigned-integer as unsigned-integer',
    );
    refused(
      () => mergeLogSettings(current, { log_format: 'bogus' }),
      'INVALID_ARGUMENT',
      'invalid argument for --log_format, got: bogus',
    );
    refused(
      () => mergeLogSettings(current, { log_file: '/tmp/mesh.log' }),
      'UNSUPPORTED',
      'log file location can not be updated through network protocol (every service logs to its standard output)',
    );
    refused(() => mergeLogSettings(current, { loud: true }), 'INVALID_ARGUMENT', "unknown log setting 'loud'");
  });

  it("gRPC's own texts for the same mistakes", () => {
    refused(
      () => mergeLogSettings(current, { log_info: 'yes' }, 'grpc'),
      'INVALID_ARGUMENT',
      "expect boolean for 'log_info'",
    );
    refused(
      () => mergeLogSettings(current, { log_verbose_level: 'high' }, 'grpc'),
      'INVALID_ARGUMENT',
      "expect int32 for 'log_verbose_level'",
    );
    refused(
      () => mergeLogSettings(current, { log_format: 3 }, 'grpc'),
      'INVALID_ARGUMENT',
      "expect string for 'log_format'",
    );
    refused(
      () => mergeLogSettings(current, { log_format: 'bogus' }, 'grpc'),
      'INVALID_ARGUMENT',
      'invalid argument for log_format, got: bogus',
    );
  });
});
