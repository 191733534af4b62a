// Privilege separation, held against the code: root never reads, copies, measures or walks a tree
// a run can write (its workspace or layer, HOME, output folder); such steps go through the reader
// sandbox (src/executor/sandbox/run-files.ts) as the run's user. This test parses the executor's
// source, finds every call of a file-system or process function (node:fs, node:child_process and
// their promise forms), and holds them against the inventory below, where each file says why its
// calls never open a path inside a run's tree. A new call site fails the test until it is either
// routed through asRunUser or added here with its reason, for a reviewer to judge.

import { describe, expect, it } from '@jest/globals';
import { fileSystemCalls } from '../support/call-sites.js';

type Counts = Record<string, number>;

/** Every file of src/executor that calls node:fs or node:child_process, with why it may. */
const INVENTORY: Record<string, { calls: Counts; why: string }> = {
  // The primitive itself: the one spawn of a reader; existsSync of /etc's root-only files to hide.
  'src/executor/sandbox/run-files.ts': {
    calls: { existsSync: 1, spawn: 1 },
    why: 'the reader sandbox: bubblewrap binds root-made directories, then the program runs as the run user'
  },
  'src/executor/sandbox/spawn.ts': {
    calls: { spawn: 1 },
    why: "the one spawner of a run's own processes (in its sandbox)"
  },
  'src/executor/sandbox/bwrap.ts': {
    calls: { accessSync: 1, existsSync: 7, spawnSync: 1, statSync: 2 },
    why: 'host paths of the sandbox command line (system dirs, bwrap, the paths to hide), and the start-up check'
  },
  'src/executor/sandbox/index.ts': {
    calls: { accessSync: 1, existsSync: 2 },
    why: "finds the agent program on the run's PATH: an X_OK check, nothing read (it runs in the sandbox); an image run's sandbox.read/write paths (the operator's, never a run's tree) are bound only when they exist"
  },
  'src/executor/images/cache.ts': {
    calls: {
      chownSync: 2,
      closeSync: 2,
      createReadStream: 1,
      existsSync: 9,
      fstatSync: 1,
      lstatSync: 4,
      mkdirSync: 4,
      openSync: 1,
      readFileSync: 1,
      readSync: 1,
      readdirSync: 2,
      readlinkSync: 2,
      realpathSync: 1,
      renameSync: 1,
      rmSync: 9,
      statSync: 2,
      utimesSync: 1,
      writeFileSync: 1
    },
    why: "the image cache: the OCI layout is the image user's (skopeo and umoci write it as that user through asRunUser); root opens a file of it only with O_NOFOLLOW and O_NONBLOCK, then checks the descriptor (a regular file of the image user whose /proc/self/fd path lies inside the layout) before reading it; unpacked roots written once by the unpacking user (never a run's user) then by no one, shown read-only to runs; umoci, du and skopeo run as that user through asRunUser; the sandbox lists a root's folders without following a link; a sibling process's half-made root is left alone while its pid lives"
  },
  'src/executor/node/image-startup.ts': {
    calls: { chmodSync: 1, mkdtempSync: 1, rmSync: 1, spawnSync: 1 },
    why: "the start-up check of an image: an empty folder of its own stands for the workspace of a sandbox that runs the command's version"
  },
  'src/executor/sandbox/cgroup.ts': {
    calls: {
      existsSync: 1,
      mkdirSync: 4,
      readFileSync: 7,
      readdirSync: 2,
      readlinkSync: 1,
      rmdir: 1,
      rmdirSync: 1,
      statSync: 1,
      writeFileSync: 6
    },
    why: "the kernel's cgroup files of a run (/sys/fs/cgroup) and /proc/<pid>/fd of its processes (the kernel's links to their open files: the deleted ones' sizes), written by the kernel only"
  },
  'src/executor/sandbox/processes.ts': {
    calls: { mkdirSync: 1, readFileSync: 3, readdirSync: 2, rmSync: 2, statfsSync: 2 },
    why: "/proc and the executor's own records of process groups (root-only in the data dir); free space"
  },
  'src/executor/sandbox/proxy.ts': {
    calls: { chownSync: 1, mkdtempSync: 1, rmSync: 1, writeFileSync: 1 },
    why: "the proxy's socket folder, made by root for the run"
  },
  'src/executor/sandbox/user.ts': {
    calls: { existsSync: 2, 'promisify(execFile)': 1, readFileSync: 1, spawnSync: 2 },
    why: '/etc/passwd and getent/useradd; chown -R of a workspace root the executor has just made (giveTo)'
  },
  'src/executor/agents/command.ts': {
    calls: { accessSync: 1, statSync: 1 },
    why: "the configured agent program at start-up (the operator's path)"
  },
  'src/executor/agents/harness/input.ts': {
    calls: { closeSync: 2, openSync: 2, readSync: 1 },
    why: "the harness CLI's program on the executor's absolute PATH (its #! line)"
  },
  'src/executor/agents/harness/kind.ts': {
    calls: { accessSync: 1, statSync: 1 },
    why: "the harness CLI's program at start-up (the operator's path)"
  },
  'src/executor/config/config.ts': {
    calls: { existsSync: 1, readFileSync: 1 },
    why: "the executor's config file (the operator's)"
  },
  'src/executor/node/harness-startup.ts': {
    calls: { realpathSync: 2, spawnSync: 1, statSync: 1 },
    why: "the harness CLIs' versions at start-up, and the folders above the CLI and Node (the operator's install) the run user cannot enter"
  },
  'src/executor/node/serve.ts': {
    calls: { existsSync: 1, readFileSync: 1, rmSync: 1 },
    why: "the executor's own files in the data dir (no run writes there)"
  },
  'src/executor/sandbox/private-files.ts': {
    calls: {
      chmodSync: 3,
      closeSync: 2,
      fchmodSync: 2,
      mkdirSync: 1,
      openSync: 2,
      statSync: 1,
      writeSync: 1
    },
    why: "the data dir itself and the executor's own files in it, made private (0700, 0600)"
  },
  'src/executor/sandbox/config.ts': {
    calls: { existsSync: 1, readlinkSync: 1, realpathSync: 1 },
    why: "resolves the operator's sandbox.read/write paths at start-up (refused when they hold the data dir)"
  },
  'src/executor/node/startup.ts': {
    calls: { existsSync: 1, statSync: 1 },
    why: "the environments' sources at start-up"
  },
  'src/executor/store/sqlite/connection.ts': {
    calls: { closeSync: 1, mkdirSync: 1, openSync: 1, readSync: 1 },
    why: "the database's folder, and its own -shm file (the WAL-index header: the read caches' stamp), in the data dir no run sees"
  },
  'src/executor/worker/maintenance.ts': {
    calls: { statSync: 1 },
    why: 'stats each HOME folder of DATA_DIR/homes itself (its time) before removing it whole (removeLeftovers lists the names)'
  },
  'src/executor/worker/run-outputs.ts': {
    calls: { lchownSync: 1, mkdirSync: 1, realpathSync: 1 },
    why: "makes the run's empty output folder and gives it to the run user; its files are read by asRunUser"
  },
  'src/executor/worker/start-from.ts': {
    calls: { existsSync: 1, lchownSync: 1, mkdirSync: 1 },
    why: "whether the earlier run's HOME folder exists; makes an empty HOME again after a failed copy"
  },
  'src/executor/worker/run-temp.ts': {
    calls: { mkdirSync: 1, mkdtempSync: 1 },
    why: "makes an unconfined harness turn's TMPDIR (new, under the data dir's own tmp folder, which no run can write); its sweep goes through removeLeftovers"
  },
  'src/executor/worker/steps.ts': {
    calls: { existsSync: 1, lchownSync: 2, mkdirSync: 1, writeFileSync: 1 },
    why: "makes the run's HOME (empty) and the conversation file in the output folder it has just made"
  },
  'src/executor/workspace/copy.ts': {
    calls: {
      chmodSync: 1,
      copyFileSync: 1,
      existsSync: 5,
      lstatSync: 1,
      mkdirSync: 1,
      readdirSync: 1,
      readlinkSync: 1,
      symlinkSync: 1,
      writeFileSync: 1
    },
    why: "copies an environment's source (the operator's directory) into a new workspace, before the run; sets the mode of a folder it has just made (empty) whatever the umask"
  },
  'src/executor/workspace/git.ts': {
    calls: { 'promisify(execFile)': 2, spawn: 1, unlinkSync: 1, writeFileSync: 1 },
    why: 'git on sources and on the private git dir only (publishing: write-tree, commit-tree, push); git on a work tree goes through runTreeGit'
  },
  'src/executor/workspace/layers.ts': {
    calls: {
      chmodSync: 1,
      chownSync: 1,
      cpSync: 1,
      existsSync: 11,
      mkdirSync: 3,
      'promisify(execFile)': 2,
      readFileSync: 6,
      readdirSync: 3,
      rmSync: 5,
      statSync: 2,
      utimesSync: 1,
      writeFileSync: 4
    },
    why: "mount and unmount; the executor's records beside each layer (root-only folders); lists of layers and checkouts by name"
  },
  'src/executor/workspace/mounts.ts': {
    calls: { mkdirSync: 1, 'promisify(execFile)': 2, readFileSync: 1, rmSync: 2, spawnSync: 4 },
    why: '/proc/self/mountinfo, mount and umount'
  },
  'src/executor/workspace/private-git.ts': {
    calls: {
      copyFileSync: 2,
      cpSync: 1,
      existsSync: 2,
      lchownSync: 3,
      lstatSync: 1,
      mkdirSync: 1,
      readdirSync: 1,
      rmSync: 2
    },
    why: "writes the private git dir and the agent's .git before the run starts (nothing of the run exists yet)"
  },
  'src/executor/workspace/remove.ts': {
    calls: { execFileSync: 1, existsSync: 2, readdirSync: 1, rmSync: 1 },
    why: "removes a whole tree once no process of its run exists (rm -rf --one-file-system follows no link); lists the names in one of the executor's own folders (homes, tmp) to remove the leftovers among them, never reading inside one"
  },
  'src/executor/workspace/setup-layers.ts': {
    calls: {
      chmodSync: 1,
      chownSync: 1,
      existsSync: 2,
      mkdirSync: 3,
      'promisify(execFile)': 2,
      readFileSync: 1,
      renameSync: 2,
      rmSync: 3,
      statSync: 2,
      utimesSync: 1,
      writeFileSync: 2
    },
    why: "mount, unmount and rename of whole layers; the layer's record; its owner (stat of the folder itself); the listing goes through asRunUser"
  },
  'src/executor/workspace/shared-checkout.ts': {
    calls: {
      existsSync: 3,
      mkdirSync: 2,
      'promisify(execFile)': 1,
      readFileSync: 2,
      renameSync: 2,
      rmSync: 2,
      statSync: 1,
      writeFileSync: 2
    },
    why: 'the shared checkouts of a commit: made by git before any run, never writable by one (a lower layer)'
  },
  'src/executor/workspace/workspace.ts': {
    calls: {
      existsSync: 15,
      lchownSync: 1,
      lstatSync: 1,
      mkdirSync: 2,
      readFileSync: 2,
      readdirSync: 4,
      renameSync: 1,
      rmSync: 1,
      statSync: 2,
      utimesSync: 1,
      writeFileSync: 2
    },
    why: "the workspace's record (root-only gitdirs/); gives the private git dir it has just made to the run user; sweeps list folders by name; looks at the modes of a local source's object folders (the operator's repository, never a run's) and makes the data dir's readable mirror of it"
  }
};

