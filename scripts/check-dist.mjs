// Fails when dist/ differs from a fresh build of src/ (content or executable bit): users run
// dist/, so it must be current.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const executable = file => (statSync(file).mode & 0o111) !== 0;
const fresh = mkdtempSync(join(tmpdir(), 'agent-run-dist-'));
try {
  execFileSync(process.execPath, ['scripts/build.mjs', fresh], { stdio: 'inherit' });
  const list = dir =>
    readdirSync(dir, { recursive: true })
      .map(String)
      .filter(file => statSync(join(dir, file)).isFile())
      .sort();
  const built = list(fresh);
  const committed = list('dist');
  const differ = [
    ...built.filter(file => !committed.includes(file)).map(file => `missing from dist/: ${file}`),
    ...committed.filter(file => !built.includes(file)).map(file => `stale file in dist/: ${file}`),
    ...built
      .filter(file => committed.includes(file))
      .filter(file => !readFileSync(join(fresh, file)).equals(readFileSync(join('dist', file))))
      .map(file => `differs from a fresh build: dist/${file}`),
    ...built
      .filter(file => committed.includes(file))
      .filter(file => executable(join(fresh, file)) !== executable(join('dist', file)))
      .map(file => `mode differs from a fresh build (bin entries are 755): dist/${file}`)
  ];
  if (differ.length > 0) {
    console.error(`dist/ is stale; run \`npm run build\` and commit dist/:\n  ${differ.join('\n  ')}`);
    process.exit(1);
  }
  console.log(`dist/ matches a fresh build (${built.length} files, ${relative('.', fresh) && 'checked'}).`);
} finally {
  rmSync(fresh, { recursive: true, force: true });
}
