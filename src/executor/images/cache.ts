// Container images as the root of runs (an environment's `image`), kept in the data dir:
//   DATA_DIR/images/layout/        one OCI image layout, where skopeo copies every image (its blobs
//                                  shared between images), each under a tag named after its reference
//   DATA_DIR/images/roots/<digest> one unpacked root per manifest digest: u/bundle/rootfs, and a
//                                  `ready` file (digest, bytes, the config's Env) written last
// An image is third-party input. Its manifest and config are read only after their sha256 matched
// the digest that names them, and each layer's blob is hashed and its unpacked size counted (bounded)
// before anything is unpacked. umoci unpacks it `--rootless` as the system user `agent-run-image`
// (no run is that user) inside a reader sandbox (sandbox/run-files.ts): an unprivileged process makes
// no device node, no file of root's, no setuid file of anyone who matters, and a link of the image
// is never followed on the host (umoci resolves paths inside the root it unpacks to). Unpacked once
// per digest, under a temporary name renamed at the end (one build at a time per digest in this
// process; a second process that lost the rename uses the winner's); shared read-only by every run
// of every environment naming it; unused roots go, least recently used first, while they weigh more
// than workspaces.cache_size (sweepImages).

import { createHash } from 'node:crypto';
import {
  chownSync,
  closeSync,
  constants,
  createReadStream,
  existsSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync
} from 'node:fs';
import { join } from 'node:path';
import { Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as zlib from 'node:zlib';
import type { ImageConfig } from '../config/config.js';
import type { ImageEntry, ImageRoot } from '../sandbox/image-root.js';
import { makingLeftOver } from '../sandbox/processes.js';
import { asRunUser, readerReason } from '../sandbox/run-files.js';
import { FALLBACK_ID, type RunUser, systemProgram, systemUser } from '../sandbox/user.js';
import { TarEntries } from './tar-entries.js';

/** The system user that unpacks images (a root executor); no run is ever this user. */
export const IMAGE_USER = 'agent-run-image';
/** The largest manifest or config blob read. */
const MAX_JSON_BYTES = 4 * 1024 * 1024;
/** Entries of one directory of an image the sandbox lists (on the way to a mount point). */
const MAX_DIR_ENTRIES = 10_000;
/** How long a copy or an unpack may take. */
const STEP_TIMEOUT_MS = 15 * 60_000;
/**
 * Entries (files, folders, links) an image's layers may hold in all: each costs an inode the byte
 * bound does not see. A large toolchain image holds a few hundred thousand.
 */
export const MAX_IMAGE_ENTRIES = 1_000_000;

export class ImageError extends Error {}

export interface PreparedImage {
  ref: string;
  /** The manifest's digest, sha256:… */
  digest: string;
  /** DATA_DIR/images/roots/<hex> */
  dir: string;
  rootfs: string;
  env: Record<string, string>;
  /** Bytes the unpacked root weighs. */
  bytes: number;
  /** Whether this call unpacked it (else it came from the cache), and how long that took. */
  unpacked: boolean;
  unpackMs?: number;
  /** Whether this call ran skopeo. */
  copied: boolean;
}

interface Ready {
  digest: string;
  ref: string;
  bytes: number;
  env: Record<string, string>;
}

export const imagesDir = (dataDir: string) => join(dataDir, 'images');
const layoutDir = (dataDir: string) => join(dataDir, 'images', 'layout');
const rootsDir = (dataDir: string) => join(dataDir, 'images', 'roots');
const rootfsOf = (dir: string) => join(dir, 'u', 'bundle', 'rootfs');

/** Roots held by a run (or being made) in this process: never collected. */
const held = new Map<string, number>();
/** Roots being made, by directory. */
const building = new Map<string, Promise<unknown>>();
/** `missing` references already resolved in this process: data dir + ref → digest. */
const resolved = new Map<string, string>();
/** One copy or unpack at a time per data dir (the layout's index is one file). */
const queues = new Map<string, Promise<unknown>>();

function exclusive<T>(dataDir: string, step: () => Promise<T>): Promise<T> {
  const before = queues.get(dataDir) ?? Promise.resolve();
  const mine = before.then(step, step);
  queues.set(
    dataDir,
    mine.catch(() => undefined)
  );
  return mine;
}

/** Holds the root `dir` against collection until the returned function is called (once). */
export function holdImage(dir: string): () => void {
  held.set(dir, (held.get(dir) ?? 0) + 1);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    const left = (held.get(dir) ?? 1) - 1;
    if (left > 0) held.set(dir, left);
    else held.delete(dir);
  };
}

