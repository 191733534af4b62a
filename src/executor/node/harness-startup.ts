// The start-up look at each harness environment's CLI, for a node that runs work: the program is
// found (agent.command, else the CLI's usual name on the PATH), it starts in a sandbox shaped like a
// run's (as the run's user, nothing but its own file visible besides the system) and prints its
// version, which the start-up log states. A missing CLI is refused earlier, by the kind's own check
// (kind.ts), with the command that installs it; one that is there but cannot run is refused here.

import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { realpathSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { EnvironmentConfig } from '../config/config.js';
import { SANDBOX_HOME, bwrapArgs, bwrapProgram, whyItFailed } from '../sandbox/bwrap.js';
import { type RunUser, dropTo, runUser } from '../sandbox/user.js';
import { type AgentCli, agentKindOf } from '../agents/index.js';
import { findOnPath, programOf } from '../agents/harness/input.js';

export interface HarnessCliReport {
  /** One line per harness environment: its CLI, where it is, its version. */
  notes: string[];
  /** CLIs found but not runnable: the executor refuses to start on these. */
  problems: string[];
}

/** Runs each harness environment's CLI with its version flag, confined as a run would be. */
export function checkHarnessClis(environments: EnvironmentConfig[]): HarnessCliReport {
  const report: HarnessCliReport = { notes: [], problems: [] };
  const checked = new Map<string, SpawnSyncReturns<string>>();
  for (const environment of environments) {
    // The kinds whose runs start a known CLI: the harness kinds, each as its registry entry says.
    const kind = agentKindOf(environment.agent.kind);
    const harness = kind?.program?.cli;
    if (!kind?.program || !harness) continue;
    const { program, prefix } = programOf(kind.program.command(environment.agent));
    const found = findOnPath(program, process.env.PATH ?? '');
    if (!found) continue; // refused by the kind's check, with the install command
    const file = realpathSync(found);
    // The CLI as the user names it: a Node script's own path, not the node that runs it.
    const cli = program === process.execPath && prefix[0] ? prefix[0] : found;
    const command = versionCommand(environment, file, prefix, harness.versionArgs);
    // Environments that differ only in what a run gets (its key, its model) run the same check once.
    const checkKey = JSON.stringify(command);
    const result = checked.get(checkKey) ?? runVersion(command);
    checked.set(checkKey, result);
    report[result.status === 0 ? 'notes' : 'problems'].push(
      versionLine(environment, kind.kind, harness, { found, file, cli }, result)
    );
  }
  return report;
}

/** The command that prints the CLI's version, in a sandbox shaped like a run's when the environment has one. */
function versionCommand(
  environment: EnvironmentConfig,
  file: string,
  prefix: string[],
  versionArgs: string[]
): string[] {
  const args = [...prefix, ...versionArgs];
  if (!environment.sandbox.enabled) return [file, ...args];
  const user = runUser(environment.sandbox.user);
  // What a run of the environment sees: its sandbox.read (where a CLI installed outside the
  // system directories lives, with its packages), the program, and a script's own folder.
  const read = [
    ...environment.sandbox.read,
    file,
    ...prefix.filter(arg => arg.startsWith('/')).map(arg => dirname(realpathSync(arg)))
  ];
  const confine = bwrapArgs({ workspace: '/tmp', read, write: [], hide: [], network: 'none', user });
  const inner = user ? [...dropTo(user, SANDBOX_HOME), file, ...args] : [file, ...args];
  return [bwrapProgram(), ...confine, '--', ...inner];
}

/** Runs a version command with the little a CLI needs to start: PATH, HOME, LANG. */
function runVersion(command: string[]): SpawnSyncReturns<string> {
  return spawnSync(command[0]!, command.slice(1), {
    encoding: 'utf8',
    timeout: 30_000,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: SANDBOX_HOME,
      LANG: process.env.LANG ?? 'C.UTF-8'
    }
  });
}

/**
 * The start-up line of one environment's CLI: a note with its version when it ran, else the
 * problem (the folders the run user cannot enter, or its failure with the reinstall command).
 * `found` is the program on the PATH, `file` its real path, `cli` the script a node runs, else `found`.
 */
function versionLine(
  environment: EnvironmentConfig,
  kind: string,
  harness: AgentCli,
  paths: { found: string; file: string; cli: string },
  result: SpawnSyncReturns<string>
): string {
  const { found, file } = paths;
  const shown = paths.cli === found ? found : `${paths.cli} (a Node script, run with ${found})`;
  const at = `environment ${JSON.stringify(environment.id)}`;
  const where = environment.sandbox.enabled ? 'in its sandbox' : 'unconfined';
  if (result.status === 0) {
    const version = result.stdout.trim().split('\n')[0] ?? '';
    return `${at}: ${kind} CLI ${shown} runs ${where}, version ${version}`;
  }
  const user = environment.sandbox.enabled ? runUser(environment.sandbox.user) : undefined;
  const locked = user ? lockedOut(user, file, paths.cli === found ? [] : [paths.cli]) : undefined;
  return locked
    ? `${at}: the ${kind} CLI ${shown} cannot run ${where}: ${locked}`
    : `${at}: the ${kind} CLI ${shown} does not run ${where} (${whyItFailed(result)}); reinstall it with \`${harness.install}\``;
}

/** Whether `user` may pass through the folder `stat` describes (its search bit for them). */
function canEnter(user: RunUser, stat: { mode: number; uid: number; gid: number }): boolean {
  if (stat.uid === user.uid) return (stat.mode & 0o100) !== 0;
  if (stat.gid === user.gid) return (stat.mode & 0o010) !== 0;
  return (stat.mode & 0o001) !== 0;
}

/**
 * Why the run user cannot reach the program (`node`, for a Node script) or the scripts it runs: the
 * folders on their way it may not enter (a clone under root's home, a `mktemp -d` folder, both mode
 * 700), with the fix; undefined when every folder lets it through. These are the executor's own
 * install paths, never a tree a run can write, so they are looked at directly.
 */
function lockedOut(user: RunUser, program: string, scripts: string[]): string | undefined {
  const blocked = new Map<string, string>();
  const reasons: string[] = [];
  const what = (path: string) =>
    path === process.execPath ? `the Node this executor runs on (${path})` : `the CLI (${path})`;
  for (const path of [program, ...scripts]) {
    const dirs: string[] = [];
    for (let dir = dirname(path); ; dir = dirname(dir)) {
      dirs.unshift(dir);
      if (dir === dirname(dir)) break;
    }
    const closed = dirs.filter(dir => {
      try {
        const stat = statSync(dir);
        if (canEnter(user, stat)) return false;
        blocked.set(dir, `mode ${(stat.mode & 0o777).toString(8)}, owner uid ${stat.uid}`);
        return true;
      } catch {
        return false;
      }
    });
    if (closed.length > 0) reasons.push(`${closed.join(', ')}, where ${what(path)} lives`);
  }
  if (blocked.size === 0) return undefined;
  const dirs = [...blocked.keys()];
  return (
    `the runs' user ${user.label} cannot enter ${dirs.map(dir => `${dir} (${blocked.get(dir)})`).join(', ')}; ` +
    `${reasons.join('; ')}. Let it through with \`chmod o+x ${dirs.join(' ')}\`, or run the executor ` +
    'and the CLI from folders every user can enter (e.g. Node 24 and the CLI installed under /usr/local or /opt)'
  );
}
