import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEMO_ENSEMBLES, DEMO_MODELS, type DemoModel } from './catalog.js';

/** The committed model repository (configs) that the models are generated into by default. */
export const DEMO_REPOSITORY_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../../infra/model_repository');

export const DEMO_MODEL_VERSION = '1';

export interface EnsuredModel {
  name: string;
  path: string;
  bytes: number;
  sha256: string;
  /** False when the file already held exactly these bytes. */
  written: boolean;
}

export interface EnsureOptions {
  /** Generate only these models (default: all). */
  only?: readonly string[];
}

/**
 * Writes `<outDir>/<model>/1/model.onnx` for each demo model (and each demo
 * ensemble's empty `<outDir>/<ensemble>/1/` where its config.pbtxt is). Files that
 * already hold the right bytes are left untouched; others are replaced
 * atomically (write to a temp name, then rename), so a concurrent reader
 * never sees half a model. config.pbtxt files are committed, not generated.
 */
export async function ensureDemoModels(outDir: string, opts: EnsureOptions = {}): Promise<EnsuredModel[]> {
  const models = selectModels(opts.only);
  const results: EnsuredModel[] = [];
  for (const model of models) results.push(await ensureModel(outDir, model));
  // An ensemble's version folder is empty, so git does not keep it: made here, beside its committed config.
  for (const name of opts.only ? [] : DEMO_ENSEMBLES) {
    const config = await stat(join(outDir, name, 'config.pbtxt')).catch(() => undefined);
    if (config) await mkdir(join(outDir, name, DEMO_MODEL_VERSION), { recursive: true });
  }
  return results;
}

async function ensureModel(outDir: string, model: DemoModel): Promise<EnsuredModel> {
  const path = join(outDir, model.name, DEMO_MODEL_VERSION, 'model.onnx');
  const bytes = model.build();
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const existing = await readFile(path).catch(() => undefined);
  const written = !existing?.equals(bytes);
  if (written) {
    await mkdir(dirname(path), { recursive: true });
    const tmp = `${path}.${process.pid}.tmp`;
    await writeFile(tmp, bytes);
    await rename(tmp, path);
  }
  return { name: model.name, path, bytes: bytes.length, sha256, written };
}

function selectModels(only: readonly string[] | undefined): DemoModel[] {
  if (!only) return [...DEMO_MODELS];
  const unknown = only.filter((n) => !DEMO_MODELS.some((m) => m.name === n));
  if (unknown.length > 0) throw new Error(`unknown demo model(s): ${unknown.join(', ')}`);
  return DEMO_MODELS.filter((m) => only.includes(m.name));
}
