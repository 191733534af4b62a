// Bundles every entry point with ncc: `node scripts/build.mjs [outDir]` (default dist/).
// Builds into a temporary folder and replaces the output only when every bundle built.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const out = resolve(process.argv[2] ?? 'dist');
const staging = mkdtempSync(join(dirname(out), '.build-'));
const entries = [
  ['src/index.ts', staging],
  ['src/executor/index.ts', join(staging, 'executor')],
  ['src/executor-action/index.ts', join(staging, 'executor-action')],
  ['src/cli/index.ts', join(staging, 'cli')]
];

try {
  for (const [entry, dir] of entries) {
    const args = ['build', entry, '-o', dir, '--license', 'licenses.txt', '--target', 'es2023', '-q'];
    execFileSync(process.execPath, ['node_modules/@vercel/ncc/dist/ncc/cli.js', ...args], {
      stdio: 'inherit'
    });
  }
} catch {
  rmSync(staging, { recursive: true, force: true });
  console.error(`build failed; ${out} was left as it was`);
  process.exit(1);
}
if (existsSync(out)) rmSync(out, { recursive: true, force: true });
renameSync(staging, out);
