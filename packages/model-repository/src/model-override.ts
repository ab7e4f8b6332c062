/**
 * A model as the load API's parameters give it (Triton's `config` and
 * `file:<version>/<name>`): staged as a model folder of its own on this host,
 * then loaded from there like any repository model. With files, the files
 * and the config are the whole model (the repository's folder is not used,
 * as in Triton); with a config alone, the repository's version folders are
 * served under the new config.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, normalize, resolve } from 'node:path';
import { ConfigError } from './config-error.js';
import type { RepositoryModel } from './model-config.js';
import { type LoadOptions, loadModel } from './repository.js';

export interface ModelOverride {
  /** A hash of the config and files: the staged folder's name, the same on every host. */
  readonly id: string;
  /** The config as protobuf text (configTextFromJson turns Triton's JSON into it). */
  readonly config: string;
  /** `<version>/<path>` → contents; empty for a config-only override. */
  readonly files: ReadonlyMap<string, Uint8Array>;
}

/** An override's id: sha256 over the config and every file, in path order. */
export function overrideId(config: string, files: ReadonlyMap<string, Uint8Array>): string {
  const h = createHash('sha256').update(config);
  for (const path of [...files.keys()].sort()) h.update(`\0${path}\0`).update(files.get(path) as Uint8Array);
  return h.digest('hex').slice(0, 32);
}

/** Throws ConfigError when a pushed file's path is not `<version>/<name>` inside the model folder. */
export function checkOverridePath(path: string): void {
  const clean = normalize(path);
  if (!/^[1-9]\d*\/./.test(path) || clean !== path || clean.split('/').includes('..')) {
    throw new ConfigError({
      kind: 'invalid',
      file: `file:${path}`,
      detail: `a pushed file is named file:<version>/<name> (e.g. file:1/model.onnx), with a numeric version and no '..'; found file:${path}`,
    });
  }
}

/**
 * Loads a model from its override: staged once per host under
 * `<stagingRoot>/<id>/<name>/` (written to a temporary folder and renamed,
 * so services sharing the host never see half a model), then read as a
 * repository model. Throws ConfigError or MeshError as loadModel does.
 */
export async function loadOverriddenModel(
  repositoryDir: string,
  name: string,
  override: ModelOverride,
  stagingRoot: string,
  options: LoadOptions = {},
): Promise<RepositoryModel> {
  const staged = join(stagingRoot, override.id);
  if (!(await exists(join(staged, name, 'config.pbtxt')))) {
    const tmp = `${staged}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    const dir = join(tmp, name);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'config.pbtxt'), override.config);
    if (override.files.size > 0) {
      for (const [path, bytes] of override.files) {
        checkOverridePath(path);
        await mkdir(dirname(join(dir, path)), { recursive: true });
        await writeFile(join(dir, path), bytes);
      }
    } else {
      // A config alone: the repository's folders and files, under the new config.
      const source = join(repositoryDir, name);
      const entries = await readdir(source).catch(() => undefined);
      if (!entries) {
        await rm(tmp, { recursive: true, force: true });
        throw new ConfigError({
          kind: 'io',
          file: source,
          detail: 'no such model in the repository to apply the config to; push its files too (file:<version>/<name>)',
        });
      }
      for (const e of entries) if (e !== 'config.pbtxt') await symlink(resolve(source, e), join(dir, e));
    }
    try {
      await rename(tmp, staged);
    } catch {
      // Another service of this host staged the same override first: its copy is the same.
      await rm(tmp, { recursive: true, force: true });
    }
  }
  return loadModel(staged, name, options);
}

async function exists(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined)) !== undefined;
}

/** Where a host stages the pushed models of a namespace (each service of the host shares it). */
export function overrideStagingDir(namespace: string): string {
  return join(tmpdir(), 'gemesh-overrides', namespace);
}

/** A model as a service loads it for a load request: from its override when it has one, else the repository. */
export async function loadModelOrOverride(
  repositoryDir: string,
  name: string,
  override: ModelOverride | undefined,
  namespace: string,
  options: LoadOptions = {},
): Promise<RepositoryModel> {
  return override
    ? loadOverriddenModel(repositoryDir, name, override, overrideStagingDir(namespace), options)
    : loadModel(repositoryDir, name, options);
}