/** Forgets which references were resolved, as a restarted process would (for tests). */
export function forgetResolvedImages(): void {
  resolved.clear();
}

let unpacker: RunUser | undefined;
/** Who unpacks: `agent-run-image` when the executor is root; else the executor's own user. */
function imageUser(): RunUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  unpacker ??= systemUser(IMAGE_USER, FALLBACK_ID + 1);
  return unpacker;
}

function readReady(dir: string): Ready | undefined {
  try {
    const ready = JSON.parse(readFileSync(join(dir, 'ready'), 'utf8')) as Ready;
    return typeof ready.digest === 'string' && typeof ready.bytes === 'number' ? ready : undefined;
  } catch {
    return undefined;
  }
}

/** The tag an image reference is copied under in the layout. */
function tagOf(ref: string): string {
  return `ref-${createHash('sha256').update(ref).digest('hex').slice(0, 32)}`;
}

/** The digest the layout's index gives `tag`, or undefined. */
function taggedDigest(dataDir: string, tag: string): string | undefined {
  return layoutTags(dataDir).get(tag);
}

/** The layout's tags and the digests its index gives them (empty when it has no index). */
function layoutTags(dataDir: string): Map<string, string> {
  const tags = new Map<string, string>();
  try {
    const index = JSON.parse(readLayoutFile(dataDir, 'index.json', MAX_JSON_BYTES).toString('utf8')) as {
      manifests?: { digest?: unknown; annotations?: Record<string, unknown> }[];
    };
    for (const entry of Array.isArray(index.manifests) ? index.manifests : []) {
      const tag = entry?.annotations?.['org.opencontainers.image.ref.name'];
      if (typeof tag === 'string' && typeof entry.digest === 'string') tags.set(tag, entry.digest);
    }
  } catch {
    // no index yet, or one the image user spoiled: nothing tagged
  }
  return tags;
}

/**
 * Opens a file of the layout for reading. The layout is the image user's (skopeo and umoci write
 * it as that user), so nothing in it is trusted as a path: the last name is opened without
 * following a link and without waiting on a FIFO, and the file opened must be a regular file of
 * the image user's whose real path lies inside the layout (a link planted on a folder of the way,
 * or a hard link to a file of root's, is refused). Answers the descriptor.
 */
function openLayoutFile(dataDir: string, rel: string): number {
  const base = realpathSync(layoutDir(dataDir));
  const refused = new ImageError(
    `the image cache's ${rel.replace(CONTROL, '?')} is not a regular file of ${IMAGE_USER} inside it; refused`
  );
  let fd: number;
  try {
    fd = openSync(
      join(base, rel),
      constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY
    );
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw refused;
    throw new ImageError(
      `the image cache's ${rel.replace(CONTROL, '?')} cannot be read (${code ?? 'error'})`
    );
  }
  try {
    const stat = fstatSync(fd);
    const user = imageUser();
    const real = readlinkSync(`/proc/self/fd/${fd}`);
    if (!stat.isFile() || (user && stat.uid !== user.uid) || !real.startsWith(`${base}/`)) throw refused;
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/** A file of the layout (openLayoutFile), at most `max` bytes. */
function readLayoutFile(dataDir: string, rel: string, max: number): Buffer {
  const fd = openLayoutFile(dataDir, rel);
  try {
    const buffer = Buffer.alloc(max + 1);
    let length = 0;
    for (;;) {
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
      if (length > max) throw new ImageError(`the image cache's ${rel} is larger than ${max} bytes`);
    }
    return buffer.subarray(0, length);
  } finally {
    closeSync(fd);
  }
}

const DIGEST = /^sha256:([0-9a-f]{64})$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/** A blob's path inside the layout. */
function blobPath(digest: string): string {
  const hex = DIGEST.exec(digest)?.[1];
  if (!hex)
    throw new ImageError(`digest ${JSON.stringify(digest).slice(0, 80)}: expected sha256:<64 hex digits>`);
  return join('blobs', 'sha256', hex);
}

/** A small blob of the layout, parsed as JSON after its sha256 was found to match `digest`. */
function verifiedJson(dataDir: string, digest: string, what: string): Record<string, unknown> {
  let bytes: Buffer;
  try {
    bytes = readLayoutFile(dataDir, blobPath(digest), MAX_JSON_BYTES);
  } catch (error) {
    if (error instanceof ImageError && /larger than/.test(error.message))
      throw new ImageError(`its ${what} is larger than ${MAX_JSON_BYTES} bytes`);
    throw error;
  }
  const actual = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  if (actual !== digest)
    throw new ImageError(`its ${what} does not match its digest ${digest} (it is ${actual})`);
  const value = JSON.parse(bytes.toString('utf8')) as unknown;
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new ImageError(`its ${what} is not a JSON object`);
  return value as Record<string, unknown>;
}

interface Layer {
  digest: string;
  mediaType: string;
}

/**
 * Hashes a layer's blob (it must match its digest) and counts the bytes of the tar inside it, stopping
 * at once past `left`: a layer that would unpack to more (a decompression bomb) is refused here,
 * before anything is written. Answers the tar's bytes.
 */
async function checkLayer(
  dataDir: string,
  layer: Layer,
  left: number,
  bound: number,
  tar: TarEntries
): Promise<number> {
  const hash = createHash('sha256');
  let tarBytes = 0;
  tar.nextTar();
  const hashing = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    }
  });
  const counting = new Writable({
    write(chunk: Buffer, _encoding, done) {
      tarBytes += chunk.length;
      try {
        tar.feed(chunk);
      } catch (error) {
        done(error as Error);
        return;
      }
      if (tarBytes > left)
        done(
          new ImageError(
            `its layers unpack to more than ${bound} bytes (workspaces.cache_size); expected a smaller image or a larger cache_size`
          )
        );
      else done();
    }
  });
  const type = layer.mediaType;
  const steps: NodeJS.ReadWriteStream[] = [hashing];
  if (/gzip/.test(type)) steps.push(zlib.createGunzip());
  else if (/zstd/.test(type)) {
    const zstd = (zlib as unknown as { createZstdDecompress?: () => NodeJS.ReadWriteStream })
      .createZstdDecompress;
    if (!zstd)
      throw new ImageError(`its layer ${layer.digest} is zstd-compressed, which this Node cannot read`);
    steps.push(zstd());
  } else if (!/tar$/.test(type) && !/diff\.tar$/.test(type))
    throw new ImageError(
      `its layer ${layer.digest} has media type ${JSON.stringify(type).slice(0, 100)}; expected a tar, tar+gzip or tar+zstd layer`
    );
  const fd = openLayoutFile(dataDir, blobPath(layer.digest));
  await pipeline([createReadStream('', { fd }), ...steps, counting]);
  const actual = `sha256:${hash.digest('hex')}`;
  if (actual !== layer.digest)
    throw new ImageError(`its layer ${layer.digest} does not match its digest (it is ${actual})`);
  return tarBytes;
}

