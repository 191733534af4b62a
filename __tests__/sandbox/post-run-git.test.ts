// What the executor does with git after a run's agent ended, attacked from the run: the agent
// rewires the `.git` of its workspace (a gitfile, a symbolic link, `commondir`), defines filter,
// textconv and diff drivers, hooks and fsmonitor programs (in its own config, in included files,
// in a nested repository) that would run on the host if the executor's git read them. Each
// payload writes a marker file on the host and prints every `POST_RUN_GIT_*` variable of every
// process it can read (the executor's secret and publish token): the marker must never appear,
// and neither secret may reach an artifact, an event, the run record, the log or a pushed branch.
// Each run still ends SUCCEEDED with an honest patch of its work tree against the start commit.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { TERMINAL_STATES } from '../../src/api/index.js';
import { waitForState } from '../support/wait.js';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { createRun, requireBubblewrap, transcript } from './support.js';

const SECRET = `executorSecret${process.pid}x${Math.random().toString(36).slice(2)}`;
const TOKEN = `ghp_postRunGit${Math.random().toString(36).slice(2)}Token`;

let ex: TestExecutor;
let key: string;
let markers: string;
let remote: string;
const logged: string[] = [];
let restoreStderr: () => void;

function git(dir: string, ...args: string[]): string {
  return execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    encoding: 'utf8'
  }).trim();
}

/** A repository with README.md on `main`. */
function repository(): string {
  const dir = tempDir('post-run-git-source-');
  git(dir, 'init', '--quiet', '--initial-branch=main');
  writeFileSync(join(dir, 'README.md'), 'original\n');
  git(dir, 'add', '--all');
  git(dir, 'commit', '--quiet', '-m', 'initial');
  return dir;
}

/** The agent: a shell script given as the prompt, run in the workspace inside the sandbox. */
const agent = { kind: 'command', command: ['/bin/sh', '-c', 'cat > /tmp/attack.sh && sh -e /tmp/attack.sh'] };

beforeAll(async () => {
  requireBubblewrap();
  markers = tempDir('post-run-git-markers-');
  const source = repository();
  remote = tempDir('post-run-git-remote-');
  git(remote, 'init', '--quiet', '--bare', '--initial-branch=main');
  git(source, 'push', '--quiet', remote, 'main');
  const published = tempDir('post-run-git-published-');
  execFileSync('git', ['clone', '--quiet', remote, published]);
  // A source whose tree has a submodule entry (a gitlink) at module/.
  const withModule = repository();
  git(
    withModule,
    'update-index',
    '--add',
    '--cacheinfo',
    `160000,${git(withModule, 'rev-parse', 'HEAD')},module`
  );
  git(withModule, 'commit', '--quiet', '-m', 'a submodule');
  git(withModule, 'remote', 'add', 'origin', remote);
  const copied = tempDir('post-run-git-copied-');
  writeFileSync(join(copied, 'README.md'), 'original\n');
  process.env.POST_RUN_GIT_SECRET = SECRET;
  process.env.POST_RUN_GIT_TOKEN = TOKEN;
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    logged.push(String(chunk));
    return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stderr.write;
  restoreStderr = () => (process.stderr.write = write);
  ex = await startTestExecutor({
    workers: 4,
    log_level: 'debug',
    environments: [
      { id: 'plain', source, agent },
      { id: 'copy', source: copied, agent },
      { id: 'submodule', source: withModule, agent },
      {
        id: 'publishing-submodule',
        source: withModule,
        agent,
        publish: { base: 'main', remote: 'origin' }
      },
      {
        id: 'publishing',
        source: published,
        agent,
        publish: { base: 'main', token_env: 'POST_RUN_GIT_TOKEN' }
      }
    ]
  });
  key = (await ex.key()).raw;
}, 120_000);

afterAll(async () => {
  await ex?.stop(1000);
  restoreStderr?.();
  delete process.env.POST_RUN_GIT_SECRET;
  delete process.env.POST_RUN_GIT_TOKEN;
});

/**
 * Shell that writes the payload program at `$1`: it leaves the marker `name` on the host (if it
 * ever runs there), prints the secrets of every process it can read, then `tail` (a filter passes
 * its input through, a textconv prints its file).
 */
function payload(name: string): string {
  return `payload() {
cat > "$1" <<'EOF'
#!/bin/sh
echo ran >> ${join(markers, name)}
for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < "$f"; done 2>/dev/null | grep -E '^POST_RUN_GIT_(SECRET|TOKEN)='
if [ "$PAYLOAD_TAIL" = filter ]; then cat; elif [ -f "$1" ]; then cat "$1"; fi
exit 0
EOF
chmod +x "$1"
}
`;
}

/** The agent's edit every attack also makes: the patch must show it. */
const EDIT = 'echo "changed by the agent" >> README.md\n';

/** `.git` replaced by a gitfile naming `.x`, a git dir the agent wrote; `config` added to it. */
function gitfile(config: string): string {
  return `mv .git .x
echo 'gitdir: .x' > .git
cat >> .x/config <<EOF
${config}
EOF
`;
}

