// Broken config.pbtxt text: each case asserts the exact message (with
// file:line:column), the error kind and the field path.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, type ConfigErrorKind, parseTextProto } from '@ge-mesh/model-repository';
import { MeshError } from '@ge-mesh/protocol';

const FILE = 'models/tiny/config.pbtxt';

interface Case {
  readonly title: string;
  readonly text: string;
  readonly message: string;
  readonly kind: ConfigErrorKind;
  readonly field: string | undefined;
}

function parseError(text: string): ConfigError {
  try {
    parseTextProto(text, { file: FILE });
  } catch (e) {
    assert.ok(e instanceof ConfigError, `expected a ConfigError, got ${String(e)}`);
    return e;
  }
  assert.fail(`parsed without error: ${JSON.stringify(text)}`);
}

function check(cases: readonly Case[]): void {
  for (const c of cases) {
    it(c.title, () => {
      const e = parseError(c.text);
      assert.equal(e.message, `${FILE}:${c.message}`);
      assert.equal(e.kind, c.kind);
      assert.equal(e.field, c.field);
      const [line, column] = c.message.split(':').map(Number);
      assert.equal(e.line, line);
      assert.equal(e.column, column);
      assert.equal(e.file, FILE);
    });
  }
}

describe('text format errors: unknown fields', () => {
  check([
    {
      title: 'an unknown top-level field, with the closest name suggested',
      text: 'name: "tiny"\nmax_batch: 8',
      message: "2:1: unknown field 'max_batch' in ModelConfig (did you mean 'max_batch_size'?)",
      kind: 'unknown_field',
      field: 'max_batch',
    },
    {
      title: 'an unknown field in a nested message names that message',
      text: 'input {\n  name: "x"\n  dim: [ 1 ]\n}',
      message: "3:3: unknown field 'dim' in ModelInput (did you mean 'dims'?)",
      kind: 'unknown_field',
      field: 'input[0].dim',
    },
    {
      title: 'an unknown field with no close name gets no suggestion',
      text: 'foo: 1',
      message: "1:1: unknown field 'foo' in ModelConfig",
      kind: 'unknown_field',
      field: 'foo',
    },
    {
      title: 'an unknown field in a map entry',
      text: 'parameters {\n  key: "a"\n  val: { string_value: "1" }\n}',
      message: "3:3: unknown field 'val' in ParametersEntry (did you mean 'value'?)",
      kind: 'unknown_field',
      field: 'parameters[0].val',
    },
    {
      title: 'an unknown field two levels down',
      text: 'dynamic_batching {\n  default_queue_policy { timeout: 5 }\n}',
      message: "2:26: unknown field 'timeout' in ModelQueuePolicy (did you mean 'timeout_action'?)",
      kind: 'unknown_field',
      field: 'dynamic_batching.default_queue_policy.timeout',
    },
    {
      title: 'an extension field name',
      text: '[inference.ext]: 1',
      message: "1:1: extension and Any field names ('[...]') are not part of ModelConfig",
      kind: 'unknown_field',
      field: undefined,
    },
    {
      title: 'positions count a tab as one column after a CRLF line end',
      text: 'name: "a"\r\n\tmax_batch: 1',
      message: "2:2: unknown field 'max_batch' in ModelConfig (did you mean 'max_batch_size'?)",
      kind: 'unknown_field',
      field: 'max_batch',
    },
  ]);
});

