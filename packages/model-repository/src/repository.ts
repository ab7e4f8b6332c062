/**
 * Triton's model repository layout: `<repo>/<model>/config.pbtxt` (or
 * `configs/<name>.pbtxt` when chosen), and numeric version folders
 * `<repo>/<model>/<version>/<model file>`.
 */
import type { Dirent } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { MeshError, TRITON_MESSAGES } from '@ge-mesh/protocol';
import { ConfigError, located } from './config-error.js';
import { checkEnsembleSteps } from './ensemble-config.js';
import type { ModelVersion, Repository, RepositoryModel, VersionPolicy } from './model-config.js';
import {
  DEFAULT_MODEL_FILENAME,
  modelConfigFromMessage,
  namesGeBackend,
  versionPolicyOf,
} from './parse-model-config.js';
import { parseTextProto, type TextMessage } from './text-format/parser.js';
import { sourcePosition } from './text-format/positions.js';

export interface LoadOptions {
  /**
   * Triton's `--model-config-name`: read `<model>/configs/<name>.pbtxt` when
   * it exists, else `<model>/config.pbtxt`.
   */
  readonly modelConfigName?: string;
}

const CONFIG_FILE = 'config.pbtxt';
/** Version folders are positive numbers without a leading 0; other names are ignored, as Triton does. */
const VERSION_DIR = /^[1-9]\d*$/;

/**
 * Loads every model folder of a repository (folders whose names start with
 * '.' are skipped). A model that fails to load is reported in `errors` with
 * its ConfigError and does not keep the others from loading.
 */
export async function loadRepository(dir: string, options: LoadOptions = {}): Promise<Repository> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (e) {
    throw ioError(dir, e, 'cannot read the model repository folder');
  }
  const names: string[] = [];
  for (const e of entries) {
    if (e.name.startsWith('.')) continue;
    if (e.isDirectory() || (e.isSymbolicLink() && (await isDirectory(join(dir, e.name))))) names.push(e.name);
  }
  names.sort();
  const results = await Promise.all(
    names.map((name) =>
      loadModel(dir, name, options).then(
        (model) => ({ name, model }),
        (error: unknown) => {
          if (error instanceof ConfigError) return { name, error };
          throw error;
        },
      ),
    ),
  );
  const models = new Map<string, RepositoryModel>();
  const errors = new Map<string, ConfigError>();
  for (const r of results) {
    if ('model' in r) models.set(r.name, r.model);
    else errors.set(r.name, r.error);
  }
  // Ensembles last: their steps are checked against the models that loaded.
  for (const m of [...models.values()]) {
    if (!m.config.ensemble) continue;
    try {
      checkEnsembleSteps(m, (name) => models.get(name));
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      models.delete(m.name);
      errors.set(m.name, e);
    }
  }
  return Object.freeze({ dir, models, errors });
}

/** Same config and version files: loading the model again would change nothing. */
export function sameModel(a: RepositoryModel, b: RepositoryModel): boolean {
  return JSON.stringify([a.config.raw, a.versions]) === JSON.stringify([b.config.raw, b.versions]);
}

/**
 * Loads one model folder of a repository. Throws MeshError MODEL_NOT_FOUND
 * when there is no such folder, ConfigError when it cannot be loaded.
 */
