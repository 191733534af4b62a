// Environments from container images (`image:`), on a real executor that is root here (real
// bubblewrap, real skopeo and umoci). The images are built in the test, offline, with umoci: a
// static busybox, a marker /etc/os-release, and what an attacker would put in one (a setuid-root
// copy of the shell, a device node, links out of the image's root, a layer that unpacks to far more
// than it weighs). A run writes what it saw into a folder the sandbox may write (sandbox.write).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { FastifyBaseLogger } from 'fastify';
import {
  chmodSync,
  cpSync,
  existsSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync
} from 'node:fs';
import { join } from 'node:path';
import {
  IMAGE_USER,
  collectImageLayout,
  forgetResolvedImages,
  holdImage,
  prepareImage,
  sweepImages
} from '../../src/executor/images/cache.js';
import { freeSpaceForRuns } from '../../src/executor/worker/maintenance.js';
import { parseConfig } from '../../src/executor/config/config.js';
import { FALLBACK_ID, systemUser } from '../../src/executor/sandbox/user.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

// skopeo, umoci (and busybox-static for these images) are installed when missing, as bubblewrap is.
execFileSync(process.execPath, ['scripts/system-packages.mjs', '--tests'], { stdio: 'inherit' });

const work = tempDir('images-test-');
const layout = join(work, 'layout');
const seen = join(work, 'seen');
mkdirSync(seen);
chmodSync(seen, 0o777); // the run's host user writes what it saw here

const umoci = (...args: string[]) => execFileSync('umoci', args, { encoding: 'utf8' });

/** Builds `tag` in the test's layout: busybox as /bin/sh and friends, os-release ID=`id`, and `extra`. */
function buildImage(tag: string, id: string, extra: (root: string) => void = () => undefined): void {
  if (!existsSync(layout)) umoci('init', '--layout', layout);
  umoci('new', '--image', `${layout}:${tag}`);
  const root = join(work, `root-${tag}`);
  rmSync(root, { recursive: true, force: true });
  for (const dir of ['bin', 'etc', 'home/someone']) mkdirSync(join(root, dir), { recursive: true });
  cpSync('/bin/busybox', join(root, 'bin', 'busybox'));
  for (const name of [
    'sh',
    'cat',
    'id',
    'ls',
    'test',
    'echo',
    'stat',
    'mkdir',
    'rm',
    'mv',
    'cp',
    'printf',
    'true',
    'sed',
    'head',
    'wc',
    'dd',
    'tr',
    'touch',
    'ln',
    'chmod',
    'readlink',
    'sleep',
    'dirname',
    'basename'
  ])
    symlinkSync('busybox', join(root, 'bin', name));
  writeFileSync(join(root, 'etc', 'os-release'), `ID=${id}\n`);
  writeFileSync(join(root, 'home', 'someone', 'marker'), 'from the image\n');
  extra(root);
  umoci('insert', '--image', `${layout}:${tag}`, root, '/');
  umoci(
    'config',
    '--image',
    `${layout}:${tag}`,
    '--config.env',
    'PATH=/bin',
    '--config.env',
    `IMAGE_MARK=${id}`
  );
  rmSync(root, { recursive: true, force: true });
  // skopeo copies as agent-run-image: an image on disk must be readable by that user (umoci writes 0600).
  execFileSync('chmod', ['-R', 'a+rX', layout]);
}

/** The attacker's additions: setuid-root shell, a device node, links out of the root, a shadow file. */
function hostile(root: string): void {
  // busybox picks its applet by the name it is run as: this one is `id`, setuid (and owned by root here).
  mkdirSync(join(root, 'opt', 'suid'), { recursive: true });
  cpSync('/bin/busybox', join(root, 'opt', 'suid', 'id'));
  chmodSync(join(root, 'opt', 'suid', 'id'), 0o4755);
  execFileSync('mknod', [join(root, 'etc', 'evil-null'), 'c', '1', '3']);
  execFileSync('mknod', [join(root, 'etc', 'evil-disk'), 'b', '8', '0']);
  symlinkSync('/etc/shadow', join(root, 'escape'));
  symlinkSync('../../../../etc', join(root, 'up'));
  writeFileSync(join(root, 'etc', 'shadow'), 'image-shadow\n', { mode: 0o644 });
}