/**
 * The layout, made the image user's: skopeo writes it as that user, never as root. A layout left by
 * an older executor (skopeo ran as root then: root's files) is removed first; it is only a cache.
 */
function ownLayout(dataDir: string): void {
  const layout = layoutDir(dataDir);
  const user = imageUser();
  mkdirSync(imagesDir(dataDir), { recursive: true, mode: 0o755 });
  if (existsSync(layout) && user && lstatSync(layout).uid !== user.uid)
    rmSync(layout, { recursive: true, force: true });
  if (!existsSync(layout)) {
    mkdirSync(layout, { mode: 0o755 });
    if (user) chownSync(layout, user.uid, user.gid);
  }
}

/**
 * `program args` under the layout's lock (`flock`, as the image user): several executor processes
 * may share the data dir, and a copy (which rewrites the index), a collection (which removes blobs
 * no tag names yet) and an unpack (which reads them) of two of them must not interleave. Copies and
 * collections take it alone; unpacks together.
 */
function underLock(
  dataDir: string,
  mode: 'exclusive' | 'shared',
  program: string,
  args: string[]
): { program: string; args: string[] } {
  return {
    program: systemProgram('flock'),
    args: [`--${mode}`, join(layoutDir(dataDir), '.lock'), program, ...args]
  };
}

/** What the copy's sandbox must show of the host for `ref`: the file or folder of a local source. */
function sourcePaths(ref: string): string[] {
  const local = /^(oci|oci-archive|docker-archive):(\/[^:]*)/.exec(ref);
  if (!local) return [];
  if (!existsSync(local[2]!)) throw new ImageError(`skopeo could not copy it: ${local[2]!} does not exist`);
  return [local[2]!];
}

