import { relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DEMO_REPOSITORY_DIR, ensureDemoModels } from './ensure.js';

/** node --import tsx packages/demo-models/src/cli.ts [--out <repository dir>] [--only name,name] */
const { values } = parseArgs({
  options: {
    out: { type: 'string', default: DEMO_REPOSITORY_DIR },
    only: { type: 'string' },
  },
});

const outDir = resolve(values.out);
const only = values.only?.split(',').filter(Boolean);
for (const m of await ensureDemoModels(outDir, only ? { only } : {})) {
  const size = m.bytes >= 1e6 ? `${(m.bytes / 1e6).toFixed(1)} MB` : `${(m.bytes / 1e3).toFixed(1)} kB`;
  const state = m.written ? 'written' : 'unchanged';
  console.log(
    `${m.name.padEnd(13)} ${state.padEnd(9)} ${size.padStart(8)}  sha256 ${m.sha256.slice(0, 16)}  ${relative(process.cwd(), m.path)}`,
  );
}
