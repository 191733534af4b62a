// The start-up look at each environment that names a container image, for a node that runs work:
// the image is copied and unpacked into the cache now (its first run then starts from the cache),
// a sandbox of the image is made once as the run's user (the nested sandbox needs user namespaces
// for that user), and the agent's command is found in the image (its harness CLI also prints its
// version there). Anything missing refuses the node, naming the environment, the image and the
// command. A machine without skopeo or umoci refuses only image environments, saying how to install them.

import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ExecutorConfig, EnvironmentConfig } from '../config/config.js';
import { show } from '../values/config-reader.js';
import { RunSandbox } from '../sandbox/index.js';
import { runUser } from '../sandbox/user.js';
import { whyItFailed } from '../sandbox/bwrap.js';
import { ImageError, type PreparedImage, findInImage, imageRoot, prepareImage } from '../images/cache.js';
import { agentKindOf } from '../agents/index.js';
import { StartupCheckError } from './startup.js';

/** The PATH a program is looked up on in an image without one in its Env. */
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** A program no image has: a sandbox that gets as far as looking for it was made whole. */
const PROBE = '/.agent-run-probe-absent';

/**
 * The agent's program as a run would start it, and the arguments that print its version (a
 * harness CLI's), as the kind's registry entry says; undefined for a kind without a program
 * (simulated) or a program that is the prompt itself.
 */
function programOf(environment: EnvironmentConfig): { program: string; version?: string[] } | undefined {
  const known = agentKindOf(environment.agent.kind)?.program;
  const program = known?.command(environment.agent)[0];
  if (!known || !program || program.includes('{prompt}')) return undefined;
  return { program, version: known.cli?.versionArgs };
}

/** Runs `argv` in a sandbox of `image` shaped like a run of `environment`; answers how it ended. */
async function runInImage(
  config: ExecutorConfig,
  environment: EnvironmentConfig,
  image: PreparedImage,
  argv: string[]
): Promise<{ status: number | null; stdout: string; stderr: string; error?: Error }> {
  const workspace = mkdtempSync(join(tmpdir(), 'agent-run-image-check-'));
  chmodSync(workspace, 0o755);
  const sandbox = await RunSandbox.create({
    runId: `image-check-${environment.id}`,
    sandbox: { ...environment.sandbox, network: 'none' },
    dataDir: config.dataDir,
    configFile: config.configFile,
    workspace,
    read: [],
    user: runUser(environment.sandbox.user),
    image: imageRoot(image, environment.env)
  });
  try {
    const pathVar = environment.env.includes('PATH') ? process.env.PATH : undefined;
    const wrapped = sandbox.wrap(argv[0]!, argv.slice(1), workspace, {
      ...(pathVar ? { PATH: pathVar } : {}),
      LANG: 'C.UTF-8'
    })!;
    const result = spawnSync(wrapped.program, wrapped.args, {
      env: wrapped.env,
      encoding: 'utf8',
      timeout: 30_000
    });
    return {
      status: result.status,
      stdout: result.stdout ?? '',
      stderr: result.stderr ?? '',
      error: result.error
    };
  } finally {
    await sandbox.close();
    rmSync(workspace, { recursive: true, force: true });
  }
}

/** Prepares every image environment's image and checks its command; throws a StartupCheckError on a refusal. */
export async function checkImages(config: ExecutorConfig): Promise<string[]> {
  const notes: string[] = [];
  const problems: string[] = [];
  for (const environment of config.environments) {
    if (!environment.image) continue;
    const at = `environment ${show(environment.id)}: image ${environment.image.ref}`;
    const line = await checkImage(config, environment, at);
    (line.ok ? notes : problems).push(line.text);
  }
  if (problems.length > 0)
    throw new StartupCheckError(
      `refusing to start:${problems.length === 1 ? ` ${problems[0]}` : `\n- ${problems.join('\n- ')}`}`
    );
  return notes;
}

/** One image environment's start-up line: a note when its image and command are fine, else its problem. */
async function checkImage(
  config: ExecutorConfig,
  environment: EnvironmentConfig,
  at: string
): Promise<{ ok: boolean; text: string }> {
  let image: PreparedImage;
  try {
    image = await prepareImage(config.dataDir, environment.image!, config.workspaces.cacheBytes);
  } catch (error) {
    if (!(error instanceof ImageError)) throw error;
    return { ok: false, text: `${at}: ${error.message}` };
  }
  const how = image.unpacked ? `unpacked in ${image.unpackMs} ms` : 'from the cache';
  const probe = await runInImage(config, environment, image, [PROBE]);
  if (!`${probe.stderr}`.includes(PROBE))
    return {
      ok: false,
      text: `${at}: its sandbox cannot be made here (${whyItFailed(probe)}); image environments need user namespaces for the runs' user (\`sudo sysctl -w kernel.unprivileged_userns_clone=1\`, or on Ubuntu 23.10+ \`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0\`)`
    };
  const command = programOf(environment);
  if (!command)
    return {
      ok: true,
      text: `${at} (${image.digest}, ${image.bytes} bytes, ${how}) is the root of its runs`
    };
  const path = environment.env.includes('PATH') ? (process.env.PATH ?? '') : (image.env.PATH ?? DEFAULT_PATH);
  const found = findInImage(image, command.program, path);
  if (!found)
    return {
      ok: false,
      text: `${at}: its command ${show(command.program)} is not an executable file of the image (looked on the image's PATH ${path}); expected an image that has it, or its absolute path inside the image`
    };
  let version = '';
  if (command.version) {
    const ran = await runInImage(config, environment, image, [found, ...command.version]);
    if (ran.status !== 0)
      return {
        ok: false,
        text: `${at}: its command ${show(command.program)} (${found}) does not run in the image (${whyItFailed(ran)})`
      };
    version = `, version ${ran.stdout.trim().split('\n')[0] ?? ''}`;
  }
  return {
    ok: true,
    text: `${at} (${image.digest}, ${image.bytes} bytes, ${how}): its command ${found} is there${version}`
  };
}