export async function loadModel(dir: string, name: string, options: LoadOptions = {}): Promise<RepositoryModel> {
  const modelDir = join(dir, name);
  if (name === '' || name === '.' || name === '..' || /[/\\]/.test(name) || !(await isDirectory(modelDir))) {
    throw new MeshError('MODEL_NOT_FOUND', TRITON_MESSAGES.unknownModel(name));
  }
  const configFile = await chooseConfigFile(modelDir, options.modelConfigName);
  let text: string;
  try {
    text = await readFile(configFile, 'utf8');
  } catch (e) {
    throw ioError(configFile, e, `cannot read the model config; a model folder needs ${CONFIG_FILE}`);
  }
  const raw = parseTextProto(text, { file: configFile });
  const available = await versionFolders(modelDir);

  let config: RepositoryModel['config'];
  let served: string[];
  const versionWarnings: string[] = [];
  if (hasIO(raw) || raw.platform === 'ensemble') {
    // Check the whole config before looking at versions, so its errors come first.
    config = modelConfigFromMessage(raw, { file: configFile, modelName: name });
    served = selectVersions(
      available,
      config.versionPolicy as VersionPolicy,
      raw,
      configFile,
      modelDir,
      versionWarnings,
    );
  } else {
    // Missing inputs/outputs are read from the model file of the highest served version.
    served = selectVersions(available, versionPolicyOf(raw, configFile), raw, configFile, modelDir, versionWarnings);
    const filename = await modelFileName(modelDir, served[0] as string, raw);
    const modelFile = join(modelDir, served[0] as string, filename);
    let modelBytes: Uint8Array;
    try {
      modelBytes = await readFile(modelFile);
    } catch (e) {
      throw missingModelFile(modelFile, served[0] as string, filename, e);
    }
    config = modelConfigFromMessage(raw, { file: configFile, modelName: name, modelBytes, modelFile });
  }

  if (versionWarnings.length > 0) {
    config = Object.freeze({ ...config, warnings: Object.freeze([...(config.warnings ?? []), ...versionWarnings]) });
  }
  const versions: ModelVersion[] = [];
  for (const version of served) {
    // An ensemble's version folder holds no model file (Triton's layout: an empty `1/`).
    if (config.ensemble) {
      versions.push(Object.freeze({ version, modelPath: join(modelDir, version) }));
      continue;
    }
    const filename = await modelFileName(modelDir, version, raw);
    const modelPath = join(modelDir, version, filename);
    try {
      if (!(await stat(modelPath)).isFile()) throw Object.assign(new Error('not a file'), { code: 'EISDIR' });
    } catch (e) {
      throw missingModelFile(modelPath, version, filename, e);
    }
    versions.push(Object.freeze({ version, modelPath }));
  }
  const labels = await readLabels(modelDir, configFile, config);
  return Object.freeze({
    name,
    dir: modelDir,
    config,
    configFile,
    versions: Object.freeze(versions),
    ...(labels.size > 0 ? { labels } : {}),
  });
}

/**
 * Each output's `label_filename`, read at load as Triton reads it: a file in the model's folder,
 * one label per line (the class index is the line number); a missing one fails the load.
 */
async function readLabels(
  modelDir: string,
  configFile: string,
  config: RepositoryModel['config'],
): Promise<ReadonlyMap<string, readonly string[]>> {
  const labels = new Map<string, readonly string[]>();
  for (const output of config.output) {
    if (output.labelFilename === undefined) continue;
    const path = resolve(modelDir, output.labelFilename);
    if (!path.startsWith(resolve(modelDir) + sep)) {
      throw new ConfigError({
        kind: 'invalid',
        file: configFile,
        detail: `label file path '${output.labelFilename}' of output '${output.name}' is outside the model's folder`,
      });
    }
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (e) {
      throw ioError(path, e, `cannot read the labels of output '${output.name}' (label_filename)`);
    }
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    labels.set(output.name, Object.freeze(lines));
  }
  return labels;
}

/**
 * The version to serve for a request: the highest served one when none is
 * asked for, else the one asked for. Throws MeshError MODEL_VERSION_NOT_FOUND
 * with Triton's message when that version is not served.
 */
export function resolveVersion(model: RepositoryModel, requested?: string): ModelVersion {
  if (requested === undefined || requested === '') {
    const latest = model.versions[0];
    if (latest) return latest;
  } else {
    // "007" names version 7, as Triton reads versions as numbers.
    const wanted = /^\d+$/.test(requested) ? BigInt(requested).toString() : requested;
    const found = model.versions.find((v) => v.version === wanted);
    if (found) return found;
  }
  throw new MeshError('MODEL_VERSION_NOT_FOUND', TRITON_MESSAGES.unknownVersion(model.name, requested ?? ''));
}