describe('text format errors: unterminated and misplaced delimiters', () => {
  check([
    {
      title: 'a string not closed on its line',
      text: 'name: "tiny\nbackend: "onnxruntime"',
      message:
        '1:7: unterminated string: add the closing " on the same line (a string cannot span lines; join adjacent "..." "..." literals instead)',
      kind: 'syntax',
      field: 'name',
    },
    {
      title: 'a single-quoted string cut off by the end of the file',
      text: "backend: 'npu_ge",
      message:
        '1:10: unterminated string: add the closing \' on the same line (a string cannot span lines; join adjacent "..." "..." literals instead)',
      kind: 'syntax',
      field: 'backend',
    },
    {
      title: 'a message never closed is reported where it opens',
      text: 'name: "a"\ndynamic_batching {\n  max_queue_delay_microseconds: 100\n',
      message: "2:18: message 'dynamic_batching' is never closed: add '}' (reached the end of the file)",
      kind: 'syntax',
      field: 'dynamic_batching',
    },
    {
      title: 'a < message closed with }',
      text: 'input {\n  reshape < shape: [ 1 ]\n}',
      message: "3:1: expected '>' to close message 'reshape' opened at line 2:11, found '}'",
      kind: 'syntax',
      field: 'input[0].reshape',
    },
    {
      title: 'a closing brace with no open message',
      text: 'name: "a"\n}',
      message: "2:1: unexpected '}': no message is open here",
      kind: 'syntax',
      field: undefined,
    },
    {
      title: 'a list never closed',
      text: 'input { dims: [ 1, 2',
      message: "1:15: list of 'dims' is never closed: add ']' (reached the end of the file)",
      kind: 'syntax',
      field: 'input[0].dims',
    },
    {
      title: 'list elements without a comma between them',
      text: 'input { dims: [ 1 2 ] }',
      message: "1:19: expected ',' or ']' in the list of 'dims', found 2",
      kind: 'syntax',
      field: 'input[0].dims',
    },
    {
      title: 'a trailing comma in a list',
      text: 'input { dims: [ 1, 2, ] }',
      message: "1:21: a list cannot end with ',': remove the ',' before ']' in the list of 'dims'",
      kind: 'syntax',
      field: 'input[0].dims',
    },
    {
      title: 'a scalar without its colon',
      text: 'name "tiny"',
      message: "1:6: expected ':' after 'name', found string \"tiny\" (a scalar field needs a colon)",
      kind: 'syntax',
      field: 'name',
    },
    {
      title: 'a number where a field name belongs',
      text: '8: 1',
      message: '1:1: expected a field name of ModelConfig, found 8',
      kind: 'syntax',
      field: undefined,
    },
    {
      title: 'a quoted field name',
      text: '"name": "x"',
      message: '1:1: expected a field name of ModelConfig, found string "name"',
      kind: 'syntax',
      field: undefined,
    },
    {
      title: 'a // comment',
      text: 'name: "a" // comment',
      message: "1:11: '//' does not start a comment in text format; use '#'",
      kind: 'syntax',
      field: 'name',
    },
    {
      title: 'a character that starts no token',
      text: 'max_batch_size: 1\n@',
      message: "2:1: unexpected character '@'",
      kind: 'syntax',
      field: undefined,
    },
  ]);
});