// What a run reports: one `key=value` line per fact, into seen/<name>.
const REPORT = (name: string) =>
  [
    `out=${seen}/${name}`,
    'echo "os=$(cat /etc/os-release)" > $out',
    'echo "python=$(test -e /usr/bin/python3 && echo yes || echo no)" >> $out',
    'echo "node=$(test -e /usr/bin/node -o -e /usr/local/bin/node && echo yes || echo no)" >> $out',
    'echo "uid=$(id -u)" >> $out',
    'echo "euid=$(/opt/suid/id -u)" >> $out',
    'echo "egid=$(/opt/suid/id -g)" >> $out',
    'echo "nullchar=$(test -c /etc/evil-null && echo yes || echo no)" >> $out',
    'echo "diskblock=$(test -b /etc/evil-disk && echo yes || echo no)" >> $out',
    'echo "escape=$(cat /escape 2>&1)" >> $out',
    'echo "up=$(cat /up/os-release 2>&1)" >> $out',
    'echo "marker=$(cat /home/someone/marker)" >> $out',
    'echo "home=$(echo hi > $HOME/x && cat $HOME/x)" >> $out',
    'echo "mark=$IMAGE_MARK" >> $out',
    'echo "rootw=$(touch /newfile 2>/dev/null && echo yes || echo no)" >> $out',
    'echo "workspace=$(echo w > ./from-image && cat ./from-image)" >> $out'
  ].join('; ');

function report(name: string): Record<string, string> {
  const lines = readFileSync(join(seen, name), 'utf8').split('\n').filter(Boolean);
  return Object.fromEntries(
    lines.map(line => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)])
  );
}

const source = tempDir('images-source-');
writeFileSync(join(source, 'README.md'), 'hello\n');

function environment(id: string, tag: string, extra: Record<string, unknown> = {}) {
  return {
    id,
    source,
    image: `oci:${layout}:${tag}`,
    sandbox: { write: [seen] },
    agent: { kind: 'simulated' },
    ...extra
  };
}

