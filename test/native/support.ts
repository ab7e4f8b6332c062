import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bridgeInfo, bridgeLibraryPath } from '@ge-mesh/ge-bridge';
import { encodeModel, GraphBuilder, makeModel } from '@ge-mesh/onnx';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const NATIVE_BUILD_DIR = process.env.GEMESH_NATIVE_BUILD_DIR ?? join(REPO_ROOT, 'native/build');

/**
 * Builds native/ when the bridge library is missing. Returns why the native
 * tests must be skipped (the build failed), or undefined when they can run.
 */
function ensureBridge(): string | undefined {
  if (existsSync(bridgeLibraryPath())) return undefined;
  const build = spawnSync('bash', [join(REPO_ROOT, 'native/scripts/build.sh')], { encoding: 'utf8' });
  if (build.status === 0 && existsSync(bridgeLibraryPath())) return undefined;
  const tail = `${build.stdout ?? ''}${build.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
  return `the native bridge could not be built (native/scripts/build.sh exited ${build.status}):\n${tail}`;
}

const buildProblem = ensureBridge();
if (buildProblem) console.error(`# SKIP native tests: ${buildProblem}`);

/** Skip reason for every native test, or undefined. */
export const skipNative: string | undefined = buildProblem;

/** Whether the bridge was linked against the CANN simulator (native/scripts/build.sh: "linked against: simulator"). */
export const onSimulator: boolean = !buildProblem && bridgeInfo().backend === 'cann-simulator';

/**
 * Skip reason for tests that need the CANN simulator: its own message texts,
 * env-configured HBM and exact accounting, timing mode, fp16/bf16 emulation.
 * On a real toolkit they skip; every other native test must hold there.
 */
export const skipUnlessSimulator: string | undefined =
  buildProblem ?? (onSimulator ? undefined : 'needs the CANN simulator build of the bridge');

/**
 * Message fragments only the simulator writes (GE's and the parser's texts on
 * a real toolkit differ): the fragments on the simulator, none elsewhere, so a
 * test still checks the status and the bridge's own words on a real toolkit.
 */
export function simulatorText(...fragments: string[]): string[] {
  return onSimulator ? fragments : [];
}

/**
 * Session options for exact fp32 math: without a precision key the bridge
 * passes GE's inference default (fp16), which the tests that compare with
 * fp32 references to a few ulps must not get.
 */
export const FP32: Readonly<Record<string, string>> = { 'ge.exec.precision_mode_v2': 'origin' };

/** A temp folder for generated models, removed by the returned cleanup. */
export function tempDir(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `gemesh-${prefix}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Writes an opset-17 model built by `build` and returns its path. */
export function writeModel(dir: string, name: string, build: (g: GraphBuilder) => void): string {
  const g = new GraphBuilder(name);
  build(g);
  const path = join(dir, `${name}.onnx`);
  writeFileSync(path, encodeModel(makeModel(g.build())));
  return path;
}

export function f32(bytes: ArrayBufferView): Float32Array {
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`lengths differ: ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] as number) - (b[i] as number)));
  return m;
}

export function maxAbs(a: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] as number));
  return m;
}