/** Runs skopeo as the image user, with no capability, in a reader sandbox (no file past `bound`). */
async function skopeo(
  dataDir: string,
  ref: string,
  args: string[],
  bound: number,
  maxStdout = 64 * 1024
): Promise<Buffer> {
  if (/^(containers-storage|docker-daemon):/.test(ref))
    throw new ImageError(
      `skopeo copies as ${IMAGE_USER}, in a sandbox that does not reach the host's container storage or Docker daemon; expected the image saved first (\`skopeo copy ${ref.split(':')[0]}:… oci:/srv/images/NAME:TAG\`) and named as oci:/srv/images/NAME:TAG`
    );
  if (!existsSync(systemProgram('skopeo')))
    throw new ImageError('skopeo is not installed; install it with `sudo apt-get install -y skopeo umoci`');
  const network = ref.startsWith('docker://');
  // A resolver behind a link out of /etc (systemd-resolved's stub) is shown too.
  const resolver = ['/run/systemd/resolve'].filter(dir => network && existsSync(dir));
  const result = await asRunUser(
    { user: imageUser(), confined: true },
    {
      read: [...sourcePaths(ref), ...resolver],
      write: [layoutDir(dataDir)],
      ...(args[0] === 'copy'
        ? underLock(dataDir, 'exclusive', systemProgram('skopeo'), args)
        : { program: systemProgram('skopeo'), args }),
      network,
      maxStdout,
      stopPastMax: true,
      timeoutMs: STEP_TIMEOUT_MS,
      fileSizeKb: Math.ceil(bound / 1024)
    }
  ).catch((error: NodeJS.ErrnoException) => {
    throw new ImageError(
      `skopeo could not start (${error.code ?? error.message}); install it with \`sudo apt-get install -y skopeo umoci\``
    );
  });
  if (result.code === 0 && result.stdoutBytes <= maxStdout) return result.stdout;
  if (result.stdoutBytes > maxStdout) throw new ImageError(`its manifest is larger than ${maxStdout} bytes`);
  if (result.timedOut)
    throw new ImageError(`skopeo could not copy it: it ran longer than ${STEP_TIMEOUT_MS / 60000} minutes`);
  // Go ignores SIGXFSZ: skopeo sees EFBIG (`file too large`) past `ulimit -f`.
  if (result.signal === 'SIGXFSZ' || result.code === 128 + 25 || /file too large/i.test(result.stderr))
    throw new ImageError(
      `skopeo could not copy it: a blob of it is larger than ${bound} bytes (workspaces.cache_size); expected a smaller image or a larger cache_size`
    );
  const why = result.stderr.trim().split('\n').slice(-1)[0] ?? '';
  const local = sourcePaths(ref)[0];
  const hint =
    local && /permission denied/i.test(why)
      ? `; expected ${local} readable by ${IMAGE_USER}, who copies it (for example \`chmod -R a+rX ${local}\`)`
      : '';
  throw new ImageError(
    `skopeo could not copy it: ${why.replace(CONTROL, '?').slice(0, 300) || `exit code ${result.code ?? result.signal}`}${hint}`
  );
}

/**
 * Takes out of the layout's index the manifests no tag names any more (a copy to a tag that moved
 * leaves the old manifest there, untagged), then collects what only they referenced: otherwise
 * every move of a tag an environment copies with `image_pull: always` would keep a whole image,
 * counted by nothing. The index is written and `umoci gc` run by the image user, under the layout's
 * lock. Another process's copy between this read of the index and that write loses its entry (its
 * next run copies again).
 */
async function dropUntagged(dataDir: string): Promise<void> {
  let index: { manifests?: unknown };
  try {
    index = JSON.parse(
      readLayoutFile(dataDir, 'index.json', MAX_JSON_BYTES).toString('utf8')
    ) as typeof index;
  } catch {
    return;
  }
  if (!Array.isArray(index.manifests)) return;
  const tagged = (index.manifests as { annotations?: Record<string, unknown> }[]).filter(
    entry => typeof entry?.annotations?.['org.opencontainers.image.ref.name'] === 'string'
  );
  if (tagged.length === index.manifests.length) return;
  const layout = layoutDir(dataDir);
  const result = await asRunUser(
    { user: imageUser(), confined: true },
    {
      write: [layout],
      stdin: JSON.stringify({ ...index, manifests: tagged }),
      ...underLock(dataDir, 'exclusive', '/bin/sh', [
        '-c',
        'cat > "$1/index.json.new" && mv "$1/index.json.new" "$1/index.json" && exec umoci gc --layout "$1"',
        'sh',
        layout
      ]),
      timeoutMs: STEP_TIMEOUT_MS
    }
  );
  if (result.code !== 0)
    throw new ImageError(`umoci could not collect the image cache: ${readerReason(result)}`);
}

/**
 * Copies `ref` into the layout under `tag`, as the image user. Its manifest is read first (`skopeo
 * inspect --raw`): a manifest whose layers declare more bytes than `bound` in all is refused before
 * any blob is fetched; a reference pinned by digest must match it. Each blob written is bounded
 * by `bound` too (a source that lies about sizes), and the copy by time.
 */
