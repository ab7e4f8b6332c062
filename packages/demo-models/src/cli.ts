import { relative, resolve } from 'node:path';
import { exitWithUsageError, parseCommandLine } from '@ge-mesh/settings';
import { DEMO_MODELS } from './catalog.js';
import { DEMO_REPOSITORY_DIR, ensureDemoModels } from './ensure.js';
import { TEXT_ENCODER_GEARS, writeTextEncoderGears } from './gear-models.js';

const USAGE = `Usage: npm run models -- [options]   (or: node --import tsx packages/demo-models/src/cli.ts [options])

Writes the demo model repository (config.pbtxt + ONNX files), deterministically, with nothing downloaded;
files already up to date are left as they are.
Options:
  --out DIR          repository to write (default ${relative(process.cwd(), DEMO_REPOSITORY_DIR) || '.'})
  --only NAME,NAME   only these models (${DEMO_MODELS.map((m) => m.name).join(', ')})
  --npu-out DIR      also write the NPU demo repository there: ${TEXT_ENCODER_GEARS} (backend npu_ge, gears over
                     batch x length), served by workers started with --runtime ge
  -h, --help         this text`;

const values = parseCommandLine('models', USAGE, {
  help: { type: 'boolean', short: 'h' },
  out: { type: 'string', default: DEMO_REPOSITORY_DIR },
  only: { type: 'string' },
  'npu-out': { type: 'string' },
});

const outDir = resolve(values.out);
const only = values.only?.split(',').filter(Boolean);
const unknown = only?.filter((n) => !DEMO_MODELS.some((m) => m.name === n)) ?? [];
if (unknown.length > 0) exitWithUsageError('models', `no demo model named ${unknown.join(', ')}`);
for (const m of await ensureDemoModels(outDir, only ? { only } : {})) {
  const size = m.bytes >= 1e6 ? `${(m.bytes / 1e6).toFixed(1)} MB` : `${(m.bytes / 1e3).toFixed(1)} kB`;
  const state = m.written ? 'written' : 'unchanged';
  console.log(
    `${m.name.padEnd(13)} ${state.padEnd(9)} ${size.padStart(8)}  sha256 ${m.sha256.slice(0, 16)}  ${relative(process.cwd(), m.path)}`,
  );
}
if (values['npu-out']) {
  const path = await writeTextEncoderGears(resolve(values['npu-out']));
  console.log(`${TEXT_ENCODER_GEARS.padEnd(13)} written   (npu_ge, gears)  ${relative(process.cwd(), path)}`);
}