const FILTER = `[filter "p"]\n\tclean = env PAYLOAD_TAIL=filter $PWD/.p.sh\n`;

/** A repository the agent makes in the current directory, with a dirty file, a filter and fsmonitor. */
const NESTED = `git init --quiet
payload "$PWD/.p.sh"
git config core.fsmonitor "$PWD/.p.sh"
git config diff.external "$PWD/.p.sh"
git config filter.p.clean "env PAYLOAD_TAIL=filter $PWD/.p.sh"
echo '* filter=p' > .gitattributes
echo one > file
git add file .gitattributes .p.sh
git -c user.name=a -c user.email=a@a commit --quiet -m nested
git config core.hooksPath "$PWD/hooks"
mkdir hooks && for hook in post-index-change pre-commit reference-transaction; do payload hooks/$hook; done
sleep 1
echo two > file
`;

const attacks: Record<string, string> = {
  'gitfile and clean filter': `${gitfile(FILTER)}payload .p.sh\necho '* filter=p' > .gitattributes\n`,
  'symlinked .git and clean filter': `mv .git .y
ln -s .y .git
cat >> .y/config <<EOF
${FILTER}
EOF
payload .p.sh
echo '* filter=p' > .gitattributes
`,
  'commondir naming a config the run wrote': `cp -a .git .z
echo ../.z > .git/commondir
cat >> .z/config <<EOF
${FILTER}
EOF
payload .p.sh
echo '* filter=p' > .gitattributes
`,
  'textconv, diff and external diff drivers': `${gitfile(
    `[diff "t"]\n\ttextconv = $PWD/.p.sh\n\tcommand = $PWD/.p.sh\n[diff]\n\texternal = $PWD/.p.sh\n`
  )}payload .p.sh
echo '* diff=t' > .gitattributes
`,
  'nested repository with core.fsmonitor and a filter': `mkdir nested
cd nested
${NESTED}cd ..
`,
  // The submodule checked out at the commit the source records (as `git submodule update` does).
  'nested repository where the source has a submodule': `mkdir -p module
cd module
git init --quiet
cp ../.git/objects/info/alternates .git/objects/info/alternates
git checkout --quiet "$(git -C .. rev-parse HEAD:module)"
payload "$PWD/.p.sh"
git config core.fsmonitor "$PWD/.p.sh"
git config filter.p.clean "env PAYLOAD_TAIL=filter $PWD/.p.sh"
echo '* filter=p' > .git/info/attributes
sleep 1
echo two >> README.md
cd ..
`,
  'hooks and core.hooksPath': `mkdir -p .git/hooks .h
for hook in post-index-change pre-commit commit-msg post-commit pre-push reference-transaction post-checkout; do
  payload .git/hooks/$hook
  payload .h/$hook
done
git config core.hooksPath "$PWD/.h"
`,
  'include.path and includeIf': `${gitfile(
    `[include]\n\tpath = included.cfg\n[includeIf "gitdir:/"]\n\tpath = $PWD/.x/conditional.cfg\n`
  )}payload .p.sh
printf '[core]\\n\\tfsmonitor = %s\\n' "$PWD/.p.sh" > .x/included.cfg
printf '[filter "p"]\\n\\tclean = env PAYLOAD_TAIL=filter %s\\n' "$PWD/.p.sh" > .x/conditional.cfg
echo '* filter=p' > .gitattributes
`
};

type Json = Record<string, unknown>;

/** Everything the run left where a user or an operator can read it, as one string. */
async function evidence(id: string): Promise<{ run: Json; patch: string; all: string }> {
  const run = (await (await ex.request(`/api/v1/agent/runs/${id}`, { key })).json()) as Json;
  const events = await transcript(ex, key, id);
  let patch = '';
  for (const event of events.filter(e => e.kind === 'artifact')) {
    const uid = event.artifact_uid as string;
    const details = (await (await ex.request(`/api/v1/agent/artifacts/${uid}`, { key })).json()) as Json;
    patch += await (await fetch(details.download_url as string)).text();
  }
  const branches = git(remote, 'for-each-ref', '--format=%(refname)', 'refs/heads/');
  const pushed = branches
    .split('\n')
    .filter(ref => ref.includes(id))
    .map(ref => git(remote, 'log', '-p', '--binary', '--format=%B', ref))
    .join('\n');
  return {
    run,
    patch,
    all: [JSON.stringify(run), JSON.stringify(events), patch, pushed, ...logged].join('\n')
  };
}

async function attack(environment: string, name: string, script: string): Promise<Json> {
  const marker = `${environment}-${name.replace(/\W+/g, '-')}`;
  const id = await createRun(ex, key, environment, `${payload(marker)}${script}${EDIT}`);
  const run = await waitForState({ on: ex, key, id }, TERMINAL_STATES, { timeoutMs: 120_000 });
  const { patch, all } = await evidence(id);
  expect(existsSync(join(markers, marker))).toBe(false);
  expect(readdirSync(markers)).toEqual([]);
  expect(all).not.toContain(SECRET);
  expect(all).not.toContain(TOKEN);
  expect({ state: run.state, status_message: run.status_message }).toEqual({ state: 'SUCCEEDED' });
  // The agent's edit, as the work tree has it, against the commit the run started at.
  expect(patch).toMatch(/^\+changed by the agent$/m);
  expect(patch).toContain('--- a/README.md');
  return { id, patch };
}

