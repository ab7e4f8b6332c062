import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDemoModels } from '@ge-mesh/demo-models';
import { encodeModel, GraphBuilder, makeModel } from '@ge-mesh/onnx';
import type { DataType } from '@ge-mesh/protocol';
import { DEMO_REPOSITORY } from './mesh-harness.js';

/** The datatypes onnxruntime-node runs (BF16 and BYTES have no tensor type there). */
export const ORT_DATATYPES: readonly DataType[] = [
  'BOOL',
  'UINT8',
  'UINT16',
  'UINT32',
  'UINT64',
  'INT8',
  'INT16',
  'INT32',
  'INT64',
  'FP16',
  'FP32',
  'FP64',
];

/** The `labelled` model's class labels, by output index. */
export const LABELS = ['cat', 'dog', 'bird', 'fish'];

/** Rows × elements per row of every `datatypes` tensor. */
export const DATATYPES_ROW = 3;

export interface GatewayRepository {
  readonly dir: string;
  /** Models that load (for queue cleanup). */
  readonly models: string[];
  remove(): Promise<void>;
}

/**
 * A model repository for gateway tests, in a temporary folder:
 * - `tiny`: the demo MLP (x FP32 [16] → y FP32 [4], max_batch_size 8);
 * - `datatypes` (optional): one Identity per datatype onnxruntime runs,
 *   `in_<DT>` → `out_<DT>`, dims [3], max_batch_size 2, one tier of 2;
 * - `open` (optional): tiny again, with `gemesh_auth: "none"`;
 * - `broken` (optional): a folder whose config does not load;
 * - `labelled` (optional): tiny again, its output `y` with `label_filename` (LABELS, one per class).
 */
export async function makeGatewayRepository(
  opts: { datatypes?: boolean; open?: boolean; broken?: boolean; labelled?: boolean } = {},
): Promise<GatewayRepository> {
  await ensureDemoModels(DEMO_REPOSITORY, { only: ['tiny'] });
  const dir = await mkdtemp(join(tmpdir(), 'gemesh-gw-'));
  const models = ['tiny'];
  await copyModel('tiny', 'tiny', dir);
  if (opts.open) {
    await copyModel('tiny', 'open', dir, 'parameters { key: "gemesh_auth" value: { string_value: "none" } }\n');
    models.push('open');
  }
  if (opts.datatypes) {
    await mkdir(join(dir, 'datatypes', '1'), { recursive: true });
    await writeFile(join(dir, 'datatypes', '1', 'model.onnx'), datatypesModel());
    await writeFile(
      join(dir, 'datatypes', 'config.pbtxt'),
      '# Identity per datatype; inputs and outputs come from the model file.\nbackend: "onnxruntime"\nmax_batch_size: 2\ndynamic_batching { preferred_batch_size: [ 2 ] }\n',
    );
    models.push('datatypes');
  }
  if (opts.labelled) {
    await copyModel('tiny', 'labelled', dir);
    await writeFile(
      join(dir, 'labelled', 'config.pbtxt'),
      [
        'name: "labelled"',
        'backend: "onnxruntime"',
        'max_batch_size: 8',
        'input [{ name: "x", data_type: TYPE_FP32, dims: [16] }]',
        'output [{ name: "y", data_type: TYPE_FP32, dims: [4], label_filename: "labels.txt" }]',
        'dynamic_batching { preferred_batch_size: [1, 2, 4, 8] }',
        '',
      ].join('\n'),
    );
    await writeFile(join(dir, 'labelled', 'labels.txt'), `${LABELS.join('\n')}\n`);
    models.push('labelled');
  }
  if (opts.broken) {
    await mkdir(join(dir, 'broken', '1'), { recursive: true });
    await writeFile(join(dir, 'broken', 'config.pbtxt'), 'backend: "onnxruntime"\nmax_batch_sise: 4\n');
  }
  return { dir, models, remove: () => rm(dir, { recursive: true, force: true }) };
}

async function copyModel(from: string, to: string, dir: string, extraConfig = ''): Promise<void> {
  await mkdir(join(dir, to, '1'), { recursive: true });
  await copyFile(join(DEMO_REPOSITORY, from, '1', 'model.onnx'), join(dir, to, '1', 'model.onnx'));
  const config = (await readFile(join(DEMO_REPOSITORY, from, 'config.pbtxt'), 'utf8')).replace(
    `name: "${from}"`,
    `name: "${to}"`,
  );
  await writeFile(join(dir, to, 'config.pbtxt'), config + extraConfig);
}

function datatypesModel(): Uint8Array {
  const g = new GraphBuilder('datatypes');
  for (const dt of ORT_DATATYPES) {
    const x = g.input(`in_${dt}`, dt, ['batch', DATATYPES_ROW]);
    g.op('Identity', [x], {}, `out_${dt}`);
    g.output(`out_${dt}`, dt, ['batch', DATATYPES_ROW]);
  }
  return encodeModel(makeModel(g.build()));
}
