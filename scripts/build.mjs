// Bundles every entry point with ncc: `node scripts/build.mjs [outDir]` (default dist/).
// Builds into a temporary folder and replaces the output only when every bundle built.
// The package's bin entries (package.json "bin") get a `#!/usr/bin/env node` first line and mode
// 755, so `npx agent-executor` runs them with node and git records them executable.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const SHEBANG = '#!/usr/bin/env node\n';

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
    // --transpile-only: each file is transpiled on its own (src/tsconfig.json), not type-checked
    // once per bundle; `npm run typecheck` checks the types of the whole tree once.
    const args = [
      'build',
      entry,
      '-o',
      dir,
      '--license',
      'licenses.txt',
      '--target',
      'es2023',
      '-q',
      '--transpile-only'
    ];
    execFileSync(process.execPath, ['node_modules/@vercel/ncc/dist/ncc/cli.js', ...args], {
      stdio: 'inherit'
    });
  }
  const bins = Object.values(JSON.parse(readFileSync('package.json', 'utf8')).bin ?? {});
  for (const bin of bins) {
    const file = join(staging, relative('dist', bin));
    const code = readFileSync(file, 'utf8');
    if (!code.startsWith('#!')) writeFileSync(file, SHEBANG + code);
    chmodSync(file, 0o755);
  }
} catch {
  rmSync(staging, { recursive: true, force: true });
  console.error(`build failed; ${out} was left as it was`);
  process.exit(1);
}
if (existsSync(out)) rmSync(out, { recursive: true, force: true });
renameSync(staging, out);