async function skopeoCopy(dataDir: string, ref: string, tag: string, bound: number): Promise<void> {
  ownLayout(dataDir);
  const raw = await skopeo(dataDir, ref, ['inspect', '--raw', ref], bound, MAX_JSON_BYTES);
  const pinned = /@(sha256:[0-9a-f]{64})$/.exec(ref)?.[1];
  const actual = `sha256:${createHash('sha256').update(raw).digest('hex')}`;
  if (pinned && pinned !== actual)
    throw new ImageError(
      `its manifest does not match the digest it is pinned to, ${pinned} (it is ${actual})`
    );
  let manifest: { layers?: unknown; config?: { size?: unknown } };
  try {
    manifest = JSON.parse(raw.toString('utf8')) as typeof manifest;
  } catch {
    throw new ImageError('its manifest is not JSON');
  }
  // An index (several platforms) names its manifests only: skopeo picks one, each blob bounded.
  if (Array.isArray(manifest.layers)) {
    let declared = typeof manifest.config?.size === 'number' ? manifest.config.size : 0;
    for (const layer of manifest.layers as { size?: unknown }[])
      declared += typeof layer?.size === 'number' && layer.size > 0 ? layer.size : 0;
    if (declared > bound)
      throw new ImageError(
        `its layers weigh ${declared} bytes as its manifest declares them, more than ${bound} bytes (workspaces.cache_size); expected a smaller image or a larger cache_size`
      );
  }
  await skopeo(
    dataDir,
    ref,
    ['copy', '--quiet', '--insecure-policy', ref, `oci:${layoutDir(dataDir)}:${tag}`],
    bound
  );
}

/** `KEY=VALUE` lines of the image config's Env, as a record (malformed ones skipped). */
function envOf(config: Record<string, unknown>): Record<string, string> {
  const inner = config.config as { Env?: unknown } | undefined;
  const env: Record<string, string> = {};
  if (!inner || !Array.isArray(inner.Env)) return env;
  for (const line of inner.Env) {
    if (typeof line !== 'string') continue;
    const at = line.indexOf('=');
    if (at > 0 && /^[A-Za-z_][A-Za-z0-9_]*$/.test(line.slice(0, at)))
      env[line.slice(0, at)] = line.slice(at + 1);
  }
  return env;
}

/**
 * The unpacked root of `image`, copied and unpacked when missing (with `pull: always`, copied
 * again first: a moved tag is picked up). `bound`: the most its layers may unpack to.
 */
export async function prepareImage(
  dataDir: string,
  image: ImageConfig,
  bound: number
): Promise<PreparedImage> {
  const key = `${dataDir}\0${image.ref}`;
  const known = image.pull === 'missing' ? resolved.get(key) : undefined;
  if (known) {
    const dir = join(rootsDir(dataDir), DIGEST.exec(known)![1]!);
    while (building.has(dir)) await building.get(dir)?.catch(() => undefined);
    const ready = readReady(dir);
    if (ready) return cached(dir, image.ref, ready, false);
  }
  return exclusive(dataDir, async () => {
    const tag = tagOf(image.ref);
    let copied = false;
    let digest = image.pull === 'missing' ? taggedDigest(dataDir, tag) : undefined;
    if (!digest) {
      await skopeoCopy(dataDir, image.ref, tag, bound);
      copied = true;
      digest = taggedDigest(dataDir, tag);
      if (!digest) throw new ImageError('skopeo copied it but the layout does not name it');
    }
    const manifest = verifiedJson(dataDir, digest, 'manifest');
    const config = manifest.config as { digest?: unknown } | undefined;
    const layers = manifest.layers;
    if (typeof config?.digest !== 'string' || !Array.isArray(layers))
      throw new ImageError('its manifest is not an OCI image manifest (no config or layers)');
    const configJson = verifiedJson(dataDir, config.digest, 'config');
    const dir = join(rootsDir(dataDir), DIGEST.exec(digest)![1]!);
    const ready = readReady(dir);
    if (ready) {
      resolved.set(key, digest);
      return cached(dir, image.ref, ready, copied);
    }
    const making = (async () => {
      const started = Date.now();
      let left = bound;
      const tar = new TarEntries(MAX_IMAGE_ENTRIES, why => new ImageError(`its layers hold ${why}; refused`));
      for (const layer of layers as { digest?: unknown; mediaType?: unknown }[]) {
        if (typeof layer?.digest !== 'string' || typeof layer.mediaType !== 'string')
          throw new ImageError('its manifest names a layer without a digest or media type');
        left -= await checkLayer(
          dataDir,
          { digest: layer.digest, mediaType: layer.mediaType },
          left,
          bound,
          tar
        );
      }
      const env = envOf(configJson);
      const bytes = await unpack(dataDir, dir, tag, digest, bound);
      writeFileSync(
        join(`${dir}.making-${process.pid}`, 'ready'),
        JSON.stringify({ digest, ref: image.ref, bytes, env })
      );
      try {
        renameSync(`${dir}.making-${process.pid}`, dir);
      } catch (error) {
        // Another process sharing the data dir made it first: its root is as good as ours.
        if (!readReady(dir)) throw error;
        rmSync(`${dir}.making-${process.pid}`, { recursive: true, force: true });
      }
      return Date.now() - started;
    })();
    building.set(dir, making);
    const release = holdImage(dir);
    try {
      const unpackMs = await making;
      resolved.set(key, digest);
      const made = readReady(dir)!;
      return { ...cached(dir, image.ref, made, copied), unpacked: true, unpackMs };
    } finally {
      building.delete(dir);
      release();
    }
  });
}