describe('environments from container images (tests run as root, as CI runs them)', () => {
  let ex: TestExecutor;
  let key: string;
  beforeAll(async () => {
    buildImage('v1', 'imagetest-v1', hostile);
    buildImage('moving', 'moving-one');
    ex = await startTestExecutor({
      workers: 2,
      environments: [
        environment('first', 'v1'),
        environment('second', 'v1', {
          agent: { kind: 'command', command: ['sh', '-c', 'cat > /dev/null; ' + REPORT('second')] }
        }),
        environment('always', 'moving', { image_pull: 'always' }),
        environment('missing', 'moving'),
        environment('setup', 'v1', { setup: ['cat /etc/os-release > from-setup'], setup_cache: true }),
        { id: 'host', source, agent: { kind: 'simulated' } }
      ]
    });
    key = (await ex.key()).raw;
  });
  afterAll(async () => {
    await ex?.stop(1000);
    rmSync(work, { recursive: true, force: true });
    rmSync(source, { recursive: true, force: true });
  });

  async function run(env: string, prompt: string, mode?: 'plan'): Promise<Record<string, unknown>> {
    const response = await ex.request('/api/v1/agent/run', {
      method: 'POST',
      key,
      body: JSON.stringify({ prompt, config: { environment_id: env }, ...(mode ? { mode } : {}) })
    });
    expect(response.status).toBe(200);
    const id = ((await response.json()) as { run_id: string }).run_id;
    return waitForState({ on: ex, key, id });
  }

  const roots = () => readdirSync(join(ex.dataDir, 'images', 'roots'));
  /** The unpacked root of a tag of the test's layout. */
  const rootOf = (tag: string) =>
    join(
      ex.dataDir,
      'images',
      'roots',
      roots().find(
        name =>
          (
            JSON.parse(readFileSync(join(ex.dataDir, 'images', 'roots', name, 'ready'), 'utf8')) as {
              ref: string;
            }
          ).ref === `oci:${layout}:${tag}`
      )!
    );

  it("shows the image's file system as /, read-only, and none of the host's", async () => {
    expect(await run('first', `@sim run ${REPORT('first')}`)).toMatchObject({ state: 'SUCCEEDED' });
    const seenByRun = report('first');
    expect(seenByRun.os).toBe('ID=imagetest-v1');
    expect(readFileSync('/etc/os-release', 'utf8')).not.toContain('imagetest');
    // The host has these; the image does not.
    expect(
      existsSync('/usr/bin/python3') || existsSync('/usr/bin/node') || existsSync(process.execPath)
    ).toBe(true);
    expect(seenByRun.python).toBe('no');
    expect(seenByRun.node).toBe('no');
    expect(seenByRun.mark).toBe('imagetest-v1');
    expect(seenByRun.marker).toBe('from the image');
    expect(seenByRun.home).toBe('hi');
    expect(seenByRun.rootw).toBe('no');
    expect(seenByRun.workspace).toBe('w');
    // The run's own host user, not root.
    expect(seenByRun.uid).toBe(String(execFileSync('id', ['-u', 'agent-run'], { encoding: 'utf8' }).trim()));
  });

  it('gives the run none of the setuid file, the device nodes or the links out of the image', async () => {
    const seenByRun = report('first');
    const runUid = seenByRun.uid!;
    expect(runUid).not.toBe('0');
    // The setuid-root shell runs as the run's user: no one's ids change.
    expect(seenByRun.euid).toBe(runUid);
    expect(seenByRun.egid).not.toBe('0');
    expect(seenByRun.nullchar).toBe('no');
    expect(seenByRun.diskblock).toBe('no');
    // Links resolve inside the image: its own /etc/shadow and /etc, never the host's.
    expect(seenByRun.escape).toBe('image-shadow');
    expect(seenByRun.up).toBe('ID=imagetest-v1');
    // On the host the unpacked files belong to the unpacking user: no file of root's, no device, no setuid-root.
    const rootfs = join(rootOf('v1'), 'u', 'bundle', 'rootfs');
    const suid = statSync(join(rootfs, 'opt', 'suid', 'id'));
    expect(suid.uid).not.toBe(0);
    expect(suid.uid).not.toBe(Number(runUid));
    for (const name of ['evil-null', 'evil-disk'])
      expect(
        existsSync(join(rootfs, 'etc', name)) ? statSync(join(rootfs, 'etc', name)).isFile() : true
      ).toBe(true);
  });

  it('unpacks once per digest: a second run and a second environment start from the cache', async () => {
    const made = statSync(join(rootOf('v1'), 'ready')).ino;
    expect(await run('second', 'go')).toMatchObject({ state: 'SUCCEEDED' });
    expect(report('second').os).toBe('ID=imagetest-v1');
    expect(await run('first', '@sim run cat /etc/os-release')).toMatchObject({ state: 'SUCCEEDED' });
    // v1 and moving: two images, each unpacked once (at start-up), the ready file never made again.
    expect(roots()).toHaveLength(2);
    expect(statSync(join(rootOf('v1'), 'ready')).ino).toBe(made);
    // The cache answers without unpacking.
    const again = await prepareImage(ex.dataDir, { ref: `oci:${layout}:v1`, pull: 'missing' }, 1024 ** 3);
    expect(again).toMatchObject({ unpacked: false, copied: false });
  });

  it('picks up a moved tag with image_pull: always; `missing` keeps what the cache holds', async () => {
    expect(await run('always', `@sim run cat /etc/os-release > ${seen}/always-1`)).toMatchObject({
      state: 'SUCCEEDED'
    });
    expect(readFileSync(join(seen, 'always-1'), 'utf8')).toBe('ID=moving-one\n');
    buildImage('moving', 'moving-two');
    expect(await run('always', `@sim run cat /etc/os-release > ${seen}/always-2`)).toMatchObject({
      state: 'SUCCEEDED'
    });
    expect(readFileSync(join(seen, 'always-2'), 'utf8')).toBe('ID=moving-two\n');
    // The tag moves again: `missing` does not copy it (the cache holds the reference since the last copy).
    buildImage('moving', 'moving-three');
    expect(await run('missing', `@sim run cat /etc/os-release > ${seen}/missing`)).toMatchObject({
      state: 'SUCCEEDED'
    });
    expect(readFileSync(join(seen, 'missing'), 'utf8')).toBe('ID=moving-two\n');
  });

  it('runs setup commands in the image, keeps their result with setup_cache, and a plan turn reads only', async () => {
    const sawSetup = `@sim run test "$(cat from-setup)" = ID=imagetest-v1`;
    expect(await run('setup', sawSetup)).toMatchObject({ state: 'SUCCEEDED' });
    // The second run of the commit starts from the kept setup layer: the file is there all the same.
    expect(await run('setup', sawSetup)).toMatchObject({ state: 'SUCCEEDED' });
    // A plan turn's agent reads the workspace in the image and cannot write it.
    const plan = `@sim run cat from-setup > ${seen}/plan-read; touch planned 2> /dev/null && echo wrote > ${seen}/plan-wrote; true`;
    expect(await run('setup', plan, 'plan')).toMatchObject({ state: 'SUCCEEDED' });
    expect(readFileSync(join(seen, 'plan-read'), 'utf8')).toBe('ID=imagetest-v1\n');
    expect(existsSync(join(seen, 'plan-wrote'))).toBe(false);
  });

  it('lists docker_image for image environments, null for the host root', async () => {
    const response = await ex.request('/api/v1/agent/environments', { key });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { environments: { id: string; docker_image: string | null }[] };
    const byId = Object.fromEntries(body.environments.map(env => [env.id, env.docker_image]));
    expect(byId.first).toBe(`oci:${layout}:v1`);
    expect(byId.host).toBeNull();
  });
});

