import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildTextEncoderSeq, TEXT_MAX_SEQ, TEXT_VOCAB } from './models/text-encoder.js';

export { buildTextEncoderSeq, TEXT_MAX_SEQ };

export const TEXT_ENCODER_GEARS = 'text_encoder_gears';

/** Gears over batch × length (rows,tokens): each listed once per input, as GE reads them. */
export const TEXT_ENCODER_GEAR_SHAPES: readonly (readonly [number, number])[] = [
  [1, 32],
  [4, 32],
  [1, 64],
  [4, 64],
  [8, TEXT_MAX_SEQ],
];

/**
 * The config of the variable-length text encoder as the GE backend serves it:
 * one static graph per gear, and requests of other lengths padded up to the
 * nearest gear with token 0 and mask 0 (masked tokens change no real token's
 * answer). `backend` is npu_ge; the same config with backend "onnxruntime"
 * runs the gears on CPU.
 */
export function textEncoderGearsConfig(backend: 'npu_ge' | 'onnxruntime' = 'npu_ge', extra = ''): string {
  const dims = TEXT_ENCODER_GEAR_SHAPES.map(([b, s]) => `${b},${s},${b},${s}`).join(';');
  return `# BERT-shaped text encoder over 1..${TEXT_MAX_SEQ} tokens (vocab ${TEXT_VOCAB}, hidden 64), compiled per
# gear of batch x length; requests of other lengths are padded up to the nearest gear.
name: "${TEXT_ENCODER_GEARS}"
backend: "${backend}"
max_batch_size: 8
input { name: "input_ids" data_type: TYPE_INT64 dims: [ -1 ] }
input { name: "attention_mask" data_type: TYPE_INT64 dims: [ -1 ] }
output { name: "last_hidden_state" data_type: TYPE_FP32 dims: [ -1, 64 ] }
output { name: "pooled" data_type: TYPE_FP32 dims: [ 64 ] }
dynamic_batching { max_queue_delay_microseconds: 20000 }
parameters { key: "graph.ge.inputShape" value { string_value: "input_ids:-1,-1;attention_mask:-1,-1" } }
parameters { key: "graph.ge.dynamicDims" value { string_value: "${dims}" } }
parameters { key: "gear.pad_value.input_ids" value { string_value: "0" } }
parameters { key: "gear.pad_value.attention_mask" value { string_value: "0" } }
${extra}`;
}

/** Writes `<dir>/text_encoder_gears/{config.pbtxt,1/model.onnx}`; returns the model file's path. */
export async function writeTextEncoderGears(dir: string, config = textEncoderGearsConfig()): Promise<string> {
  const folder = join(dir, TEXT_ENCODER_GEARS);
  await mkdir(join(folder, '1'), { recursive: true });
  await writeFile(join(folder, 'config.pbtxt'), config);
  const modelPath = join(folder, '1', 'model.onnx');
  await writeFile(modelPath, buildTextEncoderSeq());
  return modelPath;
}
