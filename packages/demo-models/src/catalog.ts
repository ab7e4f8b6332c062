import { buildOcrCls } from './models/ocr-cls.js';
import { buildPreprocess, PREPROCESS_SIZE } from './models/preprocess.js';
import { buildResnet18 } from './models/resnet18.js';
import { buildTextEncoder, TEXT_SEQ, TEXT_VOCAB } from './models/text-encoder.js';
import { buildTiny, TINY_IN, TINY_OUT } from './models/tiny.js';

/** How valid values for an input are drawn (see sample-inputs.ts). */
export type InputValues =
  /** Independent values uniform in [min, max). */
  | { kind: 'uniform'; min: number; max: number }
  /** Pixels in [min, max], each sample with its own brightness and contrast. */
  | { kind: 'image'; min: number; max: number }
  /** Token ids in [0, vocabSize). */
  | { kind: 'tokenIds'; vocabSize: number }
  /** 1 for the first L tokens and 0 after, L ≥ 1 drawn per sample. */
  | { kind: 'attentionMask' };

export interface DemoTensor {
  name: string;
  dataType: 'FP32' | 'INT64' | 'UINT8';
  /** Without the batch dim. */
  dims: readonly number[];
}

export interface DemoInput extends DemoTensor {
  values: InputValues;
}

export interface DemoModel {
  name: string;
  description: string;
  inputs: readonly DemoInput[];
  outputs: readonly DemoTensor[];
  /** As in the model's config.pbtxt. */
  maxBatchSize: number;
  /** `preferred_batch_size` in config.pbtxt: the batch tiers, ascending. */
  preferredBatchSizes: readonly number[];
  /** The model file's bytes; the same on every call. */
  build(): Uint8Array;
}

export const DEMO_MODELS: readonly DemoModel[] = [
  {
    name: 'ocr_cls',
    description: 'PaddleOCR text-direction classifier (pretrained)',
    inputs: [{ name: 'x', dataType: 'FP32', dims: [3, 48, 192], values: { kind: 'image', min: -1, max: 1 } }],
    outputs: [{ name: 'softmax_0.tmp_0', dataType: 'FP32', dims: [2] }],
    maxBatchSize: 16,
    preferredBatchSizes: [1, 4, 8, 16],
    build: buildOcrCls,
  },
  {
    name: 'preprocess',
    description: 'image preprocessing: uint8 HWC 224x224 RGB to FP32 NCHW in [0, 1]',
    inputs: [
      {
        name: 'image',
        dataType: 'UINT8',
        dims: [PREPROCESS_SIZE, PREPROCESS_SIZE, 3],
        values: { kind: 'image', min: 0, max: 255 },
      },
    ],
    outputs: [{ name: 'pixels', dataType: 'FP32', dims: [3, PREPROCESS_SIZE, PREPROCESS_SIZE] }],
    maxBatchSize: 16,
    preferredBatchSizes: [1, 4, 8, 16],
    build: buildPreprocess,
  },
  {
    name: 'resnet18',
    description: 'ResNet-18, 224x224, generated weights',
    inputs: [{ name: 'input', dataType: 'FP32', dims: [3, 224, 224], values: { kind: 'image', min: 0, max: 1 } }],
    outputs: [{ name: 'logits', dataType: 'FP32', dims: [1000] }],
    maxBatchSize: 16,
    preferredBatchSizes: [1, 4, 8, 16],
    build: buildResnet18,
  },
  {
    name: 'text_encoder',
    description: 'BERT-shaped encoder, seq 32, hidden 64, generated weights',
    inputs: [
      { name: 'input_ids', dataType: 'INT64', dims: [TEXT_SEQ], values: { kind: 'tokenIds', vocabSize: TEXT_VOCAB } },
      { name: 'attention_mask', dataType: 'INT64', dims: [TEXT_SEQ], values: { kind: 'attentionMask' } },
    ],
    outputs: [
      { name: 'last_hidden_state', dataType: 'FP32', dims: [TEXT_SEQ, 64] },
      { name: 'pooled', dataType: 'FP32', dims: [64] },
    ],
    maxBatchSize: 8,
    preferredBatchSizes: [1, 2, 4, 8],
    build: buildTextEncoder,
  },
  {
    name: 'tiny',
    description: 'two-layer MLP 16-32-4, generated weights',
    inputs: [{ name: 'x', dataType: 'FP32', dims: [TINY_IN], values: { kind: 'uniform', min: -1, max: 1 } }],
    outputs: [{ name: 'y', dataType: 'FP32', dims: [TINY_OUT] }],
    maxBatchSize: 8,
    preferredBatchSizes: [1, 2, 4, 8],
    build: buildTiny,
  },
];

/** Demo ensembles (config.pbtxt committed): their version folder holds no model file. */
export const DEMO_ENSEMBLES: readonly string[] = ['preprocess_resnet18'];

export function demoModel(name: string): DemoModel {
  const m = DEMO_MODELS.find((d) => d.name === name);
  if (!m) throw new Error(`unknown demo model ${name}; known: ${DEMO_MODELS.map((d) => d.name).join(', ')}`);
  return m;
}