describe('image cache, start-up refusals and bounds', () => {
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('unpacks once when two first runs ask for the same image at once', async () => {
    buildImage('pair', 'pair');
    const dataDir = join(tempDir('images-pair-'), 'data');
    const ref = { ref: `oci:${layout}:pair`, pull: 'missing' as const };
    forgetResolvedImages();
    const both = await Promise.all([
      prepareImage(dataDir, ref, 1024 ** 3),
      prepareImage(dataDir, ref, 1024 ** 3)
    ]);
    expect(both.filter(image => image.unpacked)).toHaveLength(1);
    expect(both[0]!.rootfs).toBe(both[1]!.rootfs);
    expect(readdirSync(join(dataDir, 'images', 'roots'))).toHaveLength(1);
    rmSync(join(dataDir, '..'), { recursive: true, force: true });
  });

  it('removes unused unpacked images past cache_size, least recently used first, never a held one', async () => {
    buildImage('old', 'old');
    buildImage('new', 'new');
    const dataDir = join(tempDir('images-sweep-'), 'data');
    const old = await prepareImage(dataDir, { ref: `oci:${layout}:old`, pull: 'missing' }, 1024 ** 3);
    const held = await prepareImage(dataDir, { ref: `oci:${layout}:new`, pull: 'missing' }, 1024 ** 3);
    const release = holdImage(held.dir);
    // Room for one: the unused one goes, the held one stays even past the size.
    expect(sweepImages(dataDir, 1).map(image => image.digest)).toEqual([old.digest]);
    expect(existsSync(old.rootfs)).toBe(false);
    expect(existsSync(held.rootfs)).toBe(true);
    release();
    expect(sweepImages(dataDir, 1).map(image => image.digest)).toEqual([held.digest]);
    // Asked for again, it is unpacked again from the layout (no copy).
    const back = await prepareImage(dataDir, { ref: `oci:${layout}:old`, pull: 'missing' }, 1024 ** 3);
    expect(back).toMatchObject({ unpacked: true, copied: false, digest: old.digest });
    rmSync(join(dataDir, '..'), { recursive: true, force: true });
  });

  it('checks image and image_pull in the config, naming the value and the form expected', () => {
    const env = (extra: Record<string, unknown>) => ({ environments: [{ id: 'e', source: '.', ...extra }] });
    expect(() => parseConfig(env({ image: 'python:3.12' }), work)).toThrow(
      /environments\[0\]\.image "python:3\.12": expected a skopeo image reference such as oci:/
    );
    expect(() => parseConfig(env({ image: 'docker://debian:12', image_pull: 'sometimes' }), work)).toThrow(
      /environments\[0\]\.image_pull "sometimes": expected one of missing, always/
    );
    expect(() => parseConfig(env({ image: 'docker://debian:12', sandbox: 'off' }), work)).toThrow(
      /environments\[0\]\.image "docker:\/\/debian:12": an image is the root of the run's sandbox/
    );
    expect(() => parseConfig(env({ image: 'docker-daemon:debian:12' }), work)).toThrow(
      /environments\[0\]\.image "docker-daemon:debian:12": images are copied by an unprivileged user that does not reach the host's Docker daemon; expected the image saved first \(`skopeo copy docker-daemon:NAME:TAG oci:\/srv\/images\/NAME:TAG`\)/
    );
    expect(() => parseConfig(env({ image: 'containers-storage:debian:12' }), work)).toThrow(
      /"containers-storage:debian:12": .*does not reach the host's container storage/
    );
    const parsed = parseConfig(env({ image: 'oci:images/py:3', image_pull: 'always' }), work);
    expect(parsed.environments[0]!.image).toEqual({ ref: `oci:${work}/images/py:3`, pull: 'always' });
  });

  it('refuses a layer that unpacks past the bound before writing anything', async () => {
    // 64 MiB of zeros: a layer of a few hundred KiB.
    buildImage('bomb', 'bomb', root => writeFileSync(join(root, 'zeros'), Buffer.alloc(64 * 1024 ** 2)));
    const dataDir = join(tempDir('images-bomb-'), 'data');
    await expect(
      prepareImage(dataDir, { ref: `oci:${layout}:bomb`, pull: 'missing' }, 16 * 1024 ** 2)
    ).rejects.toThrow(/unpack to more than 16777216 bytes \(workspaces.cache_size\)/);
    expect(
      existsSync(join(dataDir, 'images', 'roots')) ? readdirSync(join(dataDir, 'images', 'roots')) : []
    ).toEqual([]);
    rmSync(join(dataDir, '..'), { recursive: true, force: true });
  });

  it('refuses a sparse file (a few KB of tar claiming 600 MB) before writing anything', async () => {
    buildImage('sparse', 'sparse');
    const dir = join(work, 'sparse-layer');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'big.bin'), '');
    truncateSync(join(dir, 'big.bin'), 600 * 1024 ** 2);
    execFileSync('tar', [
      '--sparse',
      '--format=posix',
      '-cf',
      join(work, 'sparse.tar'),
      '-C',
      dir,
      'big.bin'
    ]);
    umoci('raw', 'add-layer', '--image', `${layout}:sparse`, join(work, 'sparse.tar'));
    execFileSync('chmod', ['-R', 'a+rX', layout]);
    const dataDir = join(tempDir('images-sparse-'), 'data');
    await expect(
      prepareImage(dataDir, { ref: `oci:${layout}:sparse`, pull: 'missing' }, 16 * 1024 ** 2)
    ).rejects.toThrow(/its layers hold a sparse file \(GNU\.sparse PAX records\); refused/);
    expect(
      existsSync(join(dataDir, 'images', 'roots')) ? readdirSync(join(dataDir, 'images', 'roots')) : []
    ).toEqual([]);
    rmSync(join(dataDir, '..'), { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
    rmSync(join(work, 'sparse.tar'), { force: true });
  });

  it('refuses an image with a folder its owner cannot read: its bytes would hide from the cache accounting', async () => {
    buildImage('hidden', 'hidden', root => {
      mkdirSync(join(root, 'vault'));
      writeFileSync(join(root, 'vault', 'blob'), Buffer.alloc(1024 * 1024, 1));
      chmodSync(join(root, 'vault'), 0o000);
    });
    const dataDir = join(tempDir('images-hidden-'), 'data');
    await expect(
      prepareImage(dataDir, { ref: `oci:${layout}:hidden`, pull: 'missing' }, 64 * 1024 ** 2)
    ).rejects.toThrow(/its unpacked root could not be measured/);
    expect(
      existsSync(join(dataDir, 'images', 'roots')) ? readdirSync(join(dataDir, 'images', 'roots')) : []
    ).toEqual([]);
    rmSync(join(dataDir, '..'), { recursive: true, force: true });
  });

  it('refuses at start-up an environment whose command the image lacks, naming image and command', async () => {
    buildImage('bare', 'bare');
    await expect(
      startTestExecutor({
        environments: [
          environment('lacking', 'bare', { agent: { kind: 'command', command: ['claude', '-p'] } })
        ]
      })
    ).rejects.toThrow(
      new RegExp(
        `environment "lacking": image oci:${layout}:bare: its command "claude" is not an executable file of the image`
      )
    );
  });

  it('refuses at start-up an image that is not there, naming it', async () => {
    await expect(startTestExecutor({ environments: [environment('gone', 'no-such-tag')] })).rejects.toThrow(
      new RegExp(`environment "gone": image oci:${layout}:no-such-tag: skopeo could not copy it`)
    );
  });
});

