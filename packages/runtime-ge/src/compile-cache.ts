import { mkdir } from 'node:fs/promises';

const CACHE_DIR = 'ge.graph_compiler_cache_dir';

/**
 * The worker's --ge-compile-cache folder as GE's compiled-graph cache, unless the model or the
 * global options name one. GE needs the folder to exist; the bridge keys each tier's entry by the
 * model's bytes, the tier's shapes and every option.
 */
export async function withCompileCache(
  session: Readonly<Record<string, string>>,
  global: Readonly<Record<string, string>>,
  dir: string | undefined,
): Promise<Readonly<Record<string, string>>> {
  const folder = session[CACHE_DIR] ?? global[CACHE_DIR] ?? dir;
  if (!folder) return session;
  await mkdir(folder, { recursive: true });
  return session[CACHE_DIR] !== undefined || global[CACHE_DIR] !== undefined
    ? session
    : { ...session, [CACHE_DIR]: folder };
}