function cached(dir: string, ref: string, ready: Ready, copied: boolean): PreparedImage {
  try {
    // The last use, for the least-recently-used order of sweepImages.
    const now = new Date();
    utimesSync(join(dir, 'ready'), now, now);
  } catch {
    // collected meanwhile: the caller's hold came too late; the next run makes it again
  }
  return {
    ref,
    digest: ready.digest,
    dir,
    rootfs: rootfsOf(dir),
    env: ready.env ?? {},
    bytes: ready.bytes,
    unpacked: false,
    copied
  };
}

/**
 * umoci unpack --rootless, as the image user in a reader sandbox that shows the layout read-only
 * and the new root's folder writable; no file larger than `bound`. Answers the root's bytes.
 */
async function unpack(
  dataDir: string,
  dir: string,
  tag: string,
  digest: string,
  bound: number
): Promise<number> {
  if (!existsSync(systemProgram('umoci')))
    throw new ImageError('umoci is not installed; install it with `sudo apt-get install -y skopeo umoci`');
  const making = `${dir}.making-${process.pid}`;
  rmSync(making, { recursive: true, force: true });
  mkdirSync(making, { recursive: true, mode: 0o755 });
  const own = join(making, 'u');
  mkdirSync(own, { mode: 0o755 });
  const user = imageUser();
  if (user) chownSync(own, user.uid, user.gid);
  const identity = { user, confined: true };
  const layout = layoutDir(dataDir);
  const result = await asRunUser(identity, {
    read: [layout],
    write: [own],
    ...underLock(dataDir, 'shared', systemProgram('umoci'), [
      'unpack',
      '--rootless',
      '--image',
      `${layout}:${tag}`,
      join(own, 'bundle')
    ]),
    timeoutMs: STEP_TIMEOUT_MS,
    fileSizeKb: Math.ceil(bound / 1024)
  }).catch((error: NodeJS.ErrnoException) => {
    throw new ImageError(
      `umoci could not start (${error.code ?? error.message}); install it with \`sudo apt-get install -y skopeo umoci\``
    );
  });
  if (result.code !== 0) {
    rmSync(making, { recursive: true, force: true });
    throw new ImageError(`umoci could not unpack it: ${readerReason(result)}`);
  }
  // umoci names the manifest it unpacked: it must be the one whose digest was verified.
  const hex = DIGEST.exec(digest)![1]!;
  const bundle = join(own, 'bundle');
  if (!existsSync(join(bundle, `sha256_${hex}.mtree`)) || !lstatSync(join(bundle, 'rootfs')).isDirectory()) {
    rmSync(making, { recursive: true, force: true });
    throw new ImageError(`umoci unpacked another manifest than ${digest}`);
  }
  const measured = await asRunUser(identity, {
    read: [own],
    program: systemProgram('du'),
    args: ['-s', '--block-size=1', join(bundle, 'rootfs')],
    timeoutMs: STEP_TIMEOUT_MS
  });
  const bytes = Number(measured.stdout.toString('utf8').split('\t')[0]);
  // A folder the image user cannot read (mode 000) hides its bytes from du, which then fails: a root
  // that cannot be measured is not kept, or the sweep would never count it.
  if (measured.code !== 0 || !Number.isSafeInteger(bytes)) {
    rmSync(making, { recursive: true, force: true });
    throw new ImageError(
      `its unpacked root could not be measured (du: ${readerReason(measured)}); expected every folder of the image readable by its owner`
    );
  }
  return bytes;
}

/**
 * Lists a directory of an unpacked root (an image's: written once by the unpacker, then by no one;
 * no run can write it): entry kinds read without following a link, a link's target as written.
 */