describe("the image cache's leftovers: the copy's user and bounds, collection, inodes, other processes' builds", () => {
  beforeAll(() => {
    mkdirSync(work, { recursive: true });
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  // The user the image cache copies as, made as the executor makes it when the machine lacks it (a
  // fresh machine where no executor has run yet).
  const { uid: imageUid, gid: imageGid } = systemUser(IMAGE_USER, FALLBACK_ID + 1);
  const ref = (tag: string) => ({ ref: `oci:${layout}:${tag}`, pull: 'missing' as const });
  const rootsOf = (dataDir: string) =>
    existsSync(join(dataDir, 'images', 'roots')) ? readdirSync(join(dataDir, 'images', 'roots')) : [];
  const blobsOf = (dataDir: string) => {
    const dir = join(dataDir, 'images', 'layout', 'blobs', 'sha256');
    return existsSync(dir) ? readdirSync(dir) : [];
  };
  /** Every path under `dir` (not following links), `dir` included. */
  const walk = (dir: string): string[] =>
    [dir].concat(lstatSync(dir).isDirectory() ? readdirSync(dir).flatMap(name => walk(join(dir, name))) : []);
  /** The digests of the blobs (manifest, config, layers) of `tag` in the test's layout. */
  const blobsOfTag = (tag: string): string[] => {
    const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as {
      manifests: { digest: string; annotations?: Record<string, string> }[];
    };
    const digest = index.manifests.find(
      m => m.annotations?.['org.opencontainers.image.ref.name'] === tag
    )!.digest;
    const blob = (d: string) =>
      readFileSync(join(layout, 'blobs', 'sha256', d.slice('sha256:'.length)), 'utf8');
    const manifest = JSON.parse(blob(digest)) as { config: { digest: string }; layers: { digest: string }[] };
    return [digest, manifest.config.digest, ...manifest.layers.map(layer => layer.digest)].map(d =>
      d.slice('sha256:'.length)
    );
  };

  it('copies as agent-run-image, not root, and refuses an image whose layers declare more than the bound before fetching them', async () => {
    // 20 MiB that do not compress: the layer weighs past the 16 MiB bound as it is, before any unpack.
    buildImage('heavy', 'heavy', root => writeFileSync(join(root, 'noise'), randomBytes(20 * 1024 ** 2)));
    const dataDir = join(tempDir('images-heavy-'), 'data');
    await expect(prepareImage(dataDir, ref('heavy'), 16 * 1024 ** 2)).rejects.toThrow(
      /its layers weigh \d+ bytes as its manifest declares them, more than 16777216 bytes \(workspaces\.cache_size\)/
    );
    // Not one blob of it was fetched, nothing was unpacked.
    expect(blobsOf(dataDir)).toEqual([]);
    expect(rootsOf(dataDir)).toEqual([]);
    // A small image is copied as the image user: no file or folder of the layout is root's.
    buildImage('light', 'light');
    await prepareImage(dataDir, ref('light'), 16 * 1024 ** 2);
    const files = walk(join(dataDir, 'images', 'layout'));
    expect(blobsOf(dataDir).length).toBeGreaterThanOrEqual(3);
    expect(files.filter(file => lstatSync(file).uid !== imageUid)).toEqual([]);
    rmSync(join(dataDir, '..'), { recursive: true, force: true });
  });

  it("replaces a layout an older executor wrote as root with one of the image user's", async () => {
    buildImage('legacy', 'legacy');
    const dataDir = join(tempDir('images-legacy-'), 'data');
    const old = join(dataDir, 'images', 'layout');
    mkdirSync(join(old, 'blobs', 'sha256'), { recursive: true });
    writeFileSync(join(old, 'index.json'), '{"schemaVersion":2,"manifests":[]}');
    writeFileSync(join(old, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}');
    expect(lstatSync(old).uid).toBe(0);
    await prepareImage(dataDir, ref('legacy'), 64 * 1024 ** 2);
    expect(walk(old).filter(file => lstatSync(file).uid !== imageUid)).toEqual([]);
    rmSync(join(dataDir, '..'), { recursive: true, force: true });
  });

  it('bounds each blob the copy writes, for a source whose manifest understates its layers', async () => {
    buildImage('liar', 'liar', root => writeFileSync(join(root, 'noise'), randomBytes(20 * 1024 ** 2)));
    // The manifest says its layers weigh 1000 bytes each: the declared sizes pass the bound.
    const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as {
      manifests: { digest: string; size: number; annotations?: Record<string, string> }[];
    };
    const entry = index.manifests.find(m => m.annotations?.['org.opencontainers.image.ref.name'] === 'liar')!;
    const blob = (hex: string) => join(layout, 'blobs', 'sha256', hex);
    const manifest = JSON.parse(readFileSync(blob(entry.digest.slice('sha256:'.length)), 'utf8')) as {
      layers: { size: number }[];
    };
    for (const layer of manifest.layers) layer.size = 1000;
    const lying = Buffer.from(JSON.stringify(manifest));
    const hex = createHash('sha256').update(lying).digest('hex');
    writeFileSync(blob(hex), lying, { mode: 0o644 });
    entry.digest = `sha256:${hex}`;
    entry.size = lying.length;
    writeFileSync(join(layout, 'index.json'), JSON.stringify(index), { mode: 0o644 });
    const dataDir = join(tempDir('images-liar-'), 'data');
    await expect(prepareImage(dataDir, ref('liar'), 16 * 1024 ** 2)).rejects.toThrow(
      /skopeo could not copy it: a blob of it is larger than 16777216 bytes \(workspaces\.cache_size\)/
    );
    // No file of the layout past the bound (a blob or skopeo's temporary one), nothing unpacked.
    const layoutFiles = walk(join(dataDir, 'images', 'layout')).filter(file => lstatSync(file).isFile());
    expect(layoutFiles.filter(file => statSync(file).size > 16 * 1024 ** 2)).toEqual([]);
    expect(rootsOf(dataDir)).toEqual([]);
    rmSync(join(dataDir, '..'), { recursive: true, force: true });
  });

  it("refuses the host's container storage and Docker daemon, which the copy's user does not reach, saying what to do", async () => {
    const dataDir = join(tempDir('images-storage-'), 'data');
    for (const source of ['containers-storage:debian:12', 'docker-daemon:debian:12'])
      await expect(prepareImage(dataDir, { ref: source, pull: 'missing' }, 64 * 1024 ** 2)).rejects.toThrow(
        /skopeo copies as agent-run-image, in a sandbox that does not reach the host's container storage or Docker daemon; expected the image saved first \(`skopeo copy [a-z-]+:… oci:\/srv\/images\/NAME:TAG`\)/
      );
    expect(existsSync(join(dataDir, 'images', 'layout', 'index.json'))).toBe(false);
    rmSync(join(dataDir, '..'), { recursive: true, force: true });
  });

  it('never reads a file outside the layout through a link the image user planted in it', async () => {
    buildImage('planted', 'planted');
    const dataDir = join(tempDir('images-planted-'), 'data');
    const image = await prepareImage(dataDir, ref('planted'), 64 * 1024 ** 2);
    // A secret of root's, and the manifest's blob replaced by a link to it, made the image user's.
    const secret = join(dataDir, '..', 'secret');
    writeFileSync(secret, 'root only\n', { mode: 0o600 });
    const manifest = join(
      dataDir,
      'images',
      'layout',
      'blobs',
      'sha256',
      image.digest.slice('sha256:'.length)
    );
    rmSync(manifest);
    symlinkSync(secret, manifest);
    lchownSync(manifest, imageUid, imageGid);
    forgetResolvedImages();
    const hashOfSecret = createHash('sha256').update('root only\n').digest('hex');
    const message = await prepareImage(dataDir, ref('planted'), 64 * 1024 ** 2).then(
      () => 'prepared',
      (error: Error) => error.message
    );
    expect(message).toMatch(
      /the image cache's blobs\/sha256\/[0-9a-f]{64} is not a regular file of agent-run-image inside it; refused/
    );
    expect(message).not.toContain(hashOfSecret);
    rmSync(join(dataDir, '..'), { recursive: true, force: true });
  });

  it("collects the layout's blobs of an image the config no longer names, keeps the other's", async () => {
    buildImage('dropped', 'dropped', root => writeFileSync(join(root, 'only-here'), 'dropped\n'));
    buildImage('kept', 'kept', root => writeFileSync(join(root, 'only-here'), 'kept\n'));
    const dataDir = join(tempDir('images-collect-'), 'data');
    await prepareImage(dataDir, ref('dropped'), 64 * 1024 ** 2);
    await prepareImage(dataDir, ref('kept'), 64 * 1024 ** 2);
    const dropped = blobsOfTag('dropped');
    const kept = blobsOfTag('kept');
    // The layer of the shared busybox files differs per image (one layer each): the tag's own blobs.
    const droppedOnly = dropped.filter(blob => !kept.includes(blob));
    expect(droppedOnly.length).toBeGreaterThanOrEqual(2);
    expect(blobsOf(dataDir)).toEqual(expect.arrayContaining([...dropped, ...kept]));
    // Within a cache this large nothing goes; past it (1 byte), only what no environment names.
    expect(await collectImageLayout(dataDir, [ref('kept').ref], 1024 ** 3)).toEqual([]);
    expect(blobsOf(dataDir)).toEqual(expect.arrayContaining(dropped));
    const gone = await collectImageLayout(dataDir, [ref('kept').ref], 1);
    expect(gone).toEqual([`sha256:${dropped[0]}`]);
    const left = blobsOf(dataDir);
    expect(left).toEqual(expect.arrayContaining(kept));
    expect(left.filter(blob => droppedOnly.includes(blob))).toEqual([]);
    const index = readFileSync(join(dataDir, 'images', 'layout', 'index.json'), 'utf8');
    expect(index).not.toContain(dropped[0]);
    // The kept one still starts from the cache; the dropped one, asked for again, is copied again.
    expect(await prepareImage(dataDir, ref('kept'), 64 * 1024 ** 2)).toMatchObject({ copied: false });
    sweepImages(dataDir, 0);
    expect(await prepareImage(dataDir, ref('dropped'), 64 * 1024 ** 2)).toMatchObject({
      copied: true,
      unpacked: true
    });
    rmSync(join(dataDir, '..'), { recursive: true, force: true });
  });

  it('collects the manifest a moved tag left untagged, with the blobs only it referenced', async () => {
    buildImage('mover', 'mover-one', root => writeFileSync(join(root, 'only-here'), 'one\n'));
    const dataDir = join(tempDir('images-mover-'), 'data');
    const always = { ref: `oci:${layout}:mover`, pull: 'always' as const };
    const first = await prepareImage(dataDir, always, 64 * 1024 ** 2);
    const before = blobsOf(dataDir);
    buildImage('mover', 'mover-two', root => writeFileSync(join(root, 'only-here'), 'two\n'));
    const second = await prepareImage(dataDir, always, 64 * 1024 ** 2);
    expect(second.digest).not.toBe(first.digest);
    const indexPath = join(dataDir, 'images', 'layout', 'index.json');
    const manifests = () =>
      (JSON.parse(readFileSync(indexPath, 'utf8')) as { manifests: { digest: string }[] }).manifests.map(
        entry => entry.digest
      );
    // The copy left the first manifest in the index, named by no tag.
    expect(manifests()).toEqual(expect.arrayContaining([first.digest, second.digest]));
    // The environment still names the reference, and the cache has room: only the untagged one goes.
    expect(await collectImageLayout(dataDir, [always.ref], 1024 ** 3)).toEqual([]);
    expect(manifests()).toEqual([second.digest]);
    const left = blobsOf(dataDir);
    expect(left).not.toContain(first.digest.slice('sha256:'.length));
    expect(left).toContain(second.digest.slice('sha256:'.length));
    // The first manifest and what only it referenced (its own layer, its config) are gone.
    expect(before.filter(blob => !left.includes(blob)).length).toBeGreaterThanOrEqual(2);
    expect(await prepareImage(dataDir, { ...always, pull: 'missing' }, 64 * 1024 ** 2)).toMatchObject({
      digest: second.digest,
      copied: false
    });
    rmSync(join(dataDir, '..'), { recursive: true, force: true });
  });

  it('removes unused unpacked images when the data dir runs short of inodes, never a held one', async () => {
    buildImage('inodes-a', 'inodes-a');
    buildImage('inodes-b', 'inodes-b');
    const base = tempDir('images-inodes-');
    // A floor no file system meets: the node is short of inodes whatever it holds.
    const config = parseConfig(
      { data_dir: join(base, 'data'), workspaces: { min_free_inodes: 1_000_000_000 } },
      base
    );
    const unused = await prepareImage(config.dataDir, ref('inodes-a'), 64 * 1024 ** 2);
    const held = await prepareImage(config.dataDir, ref('inodes-b'), 64 * 1024 ** 2);
    const release = holdImage(held.dir);
    const lines: string[] = [];
    const log = {
      warn: (_: unknown, message: string) => lines.push(message),
      info: (_: unknown, message: string) => lines.push(message)
    } as unknown as FastifyBaseLogger;
    await freeSpaceForRuns(config, new Set(), log);
    expect(existsSync(unused.rootfs)).toBe(false);
    expect(existsSync(held.rootfs)).toBe(true);
    expect(lines).toEqual([
      expect.stringMatching(
        new RegExp(
          `^fewer free inodes than workspaces\\.min_free_inodes: removed 1 unused shared checkout\\(s\\), setup layer\\(s\\) and unpacked image\\(s\\): image ${unused.digest}; none left unused`
        )
      )
    ]);
    release();
    rmSync(base, { recursive: true, force: true });
  });

  it("leaves a live sibling process's half-made root alone, removes a dead one's", async () => {
    buildImage('sibling', 'sibling');
    const dataDir = join(tempDir('images-sibling-'), 'data');
    await prepareImage(dataDir, ref('sibling'), 64 * 1024 ** 2);
    // Another executor process sharing the data dir, making a root: its folder is named by its pid.
    const sibling = spawn(process.execPath, ['-e', 'process.stdin.resume()'], {
      stdio: ['pipe', 'ignore', 'ignore']
    });
    await once(sibling, 'spawn');
    const making = join(dataDir, 'images', 'roots', `${'ab'.repeat(32)}.making-${sibling.pid}`);
    mkdirSync(join(making, 'u'), { recursive: true });
    writeFileSync(join(making, 'u', 'half'), 'unpacking\n');
    sweepImages(dataDir, 1024 ** 3);
    expect(existsSync(join(making, 'u', 'half'))).toBe(true);
    // Once that process is gone, its folder is a leftover.
    sibling.stdin!.end();
    await once(sibling, 'exit');
    sweepImages(dataDir, 1024 ** 3);
    expect(existsSync(making)).toBe(false);
    expect(rootsOf(dataDir)).toHaveLength(1);
    rmSync(join(dataDir, '..'), { recursive: true, force: true });
  });
});