describe("the executor's git after a run never runs what the run wrote", () => {
  for (const [name, script] of Object.entries(attacks)) {
    const environment = name.includes('submodule') ? 'submodule' : 'plain';
    it(`in a plain run: ${name}`, async () => {
      await attack(environment, name, script);
    }, 180_000);
  }

  for (const name of [
    'gitfile and clean filter',
    'symlinked .git and clean filter',
    'commondir naming a config the run wrote',
    'nested repository with core.fsmonitor and a filter'
  ]) {
    it(`in a publishing run: ${name}`, async () => {
      const { id } = await attack('publishing', name, attacks[name]!);
      // The branch holds the agent's edit on top of main, made by the executor.
      expect(git(remote, 'show', `agent/${id}:README.md`)).toBe('original\nchanged by the agent');
      expect(git(remote, 'rev-parse', `agent/${id}^`)).toBe(git(remote, 'rev-parse', 'main'));
    }, 180_000);
  }

  it('in a publishing run: nested repository where the source has a submodule', async () => {
    const name = 'nested repository where the source has a submodule';
    await attack('publishing-submodule', name, attacks[name]!);
  }, 180_000);

  it('in a run whose source is a copy: gitfile and clean filter', async () => {
    await attack('copy', 'gitfile and clean filter', attacks['gitfile and clean filter']!);
  }, 180_000);
});

describe('an agent using git in its workspace', () => {
  it('starts clean, commits, rewrites its history, and still gets the patch of its work tree', async () => {
    const script = `test -z "$(git status --porcelain)" || { git status; exit 3; }
echo "changed by the agent" >> README.md
echo new > added.txt
git add --all
git -c user.name=a -c user.email=a@a commit --quiet -m first
rm -rf .git
git init --quiet
git add --all
git -c user.name=a -c user.email=a@a commit --quiet -m rewritten
`;
    const id = await createRun(ex, key, 'publishing', script);
    const run = await waitForState({ on: ex, key, id }, TERMINAL_STATES, { timeoutMs: 120_000 });
    expect({ state: run.state, status_message: run.status_message }).toEqual({ state: 'SUCCEEDED' });
    const { patch } = await evidence(id);
    expect(patch).toMatch(/^\+changed by the agent$/m);
    expect(patch).toContain('+++ b/added.txt');
    expect(patch).not.toContain('deleted file mode');
    expect(git(remote, 'diff', '--name-status', 'main', `agent/${id}`).split('\n').sort()).toEqual([
      'A\tadded.txt',
      'M\tREADME.md'
    ]);
  }, 180_000);

  it('ends FAILED workspace_tampered, with no patch and no branch, when git refuses its work tree', async () => {
    const id = await createRun(ex, key, 'publishing', `mkdir .GIT\necho x > .GIT/config\n${EDIT}`);
    const run = await waitForState({ on: ex, key, id }, TERMINAL_STATES, { timeoutMs: 120_000 });
    expect(run).toMatchObject({ state: 'FAILED', error_code: 'workspace_tampered' });
    expect(run.status_message).toContain('.GIT/config');
    const events = await transcript(ex, key, id);
    expect(events.filter(event => event.kind === 'artifact' || event.kind === 'publish')).toEqual([]);
    expect(git(remote, 'for-each-ref', `refs/heads/agent/${id}`)).toBe('');
  }, 180_000);
});

describe('private git dirs', () => {
  it('live outside the workspace, hidden from the run, and go with their workspace', async () => {
    const gitDirs = join(ex.dataDir, 'gitdirs');
    const id = await createRun(ex, key, 'plain', `ls -a ${gitDirs} || echo "exit=$?"\n${EDIT}`);
    await waitForState({ on: ex, key, id }, ['SUCCEEDED'], { timeoutMs: 120_000 });
    const output = (await transcript(ex, key, id))
      .filter(event => event.kind === 'output')
      .map(event => String(event.text))
      .join('');
    expect(output).not.toContain(`${id}.git`);
    expect(existsSync(join(gitDirs, `${id}.git`, 'HEAD'))).toBe(true);
    // A private git dir left without its workspace (a crash between the two) is swept too.
    mkdirSync(join(gitDirs, 'orphan.git'));
    const { sweepWorkspaces } = await import('../../src/executor/workspace/workspace.js');
    await sweepWorkspaces(ex.dataDir, [], 0, new Set());
    expect(existsSync(join(ex.dataDir, 'workspaces', id))).toBe(false);
    expect(existsSync(join(gitDirs, `${id}.git`))).toBe(false);
    expect(existsSync(join(gitDirs, 'orphan.git'))).toBe(false);
  }, 180_000);
});
