// Runs a piece of the TypeScript source in a child Node process (Node strips the types; a hook
// maps the source's `./x.js` imports to `./x.ts`), for tests of code that could block a thread:
// a pattern that backtracks for hours would hang the test process itself, while a child is simply
// stopped after a generous wait and the test fails with 'still running'.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

const HOOKS = `
import { registerHooks } from 'node:module';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
registerHooks({
  resolve(specifier, context, next) {
    if (specifier.startsWith('.') && specifier.endsWith('.js') && context.parentURL?.endsWith('.ts')) {
      const source = new URL(specifier.slice(0, -3) + '.ts', context.parentURL);
      if (existsSync(fileURLToPath(source))) return next(source.href, context);
    }
    return next(specifier, context);
  }
});`;

/** Node's arguments that run the TypeScript source as it is (types stripped, `.js` imports mapped). */
export function sourceNodeArgs(): string[] {
  const hooks = `data:text/javascript,${encodeURIComponent(HOOKS)}`;
  return ['--no-warnings', '--experimental-transform-types', '--import', hooks];
}

/** The absolute path of a source file, for an `import` in the child's script. */
export function sourcePath(path: string): string {
  return resolve(path);
}

/**
 * Runs `script` (an ES module; it may import source files by sourcePath) with `input` on its
 * stdin; answers what it wrote on stdout, or 'still running' when it had not ended after `waitMs`.
 * `nodeArgs` go to the child's node (`--max-old-space-size=256`, say).
 */
export function runSourceChild(
  script: string,
  input: string,
  waitMs: number,
  nodeArgs: string[] = []
): Promise<string> {
  const args = [...nodeArgs, ...sourceNodeArgs()];
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [...args, '--input-type=module', '-e', script], {
      stdio: ['pipe', 'pipe', 'inherit']
    });
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      done('still running');
    }, waitMs);
    child.stdout.on('data', chunk => (out += String(chunk)));
    child.on('error', fail);
    child.on('close', () => {
      clearTimeout(timer);
      done(out);
    });
    child.stdin.end(input);
  });
}