function lister(rootfs: string): (rel: string) => ImageEntry[] | undefined {
  const seen = new Map<string, ImageEntry[] | undefined>();
  return rel => {
    if (seen.has(rel)) return seen.get(rel);
    let entries: ImageEntry[] | undefined;
    try {
      const dir = join(rootfs, rel);
      if (!lstatSync(dir).isDirectory()) throw new Error('not a directory');
      const items = readdirSync(dir, { withFileTypes: true });
      if (items.length > MAX_DIR_ENTRIES)
        throw new ImageError(`its directory /${rel} holds more than ${MAX_DIR_ENTRIES} entries`);
      entries = [];
      for (const item of items) {
        if (item.isDirectory()) entries.push({ name: item.name, type: 'dir' });
        else if (item.isFile()) entries.push({ name: item.name, type: 'file' });
        else if (item.isSymbolicLink())
          entries.push({ name: item.name, type: 'link', target: readlinkSync(join(dir, item.name)) });
        // FIFOs, sockets and device nodes are not shown.
      }
    } catch (error) {
      if (error instanceof ImageError) throw error;
      entries = undefined;
    }
    seen.set(rel, entries);
    return entries;
  };
}

/** The sandbox's view of a prepared image, held against collection until the run's sandbox closes. */
export function imageRoot(image: PreparedImage, keep: string[]): ImageRoot {
  return {
    ref: image.ref,
    rootfs: image.rootfs,
    list: lister(image.rootfs),
    env: image.env,
    keep,
    release: holdImage(image.dir)
  };
}

/**
 * Where `program` is found in the image as a run would start it (on the image's PATH unless the
 * environment passes its own): its path inside the image, following links inside it; undefined
 * when it is not an executable file there.
 */
export function findInImage(image: PreparedImage, program: string, path: string): string | undefined {
  const list = lister(image.rootfs);
  const lookup = (absolute: string, hops: number): string | undefined => {
    const names = absolute.split('/').filter(part => part !== '' && part !== '.');
    const at: string[] = [];
    for (let i = 0; i < names.length; i++) {
      const name = names[i]!;
      if (name === '..') {
        at.pop();
        continue;
      }
      const entry = list(at.join('/'))?.find(item => item.name === name);
      if (!entry) return undefined;
      if (entry.type === 'link') {
        if (hops > 40) return undefined;
        const target = entry.target ?? '';
        const base = target.startsWith('/') ? target : `/${[...at, target].join('/')}`;
        return lookup([base, ...names.slice(i + 1)].join('/'), hops + 1);
      }
      at.push(name);
      if (i < names.length - 1 && entry.type !== 'dir') return undefined;
      if (i === names.length - 1) {
        if (entry.type !== 'file') return undefined;
        const mode = lstatSync(join(image.rootfs, ...at)).mode;
        return (mode & 0o111) !== 0 ? `/${at.join('/')}` : undefined;
      }
    }
    return undefined;
  };
  if (program.includes('/')) return program.startsWith('/') ? lookup(program, 0) : undefined;
  for (const dir of path.split(':').filter(d => d.startsWith('/'))) {
    const found = lookup(`${dir}/${program}`, 0);
    if (found) return found;
  }
  return undefined;
}

export interface FreedImage {
  digest: string;
  bytes: number;
}

interface CachedRoot {
  dir: string;
  ready: Ready;
  used: number;
}

/** The unpacked roots that are whole, after removing those half made by a process that is gone. */
function listRoots(dataDir: string): CachedRoot[] {
  const roots = rootsDir(dataDir);
  if (!existsSync(roots)) return [];
  const all: CachedRoot[] = [];
  for (const name of readdirSync(roots)) {
    const dir = join(roots, name);
    if (name.includes('.making-')) {
      if (makingLeftOver(dir, made => building.has(made))) rmSync(dir, { recursive: true, force: true });
      continue;
    }
    const ready = readReady(dir);
    if (!ready) {
      if (!building.has(dir) && !held.has(dir)) rmSync(dir, { recursive: true, force: true });
      continue;
    }
    all.push({ dir, ready, used: statSync(join(dir, 'ready')).mtimeMs });
  }
  return all;
}

/** Removes unused roots of `all`, least recently used first, until `enough` says so. */
function removeRoots(all: CachedRoot[], enough: (freedBytes: number) => boolean): FreedImage[] {
  const freed: FreedImage[] = [];
  let freedBytes = 0;
  for (const entry of all.sort((a, b) => a.used - b.used)) {
    if (enough(freedBytes)) break;
    if (held.has(entry.dir) || building.has(entry.dir)) continue;
    rmSync(entry.dir, { recursive: true, force: true });
    for (const [key, digest] of resolved) if (digest === entry.ready.digest) resolved.delete(key);
    freedBytes += entry.ready.bytes;
    freed.push({ digest: entry.ready.digest, bytes: entry.ready.bytes });
  }
  return freed;
}