describe('text format errors: values of the wrong kind', () => {
  check([
    {
      title: 'a bad enum name, with the usual spelling from other tools mapped to Triton’s',
      text: 'input {\n  data_type: TYPE_FLOAT32\n}',
      message: "2:14: unknown value 'TYPE_FLOAT32' for field 'data_type' of enum DataType (did you mean 'TYPE_FP32'?)",
      kind: 'type',
      field: 'input[0].data_type',
    },
    {
      title: 'a bad enum name close to a valid one',
      text: 'instance_group { kind: KIND_NPU }',
      message:
        "1:24: unknown value 'KIND_NPU' for field 'kind' of enum ModelInstanceGroup.Kind (did you mean 'KIND_GPU'?)",
      kind: 'type',
      field: 'instance_group[0].kind',
    },
    {
      title: 'a bad enum name far from every value lists them',
      text: 'dynamic_batching { default_queue_policy { timeout_action: DROP } }',
      message:
        "1:59: unknown value 'DROP' for field 'timeout_action' of enum ModelQueuePolicy.TimeoutAction (expected one of REJECT, DELAY)",
      kind: 'type',
      field: 'dynamic_batching.default_queue_policy.timeout_action',
    },
    {
      title: 'an enum number with no value',
      text: 'input { data_type: 99 }',
      message:
        "1:20: 99 is not a value of enum DataType for field 'data_type'; expected one of TYPE_INVALID, TYPE_BOOL, TYPE_UINT8, TYPE_UINT16, TYPE_UINT32, TYPE_UINT64, TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_INT64, TYPE_FP16, TYPE_FP32, TYPE_FP64, TYPE_STRING, TYPE_BF16",
      kind: 'type',
      field: 'input[0].data_type',
    },
    {
      title: 'an enum value in quotes',
      text: 'input { data_type: "TYPE_FP32" }',
      message: '1:20: field \'data_type\' takes a DataType value, found string "TYPE_FP32"',
      kind: 'type',
      field: 'input[0].data_type',
    },
    {
      title: 'a list on a non-repeated scalar',
      text: 'max_batch_size: [ 8 ]',
      message: "1:17: field 'max_batch_size' is not repeated, so it takes one value, not a list",
      kind: 'type',
      field: 'max_batch_size',
    },
    {
      title: 'a list on a non-repeated message',
      text: 'dynamic_batching [ { } ]',
      message: "1:18: field 'dynamic_batching' is not repeated, so it takes one message, not a list",
      kind: 'type',
      field: 'dynamic_batching',
    },
    {
      title: 'a quoted number for an integer field',
      text: 'max_batch_size: "8"',
      message: '1:17: field \'max_batch_size\' takes an integer (int32), found string "8"; remove the quotes',
      kind: 'type',
      field: 'max_batch_size',
    },
    {
      title: 'an unquoted word for a string field',
      text: 'backend: npu_ge',
      message: "1:10: field 'backend' takes a string (in quotes), found 'npu_ge'; write \"npu_ge\"",
      kind: 'type',
      field: 'backend',
    },
    {
      title: 'a number for a string field',
      text: 'name: 5',
      message: "1:7: field 'name' takes a string (in quotes), found 5",
      kind: 'type',
      field: 'name',
    },
    {
      title: 'a float for an integer field',
      text: 'instance_group { count: 1.5 }',
      message: "1:25: field 'count' takes an integer (int32), found 1.5",
      kind: 'type',
      field: 'instance_group[0].count',
    },
    {
      title: 'a message for a scalar field',
      text: 'name { }',
      message: "1:6: field 'name' takes a string (in quotes), not a message",
      kind: 'type',
      field: 'name',
    },
    {
      title: 'a scalar for a message field',
      text: 'dynamic_batching: 5',
      message:
        "1:19: field 'dynamic_batching' takes a message (ModelDynamicBatching): write dynamic_batching { ... }, found 5",
      kind: 'type',
      field: 'dynamic_batching',
    },
    {
      title: 'a scalar for a repeated message field',
      text: 'input: 5',
      message: "1:8: field 'input' takes a message (ModelInput): write input { ... }, found 5",
      kind: 'type',
      field: 'input',
    },
    {
      title: 'a negative value for an unsigned field',
      text: 'version_policy { latest { num_versions: -1 } }',
      message: "1:41: field 'num_versions' is unsigned (uint32), so '-1' is not allowed",
      kind: 'type',
      field: 'version_policy.latest.num_versions',
    },
    {
      title: 'an int32 out of range',
      text: 'max_batch_size: 2147483648',
      message: "1:17: 2147483648 is out of range for field 'max_batch_size' (int32: -2147483648 to 2147483647)",
      kind: 'type',
      field: 'max_batch_size',
    },
    {
      title: 'a uint32 out of range, written in hex',
      text: 'dynamic_batching { default_queue_policy { max_queue_size: 0x100000000 } }',
      message: "1:59: 0x100000000 is out of range for field 'max_queue_size' (uint32: 0 to 4294967295)",
      kind: 'type',
      field: 'dynamic_batching.default_queue_policy.max_queue_size',
    },
    {
      title: 'a 64-bit value beyond what a JS number holds exactly',
      text: 'dynamic_batching { priority_levels: 9007199254740993 }',
      message:
        "1:37: 9007199254740993 is too large for field 'priority_levels': 64-bit values are read exactly only up to 9007199254740991",
      kind: 'type',
      field: 'dynamic_batching.priority_levels',
    },
    {
      title: 'a word that is not a bool',
      text: 'input { optional: yes }',
      message:
        "1:19: field 'optional' takes a bool (true or false), found 'yes' (also accepted: True, False, t, f, 1, 0)",
      kind: 'type',
      field: 'input[0].optional',
    },
    {
      title: 'a number other than 0 or 1 for a bool',
      text: 'input { optional: 2 }',
      message: "1:19: field 'optional' takes a bool (true or false), found 2 (also accepted: True, False, t, f, 1, 0)",
      kind: 'type',
      field: 'input[0].optional',
    },
    {
      title: 'a hex number for a float field',
      text: 'model_metrics { metric_control { histogram_options { buckets: 0x10 } } }',
      message: "1:63: field 'buckets' takes a number (double); octal and hex are not allowed, write 16",
      kind: 'type',
      field: 'model_metrics.metric_control[0].histogram_options.buckets[0]',
    },
    {
      title: 'a word other than inf/nan for a float field',
      text: 'model_metrics { metric_control { histogram_options { buckets: big } } }',
      message: "1:63: field 'buckets' takes a number (double), found 'big'",
      kind: 'type',
      field: 'model_metrics.metric_control[0].histogram_options.buckets[0]',
    },
    {
      title: 'a minus sign before a string',
      text: 'max_batch_size: - "x"',
      message: '1:19: expected a number after \'-\', found string "x"',
      kind: 'syntax',
      field: 'max_batch_size',
    },
    {
      title: 'a bad element deep in the second of two inputs',
      text: 'input [\n  {\n    name: "a"\n  },\n  {\n    name: "b"\n    dims: [ 1, 2, oops ]\n  }\n]',
      message: "7:19: field 'dims' takes an integer (int64), found 'oops'",
      kind: 'type',
      field: 'input[1].dims[2]',
    },
  ]);
});

