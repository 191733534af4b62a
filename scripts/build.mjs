// Bundles every entry point with ncc: `node scripts/build.mjs [outDir]` (default dist/).
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const out = process.argv[2] ?? 'dist';
const entries = [
  ['src/index.ts', out],
  ['src/executor/index.ts', join(out, 'executor')],
  ['src/executor-action/index.ts', join(out, 'executor-action')]
].filter(([entry]) => existsSync(entry));

rmSync(out, { recursive: true, force: true });
for (const [entry, dir] of entries) {
  const args = ['build', entry, '-o', dir, '--license', 'licenses.txt', '--target', 'es2023', '-q'];
  try {
    execFileSync(process.execPath, ['node_modules/@vercel/ncc/dist/ncc/cli.js', ...args], {
      stdio: 'inherit'
    });
  } catch {
    process.exit(1);
  }
}