async function chooseConfigFile(modelDir: string, configName: string | undefined): Promise<string> {
  if (configName) {
    const custom = join(modelDir, 'configs', `${configName}.pbtxt`);
    if (await isFile(custom)) return custom;
  }
  return join(modelDir, CONFIG_FILE);
}

/** Numeric version folder names, highest first. */
async function versionFolders(modelDir: string): Promise<string[]> {
  let entries: Dirent[];
  try {
    entries = await readdir(modelDir, { withFileTypes: true });
  } catch (e) {
    throw ioError(modelDir, e, 'cannot read the model folder');
  }
  const versions: string[] = [];
  for (const e of entries) {
    if (!VERSION_DIR.test(e.name)) continue;
    if (e.isDirectory() || (e.isSymbolicLink() && (await isDirectory(join(modelDir, e.name))))) versions.push(e.name);
  }
  // No leading zeros, so a longer name is a larger number.
  return versions.sort((a, b) => b.length - a.length || (a < b ? 1 : a > b ? -1 : 0));
}

function selectVersions(
  available: string[],
  policy: VersionPolicy,
  raw: TextMessage,
  configFile: string,
  modelDir: string,
  /** Where what loads anyway but deserves a line in the log goes. */
  warnings: string[],
): string[] {
  let served: string[];
  if (policy.kind === 'latest') served = available.slice(0, policy.numVersions);
  else if (policy.kind === 'all') served = available;
  else {
    const specific = (raw.version_policy as TextMessage).specific as TextMessage;
    const listed = (specific.versions as number[]).map(String);
    // As Triton: a listed version without its folder is reported and the others load.
    listed.forEach((v, i) => {
      if (!available.includes(v)) {
        const at = located(configFile, sourcePosition(specific, 'versions', i));
        warnings.push(
          `${at}: version_policy lists version ${v}, but there is no folder ${join(modelDir, v)}; it is not served`,
        );
      }
    });
    served = available.filter((v) => listed.includes(v));
  }
  if (served.length === 0) {
    throw new ConfigError({
      kind: 'io',
      file: modelDir,
      detail: `no version to serve: put the model in a numbered folder, e.g. ${join(modelDir, '1')}/ (folder names that are not numbers, or that start with 0, are ignored)`,
    });
  }
  return served;
}

/**
 * A version's model file: `default_model_filename`, else, for the GE backend, the first `*.onnx`
 * in the folder by name, as that backend finds it (its example ships `resnet18-v1-7.onnx`), else
 * Triton's `model.onnx`.
 */
async function modelFileName(modelDir: string, version: string, raw: TextMessage): Promise<string> {
  const named = raw.default_model_filename as string | undefined;
  if (named) return named;
  if (!namesGeBackend(raw)) return DEFAULT_MODEL_FILENAME;
  let names: string[];
  try {
    names = await readdir(join(modelDir, version));
  } catch {
    return DEFAULT_MODEL_FILENAME;
  }
  return names.filter((n) => n.endsWith('.onnx')).sort()[0] ?? DEFAULT_MODEL_FILENAME;
}

function hasIO(raw: TextMessage): boolean {
  return (
    ((raw.input as unknown[] | undefined)?.length ?? 0) > 0 && ((raw.output as unknown[] | undefined)?.length ?? 0) > 0
  );
}

function missingModelFile(path: string, version: string, filename: string, cause: unknown): ConfigError {
  const code = (cause as NodeJS.ErrnoException).code;
  if (code !== 'ENOENT' && code !== 'EISDIR') return ioError(path, cause, 'cannot read the model file');
  return new ConfigError({
    kind: 'io',
    file: path,
    detail: `model file not found: version ${version} needs ${filename}; put it there, or set default_model_filename to the file's name`,
  });
}

function ioError(path: string, cause: unknown, what: string): ConfigError {
  const code = (cause as NodeJS.ErrnoException).code;
  if (typeof code !== 'string') throw cause;
  return new ConfigError({ kind: 'io', file: path, detail: `${what} (${code})` });
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}
