// The changes of a copy-on-write workspace read from its layers (workspace/layer-changes.ts): the
// same files, the same diff and byte for byte the same patch as a walk of the whole work tree, for
// every kind of change a run can make; and a listing of the layers that says too much, or that
// the run's user cannot read, falls back to the walk.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfig } from '../../src/executor/config/config.js';
import { unmountAll } from '../../src/executor/workspace/layers.js';
import { MAX_LAYER_PATHS } from '../../src/executor/workspace/layer-changes.js';
import { type Workspace, createWorkspace } from '../../src/executor/workspace/workspace.js';
import { tempDir } from '../support/executor.js';

const owner = { uid: 4343, gid: 4343 };
let source: string;
const dataDirs: string[] = [];

function sourceRepo(): string {
  const dir = tempDir('layer-diff-source-');
  const write = (path: string, text: string | Buffer) => {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  write('README.md', 'hello\n');
  write('.gitignore', '*.log\nignored/\n');
  write('src/app/main.c', 'int main() { return 0; }\n');
  write('src/app/util.c', 'int util;\n');
  write('src/lib/a.txt', 'a\n');
  write('src/lib/b.txt', 'b\n');
  write('gone/one.txt', 'one\n');
  write('gone/deep/two.txt', 'two\n');
  write('becomes-dir', 'a file first\n');
  write('becomes-file/inner.txt', 'inner\n');
  write('tool.sh', '#!/bin/sh\necho tool\n');
  write('image.bin', Buffer.from([0, 1, 2, 3, 255, 254, 0, 7]));
  write('rename-me.txt', 'moved content\n');
  for (let i = 0; i < 40; i++) write(`flat/file-${i}.txt`, `${i}\n`);
  symlinkSync('README.md', join(dir, 'link'));
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
  git('init', '--quiet');
  git('add', '--all');
  // A file the start tracks although .gitignore names it: an edit of it is a change.
  write('kept.log', 'tracked all the same\n');
  git('add', '--force', 'kept.log');
  // Submodules (gitlinks; their folders are empty in a checkout): at the top and below a folder.
  git('update-index', '--add', '--cacheinfo', `160000,${'1'.repeat(40)},sub`);
  git('update-index', '--add', '--cacheinfo', `160000,${'2'.repeat(40)},src/sub2`);
  git('commit', '--quiet', '-m', 'start');
  return dir;
}

async function workspace(runId: string, dataDir?: string, setup = false): Promise<Workspace> {
  const environment = {
    id: 'layers',
    source,
    agent: { kind: 'simulated' },
    ...(setup ? { setup: ['true'], setup_cache: true } : {})
  };
  const config = parseConfig({ environments: [environment] }, dataDir ?? tempDir('layer-diff-data-'));
  if (!dataDirs.includes(config.dataDir)) dataDirs.push(config.dataDir);
  return createWorkspace(config.environments[0]!, config.dataDir, runId, undefined, owner, setup);
}

/** Runs a shell script in the workspace as the run's user (the files are theirs, as a run's are). */
function asRun(ws: Workspace, script: string): void {
  execFileSync(
    'setpriv',
    [`--reuid=${owner.uid}`, `--regid=${owner.gid}`, '--clear-groups', '/bin/sh', '-c', script],
    {
      cwd: ws.path,
      env: {
        PATH: process.env.PATH,
        HOME: '/nonexistent',
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CEILING_DIRECTORIES: join(ws.root, '..')
      }
    }
  );
}

/**
 * The diff from the layers, then the walk's over the same index: both must agree, byte for byte,
 * and so must the size of the changes and the tree a publish commits. The end leaves no file of
 * its own in the run's private git dir.
 */
async function bothWays(ws: Workspace) {
  const layered = await ws.diff();
  const layeredPatch = (await ws.patch(64 * 1024 * 1024)).bytes;
  const layeredBytes = await ws.changedBytes();
  const layeredTree = await ws.tree();
  expect(readdirSync(ws.git.gitDir).filter(name => name.startsWith('agent-run-'))).toEqual([]);
  const walked = await ws.diff('tree');
  const walkedPatch = (await ws.patch(64 * 1024 * 1024)).bytes;
  expect(await ws.changedBytes()).toBe(layeredBytes);
  expect(await ws.tree()).toBe(layeredTree);
  return { layered, layeredPatch, walked, walkedPatch };
}

const EVERY_CHANGE = [
  'echo edited >> README.md',
  'echo new > added.txt',
  'mkdir -p fresh/deep && echo deep > fresh/deep/f.txt',
  'rm src/lib/a.txt',
  // A directory removed and made again: what was in it is hidden without a whiteout each.
  'rm -rf gone && mkdir gone && echo again > gone/three.txt',
  'rm becomes-dir && mkdir becomes-dir && echo x > becomes-dir/x.txt',
  'rm -rf becomes-file && echo now-a-file > becomes-file',
  'mv rename-me.txt renamed.txt',
  'chmod +x src/app/util.c',
  'rm link && ln -s src/app/main.c link',
  'ln -s nowhere dangling',
  "printf '\\000\\001changed' > image.bin",
  'echo log > debug.log',
  'echo edited >> kept.log',
  'mkdir -p ignored && echo hidden > ignored/x.txt',
  // A nested repository the run made stays out, as it does on a walk.
  'mkdir -p vendor/lib/.git && echo ref: refs/heads/main > vendor/lib/.git/HEAD && echo v > vendor/lib/v.txt',
  // The agent's own repository at the top changes too, and is never part of the changes.
  'echo mine > .git/agent-note'
].join(' && ');

beforeAll(() => {
  source = sourceRepo();
});

afterAll(async () => {
  for (const data of dataDirs) await unmountAll(data);
});

describe('changes read from the layers of a copy-on-write workspace (root, as CI runs)', () => {
  it('names nothing when the run changed nothing, without walking the tree', async () => {
    const ws = await workspace('run-none');
    const result = await ws.diff();
    expect(result).toMatchObject({ files: [], diff: '', nested: [], walked: 'layers' });
    // A publish would commit the start's own tree (and so push nothing).
    expect(await ws.tree()).toBe(
      execFileSync('git', ['-C', source, 'rev-parse', 'HEAD^{tree}'], { encoding: 'utf8' }).trim()
    );
  }, 120_000);

  it('gives the files, diff and patch of a walk, byte for byte, for every kind of change', async () => {
    const ws = await workspace('run-every');
    asRun(ws, EVERY_CHANGE);
    const { layered, layeredPatch, walked, walkedPatch } = await bothWays(ws);
    expect(layered.walked).toBe('layers');
    expect(walked.walked).toBe('tree');
    expect(layered.files).toEqual([
      { path: 'README.md', change: 'modified' },
      { path: 'added.txt', change: 'added' },
      { path: 'becomes-dir', change: 'deleted' },
      { path: 'becomes-dir/x.txt', change: 'added' },
      { path: 'becomes-file', change: 'added' },
      { path: 'becomes-file/inner.txt', change: 'deleted' },
      { path: 'dangling', change: 'added' },
      { path: 'fresh/deep/f.txt', change: 'added' },
      { path: 'gone/deep/two.txt', change: 'deleted' },
      { path: 'gone/one.txt', change: 'deleted' },
      { path: 'gone/three.txt', change: 'added' },
      { path: 'image.bin', change: 'modified' },
      { path: 'kept.log', change: 'modified' },
      { path: 'link', change: 'modified' },
      { path: 'rename-me.txt', change: 'deleted' },
      { path: 'renamed.txt', change: 'added' },
      { path: 'src/app/util.c', change: 'modified' },
      { path: 'src/lib/a.txt', change: 'deleted' }
    ]);
    expect(layered.nested).toEqual(['vendor/lib']);
    expect(walked.files).toEqual(layered.files);
    expect(walked.diff).toBe(layered.diff);
    expect(walked.nested).toEqual(layered.nested);
    expect(layeredPatch.length).toBeGreaterThan(0);
    expect(layeredPatch.equals(walkedPatch)).toBe(true);
  }, 120_000);

  it("leaves files written in a submodule's folder out, as a walk does, and keeps the submodule in the tree", async () => {
    const ws = await workspace('run-submodule');
    asRun(
      ws,
      'mkdir -p sub/deep src/sub2 && echo in > sub/x.txt && echo deep > sub/deep/y.txt && ' +
        'echo in2 > src/sub2/z.txt && echo edited >> README.md'
    );
    const { layered, layeredPatch, walked, walkedPatch } = await bothWays(ws);
    expect(layered.walked).toBe('layers');
    expect(layered.files).toEqual([{ path: 'README.md', change: 'modified' }]);
    expect(walked.files).toEqual(layered.files);
    expect(layeredPatch.equals(walkedPatch)).toBe(true);
    // The tree a publish commits still records both submodules at their start commits.
    const listed = execFileSync('git', ['--git-dir', ws.git.gitDir, 'ls-tree', '-r', await ws.tree()], {
      encoding: 'utf8'
    });
    expect(listed).toContain(`160000 commit ${'1'.repeat(40)}\tsub\n`);
    expect(listed).toContain(`160000 commit ${'2'.repeat(40)}\tsrc/sub2\n`);
    expect(listed).not.toContain('x.txt');
  }, 120_000);

  it('sees a later turn undo what an earlier turn did', async () => {
    const ws = await workspace('run-turns');
    asRun(ws, 'echo first > first.txt && echo edit >> README.md && rm -rf gone');
    expect((await ws.diff()).files.map(f => f.path)).toEqual([
      'README.md',
      'first.txt',
      'gone/deep/two.txt',
      'gone/one.txt'
    ]);
    // The next turn removes the file it added (no whiteout: it was never below), puts README.md
    // back as it was and brings a deleted directory back.
    asRun(ws, "rm first.txt && printf 'hello\\n' > README.md && mkdir -p gone && echo one > gone/one.txt");
    const { layered, layeredPatch, walked, walkedPatch } = await bothWays(ws);
    expect(layered.walked).toBe('layers');
    expect(layered.files).toEqual([{ path: 'gone/deep/two.txt', change: 'deleted' }]);
    expect(walked.files).toEqual(layered.files);
    expect(layeredPatch.equals(walkedPatch)).toBe(true);
  }, 120_000);

  it('reads the kept setup layer under the run the same way', async () => {
    const dir = tempDir('layer-diff-data-');
    // The first run builds the setup layer: what its setup writes is kept, under later runs.
    const builder = await workspace('run-setup-build', dir, true);
    expect(builder.setupLayer?.cached).toBe(false);
    asRun(
      builder,
      [
        'echo by-setup > setup-made.txt && echo setup-edit >> src/lib/b.txt && rm src/app/main.c',
        'mkdir -p cache && echo c > cache/c.txt && echo c > setup.log',
        // A directory the checkout has not, with a repository of its own inside.
        'mkdir -p deps/x/.git && echo ref: refs/heads/main > deps/x/.git/HEAD && echo x > deps/x/x.txt',
        'for i in $(seq 1 30); do echo $i > deps/d-$i.txt; done',
        // A directory of the checkout removed and made again by the setup.
        'rm -rf gone && mkdir gone && echo s > gone/s.txt'
      ].join(' && ')
    );
    expect(await builder.setupLayer!.finish(true)).toBe(true);
    const ws = await workspace('run-setup-use', dir, true);
    expect(ws.setupLayer?.cached).toBe(true);
    // The run changes files of both layers below it, and deletes one the setup made.
    asRun(ws, 'rm setup-made.txt && echo run-edit >> cache/c.txt && rm -rf src/lib && echo mine > mine.txt');
    const { layered, layeredPatch, walked, walkedPatch } = await bothWays(ws);
    expect(layered.walked).toBe('layers');
    expect(layered.nested).toEqual(['deps/x']);
    expect(layered.files.filter(f => f.path.startsWith('deps/'))).toHaveLength(30);
    expect(layered.files.filter(f => !f.path.startsWith('deps/'))).toEqual([
      { path: 'cache/c.txt', change: 'added' },
      { path: 'gone/deep/two.txt', change: 'deleted' },
      { path: 'gone/one.txt', change: 'deleted' },
      { path: 'gone/s.txt', change: 'added' },
      { path: 'mine.txt', change: 'added' },
      { path: 'src/app/main.c', change: 'deleted' },
      { path: 'src/lib/a.txt', change: 'deleted' },
      { path: 'src/lib/b.txt', change: 'deleted' }
    ]);
    expect(walked.files).toEqual(layered.files);
    expect(walked.nested).toEqual(layered.nested);
    expect(layeredPatch.equals(walkedPatch)).toBe(true);
  }, 120_000);

  it('follows no link the run made: a directory swapped for a link to the host is a link, nothing more', async () => {
    const ws = await workspace('run-links');
    // The run swaps a directory of the checkout for a link to /etc and adds links to host paths.
    asRun(
      ws,
      'rm -rf src/lib && ln -s /etc src/lib && ln -s /root escape && mkdir -p d && ln -s /etc/shadow d/s'
    );
    const { layered, layeredPatch, walked, walkedPatch } = await bothWays(ws);
    // git refuses a path below the link the layers name: the tree is walked instead.
    expect(layered.walked).toBe('tree');
    expect(layered.files).toEqual([
      { path: 'd/s', change: 'added' },
      { path: 'escape', change: 'added' },
      { path: 'src/lib', change: 'added' },
      { path: 'src/lib/a.txt', change: 'deleted' },
      { path: 'src/lib/b.txt', change: 'deleted' }
    ]);
    expect(layered.diff).not.toMatch(/root:/);
    expect(walked.files).toEqual(layered.files);
    expect(layeredPatch.equals(walkedPatch)).toBe(true);
  }, 120_000);

  it('walks the tree when the layers name more paths than it matches one by one', async () => {
    const ws = await workspace('run-many');
    asRun(ws, `for i in $(seq 1 ${MAX_LAYER_PATHS + 1}); do echo $i > flat/many-$i.txt; done`);
    const result = await ws.diff();
    expect(result.walked).toBe('tree');
    expect(result.files).toHaveLength(MAX_LAYER_PATHS + 1 > 1000 ? 1000 : MAX_LAYER_PATHS + 1);
    expect(result.more_files).toBe(MAX_LAYER_PATHS + 1 - 1000);
  }, 120_000);

  it('reads a directory made only by the run through that directory, whatever it holds', async () => {
    const ws = await workspace('run-fresh');
    // More files than MAX_LAYER_PATHS, all below one new directory: one path for git to look at.
    asRun(
      ws,
      `mkdir -p build/out && for i in $(seq 1 ${MAX_LAYER_PATHS + 1}); do echo $i > build/out/$i.o; done`
    );
    const { layered, layeredPatch, walked, walkedPatch } = await bothWays(ws);
    expect(layered.walked).toBe('layers');
    expect(layered.more_files).toBe(MAX_LAYER_PATHS + 1 - 1000);
    expect(walked.files).toEqual(layered.files);
    expect(layeredPatch.equals(walkedPatch)).toBe(true);
  }, 120_000);

  it('cuts the diff of a large change where the walk cuts it', async () => {
    const ws = await workspace('run-large');
    // 2 MB of new lines: more than the diff event shows (1 MB), less than the patch may hold.
    asRun(ws, 'seq 1 300000 > numbers.txt && echo edited >> README.md');
    const { layered, layeredPatch, walked, walkedPatch } = await bothWays(ws);
    expect(layered.walked).toBe('layers');
    expect(layered.truncated).toBe(true);
    expect(layered.diff).toMatch(/\n\[diff cut at 1048576 bytes\]\n$/);
    expect(walked.diff).toBe(layered.diff);
    expect(layeredPatch.length).toBeGreaterThan(2 * 1024 * 1024);
    expect(layeredPatch.equals(walkedPatch)).toBe(true);
  }, 120_000);

  it('falls back to the walk when the run made a directory of its layer unreadable', async () => {
    const ws = await workspace('run-locked');
    asRun(ws, 'echo more >> src/lib/b.txt && chmod 000 src/lib');
    const result = await ws.diff();
    expect(result.walked).toBe('tree');
    // What the walk makes of it, as before: git cannot look into the directory.
    expect(result).toEqual({ ...(await ws.diff('tree')), walked: 'tree' });
  }, 120_000);
});