const RUN_TREE_READS = [
  'readFileSync',
  'readdirSync',
  'opendirSync',
  'createReadStream',
  'cpSync',
  'fs.readFile',
  'fs.open',
  'fs.readdir',
  'fs.cp'
];

describe('root never reads a tree a run can write', () => {
  const found = fileSystemCalls(process.cwd(), 'src/executor');

  it('every file-system and process call of the executor is in the inventory, with its reason', () => {
    const unlisted: string[] = [];
    for (const [site, count] of found) {
      const [file, call] = site.split('#') as [string, string];
      const allowed = INVENTORY[file]?.calls[call] ?? 0;
      if (count > allowed) unlisted.push(`${site}: ${count} call(s), ${allowed} in the inventory`);
    }
    expect(unlisted).toEqual([]);
  });

  it('the inventory lists nothing that is gone (it stays the truth)', () => {
    const stale: string[] = [];
    for (const [file, { calls }] of Object.entries(INVENTORY))
      for (const [call, count] of Object.entries(calls))
        if ((found.get(`${file}#${call}`) ?? 0) !== count)
          stale.push(`${file}#${call}: ${found.get(`${file}#${call}`) ?? 0} found, ${count} listed`);
    expect(stale).toEqual([]);
  });

  it("the steps that handle a run's files read nothing themselves: they go through asRunUser", () => {
    for (const file of [
      'src/executor/worker/run-outputs.ts',
      'src/executor/worker/start-from.ts',
      'src/executor/worker/steps.ts',
      'src/executor/workspace/nested.ts'
    ])
      for (const call of RUN_TREE_READS) expect(found.get(`${file}#${call}`)).toBeUndefined();
  });
});