describe('text format errors: duplicates and oneofs', () => {
  check([
    {
      title: 'a non-repeated scalar set twice',
      text: 'max_batch_size: 8\nmax_batch_size: 16',
      message:
        "2:1: field 'max_batch_size' is set twice in ModelConfig (first at line 1:1); a non-repeated field may appear only once",
      kind: 'duplicate',
      field: 'max_batch_size',
    },
    {
      title: 'a non-repeated message set twice',
      text: 'dynamic_batching { }\ndynamic_batching { }',
      message:
        "2:1: field 'dynamic_batching' is set twice in ModelConfig (first at line 1:1); a non-repeated field may appear only once",
      kind: 'duplicate',
      field: 'dynamic_batching',
    },
    {
      title: 'a nested field set twice',
      text: 'input { name: "a" name: "b" }',
      message:
        "1:19: field 'name' is set twice in ModelInput (first at line 1:9); a non-repeated field may appear only once",
      kind: 'duplicate',
      field: 'input[0].name',
    },
    {
      title: 'two schedulers',
      text: 'dynamic_batching { }\nsequence_batching { }',
      message:
        "2:1: 'sequence_batching' cannot be set together with 'dynamic_batching' (line 1:1): both belong to oneof 'scheduling_choice' of ModelConfig; keep only one",
      kind: 'oneof',
      field: 'sequence_batching',
    },
    {
      title: 'two version policies',
      text: 'version_policy { latest { } all { } }',
      message:
        "1:29: 'all' cannot be set together with 'latest' (line 1:18): both belong to oneof 'policy_choice' of ModelVersionPolicy; keep only one",
      kind: 'oneof',
      field: 'version_policy.all',
    },
    {
      title: 'two kinds of warmup data inside a map value',
      text: 'model_warmup { inputs { key: "x" value { zero_data: true random_data: true } } }',
      message:
        "1:58: 'random_data' cannot be set together with 'zero_data' (line 1:42): both belong to oneof 'input_data_type' of ModelWarmup.Input; keep only one",
      kind: 'oneof',
      field: 'model_warmup[0].inputs[0].value.random_data',
    },
  ]);
});