/**
 * Removes unused unpacked roots, least recently used first, while together they weigh more than
 * `cacheBytes`; and roots half made by a process that is gone. A root held by a run is never removed.
 */
export function sweepImages(dataDir: string, cacheBytes: number): FreedImage[] {
  const all = listRoots(dataDir);
  const total = all.reduce((sum, entry) => sum + entry.ready.bytes, 0);
  return removeRoots(all, freedBytes => total - freedBytes <= cacheBytes);
}

/**
 * Under workspaces.min_free or min_free_inodes (maintenance.ts): removes unused unpacked roots, least
 * recently used first, until `enough` (an unpacked root gives back its bytes and every inode of
 * its files). A root held by a run is never removed.
 */
export function freeImageRoots(dataDir: string, enough: () => boolean): FreedImage[] {
  return removeRoots(listRoots(dataDir), () => enough());
}

/**
 * Collects the layout's blobs: while the images weigh more than `cacheBytes` (unpacked roots, and
 * the layout's blobs as their manifests declare them), the tags of references no environment of
 * the current configuration names (`refs`), least recently used first, leave the layout's index,
 * unless a run holds their root; then `umoci gc`, as the image user, removes every blob no tag
 * left references. Answers the digests of the manifests untagged.
 */
export function collectImageLayout(dataDir: string, refs: string[], cacheBytes: number): Promise<string[]> {
  return exclusive(dataDir, async () => {
    const layout = layoutDir(dataDir);
    if (!existsSync(join(layout, 'index.json'))) return [];
    await dropUntagged(dataDir);
    const tags = layoutTags(dataDir);
    const wanted = new Set(refs.map(tagOf));
    const blobs = new Map<string, number>();
    const entries: { tag: string; digest: string; blobs: string[]; used: number; busy: boolean }[] = [];
    for (const [tag, digest] of tags) {
      const hex = DIGEST.exec(digest)?.[1];
      if (!hex) continue;
      const own: string[] = [digest];
      try {
        const manifest = verifiedJson(dataDir, digest, 'manifest');
        blobs.set(digest, blobs.get(digest) ?? 0);
        for (const blob of [manifest.config, ...(Array.isArray(manifest.layers) ? manifest.layers : [])] as {
          digest?: unknown;
          size?: unknown;
        }[])
          if (typeof blob?.digest === 'string') {
            own.push(blob.digest);
            blobs.set(blob.digest, typeof blob.size === 'number' && blob.size > 0 ? blob.size : 0);
          }
      } catch {
        // a manifest that cannot be read references nothing: its blobs go with the rest
      }
      const dir = join(rootsDir(dataDir), hex);
      let used = 0;
      try {
        used = statSync(join(dir, 'ready')).mtimeMs;
      } catch {
        // never unpacked here, or swept: the oldest
      }
      entries.push({ tag, digest, blobs: own, used, busy: held.has(dir) || building.has(dir) });
    }
    let total =
      listRoots(dataDir).reduce((sum, root) => sum + root.ready.bytes, 0) +
      [...blobs.values()].reduce((sum, size) => sum + size, 0);
    const dropped: typeof entries = [];
    for (const entry of entries.sort((a, b) => a.used - b.used)) {
      if (total <= cacheBytes) break;
      if (wanted.has(entry.tag) || entry.busy) continue;
      dropped.push(entry);
      const kept = new Set(entries.filter(other => !dropped.includes(other)).flatMap(other => other.blobs));
      for (const blob of entry.blobs) if (!kept.has(blob)) total -= blobs.get(blob) ?? 0;
    }
    if (dropped.length === 0) return [];
    const result = await asRunUser(
      { user: imageUser(), confined: true },
      {
        write: [layout],
        ...underLock(dataDir, 'exclusive', '/bin/sh', [
          '-c',
          'layout=$1; shift; for tag; do umoci rm --image "$layout:$tag" || exit 1; done; exec umoci gc --layout "$layout"',
          'sh',
          layout,
          ...dropped.map(entry => entry.tag)
        ]),
        timeoutMs: STEP_TIMEOUT_MS
      }
    );
    if (result.code !== 0)
      throw new ImageError(`umoci could not collect the image cache: ${readerReason(result)}`);
    const gone = new Set(dropped.map(entry => entry.tag));
    for (const key of [...resolved.keys()])
      if (gone.has(tagOf(key.slice(key.indexOf('\0') + 1)))) resolved.delete(key);
    return dropped.map(entry => entry.digest);
  });
}