describe('text format errors: strings and numbers', () => {
  check([
    {
      title: 'an unknown escape',
      text: 'name: "a\\qb"',
      message:
        "1:9: invalid escape '\\q' in string; valid escapes are \\n \\t \\r \\a \\b \\f \\v \\\\ \\' \\\" \\? \\ooo \\xHH \\uHHHH (write \\\\ for a backslash)",
      kind: 'syntax',
      field: 'name',
    },
    {
      title: '\\x without hex digits',
      text: 'name: "\\xZZ"',
      message: "1:8: escape '\\x' needs one or two hex digits after it",
      kind: 'syntax',
      field: 'name',
    },
    {
      title: '\\u with too few digits',
      text: 'name: "\\u12"',
      message: "1:8: escape '\\u' needs exactly 4 hex digits after it",
      kind: 'syntax',
      field: 'name',
    },
    {
      title: 'an octal escape above one byte',
      text: 'name: "\\400"',
      message: "1:8: octal escape '\\400' is above \\377 (one byte)",
      kind: 'syntax',
      field: 'name',
    },
    {
      title: 'byte escapes that are not UTF-8',
      text: 'name: "\\xff"',
      message: '1:7: string escapes do not form valid UTF-8; use \\u escapes for non-ASCII characters',
      kind: 'syntax',
      field: 'name',
    },
    {
      title: 'an unpaired surrogate',
      text: 'name: "\\ud800"',
      message: "1:8: escape '\\ud800' is not a Unicode code point",
      kind: 'syntax',
      field: 'name',
    },
    {
      title: 'a code point above U+10FFFF',
      text: 'name: "\\U00110000"',
      message: "1:8: escape '\\U00110000' is not a Unicode code point",
      kind: 'syntax',
      field: 'name',
    },
    {
      title: 'a backslash at the end of the line',
      text: 'name: "abc\\',
      message: '1:11: a string cannot end in a lone backslash; write \\\\ for a backslash',
      kind: 'syntax',
      field: 'name',
    },
    {
      title: 'a number running into an identifier',
      text: 'max_batch_size: 8abc',
      message: "1:17: number '8' runs into 'abc'; separate them with a space or ','",
      kind: 'syntax',
      field: 'max_batch_size',
    },
    {
      title: 'a dim written as 224x224',
      text: 'input { dims: [ 3, 224x224 ] }',
      message: "1:20: number '224' runs into 'x224'; separate them with a space or ','",
      kind: 'syntax',
      field: 'input[0].dims',
    },
    {
      title: 'a float with suffix running into an identifier',
      text: 'model_metrics { metric_control { histogram_options { buckets: 1.5fx } } }',
      message: "1:63: number '1.5f' runs into 'x'; separate them with a space or ','",
      kind: 'syntax',
      field: 'model_metrics.metric_control[0].histogram_options.buckets',
    },
    {
      title: 'a leading zero with a non-octal digit',
      text: 'max_batch_size: 08',
      message: "1:17: invalid number '08': a leading 0 makes it octal, which has no digit '8'; drop the leading 0",
      kind: 'syntax',
      field: 'max_batch_size',
    },
    {
      title: 'a float with a leading zero',
      text: 'model_metrics { metric_control { histogram_options { buckets: 01.5 } } }',
      message: "1:63: invalid number '01.5': a decimal number cannot start with 0",
      kind: 'syntax',
      field: 'model_metrics.metric_control[0].histogram_options.buckets',
    },
    {
      title: '0x with no digits',
      text: 'max_batch_size: 0x',
      message: "1:17: invalid number '0x': 0x needs hex digits after it",
      kind: 'syntax',
      field: 'max_batch_size',
    },
  ]);
});

describe('ConfigError', () => {
  it('is a MeshError with code INVALID_ARGUMENT that crosses the wire with its message', () => {
    const e = parseError('max_batch: 8');
    assert.ok(e instanceof MeshError);
    assert.equal(e.name, 'ConfigError');
    assert.equal(e.code, 'INVALID_ARGUMENT');
    assert.equal(e.status, 400);
    assert.equal(e.detail, "unknown field 'max_batch' in ModelConfig (did you mean 'max_batch_size'?)");
    assert.deepEqual(e.toWire(), {
      code: 'INVALID_ARGUMENT',
      message: `${FILE}:1:1: unknown field 'max_batch' in ModelConfig (did you mean 'max_batch_size'?)`,
    });
  });

  it('defaults the file name to config.pbtxt', () => {
    assert.throws(() => parseTextProto('max_batch_size: -'), {
      message: "config.pbtxt:1:18: expected a number after '-', found the end of the file",
    });
  });
});
