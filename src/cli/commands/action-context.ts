// What `agent-run action` tells the action about where it runs, as the runner would: the inputs
// action.yml declares (an unknown or misspelt one is refused, not ignored), and the repository,
// ref, sha and workspace, from flags or else from the git checkout the command runs in.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { usage } from '../exit.js';

/** Inputs the command sets itself, and the flag or setting to use instead. */
export const SET_BY_COMMAND: Record<string, string> = {
  'api-key': 'the key never goes on a command line; set AGENT_RUN_API_KEY or --api-key-file',
  'base-url': 'use --base-url URL or AGENT_RUN_BASE_URL'
};

/** Inputs naming files: a relative path is resolved from the current directory, as a user expects. */
const PATH_INPUTS = ['prompt-file', 'output-schema'];

/** The input names action.yml declares, or undefined when it cannot be read. */
export function declaredInputs(actionYml: string): string[] | undefined {
  let text: string;
  try {
    text = readFileSync(actionYml, 'utf8');
  } catch {
    return undefined;
  }
  const block = /^inputs:\n((?:[ \t].*\n|\n)*)/m.exec(text)?.[1] ?? '';
  const names = [...block.matchAll(/^ {2}([A-Za-z0-9_-]+):/gm)].map(match => match[1]!);
  return names.length > 0 ? names : undefined;
}

/** `--input NAME=VALUE` pairs as inputs, checked against action.yml; paths made absolute from `cwd`. */
export function parseInputs(
  pairs: string[],
  known: string[] | undefined,
  cwd: string
): Record<string, string> {
  const inputs: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    const name = (at < 0 ? pair : pair.slice(0, at)).trim().toLowerCase().replace(/_/g, '-');
    const instead = SET_BY_COMMAND[name];
    if (instead !== undefined) throw usage(`--input ${name} is refused: this command sets it; ${instead}`);
    if (at <= 0)
      throw usage(
        `--input ${JSON.stringify(pair.slice(0, 60))}: expected NAME=VALUE, e.g. --input prompt='Fix it'`
      );
    if (known && !known.includes(name)) {
      const choices = known.filter(input => SET_BY_COMMAND[input] === undefined);
      throw usage(
        `--input ${JSON.stringify(name)}: action.yml has no such input; expected one of ${choices.join(', ')}`
      );
    }
    const value = pair.slice(at + 1);
    inputs[name] =
      PATH_INPUTS.includes(name) && value.trim() !== '' && !isAbsolute(value.trim())
        ? resolve(cwd, value.trim())
        : value;
  }
  return inputs;
}

export interface Checkout {
  /** The folder the action sees as GITHUB_WORKSPACE: the git top level, or the current directory. */
  workspace: string;
  repository?: string;
  ref?: string;
  sha?: string;
}

function git(cwd: string, args: string[]): string | undefined {
  try {
    return (
      execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() ||
      undefined
    );
  } catch {
    return undefined;
  }
}

/**
 * OWNER/NAME from a GitHub remote URL: https://github.com/o/n(.git), git@github.com:o/n.git,
 * ssh://git@github.com/o/n; any other remote (a local path, file://, another host) names no
 * GitHub repository: undefined.
 */
export function repositoryOfRemote(url: string): string | undefined {
  const match =
    /^(?:(?:https?|ssh|git):\/\/(?:[^@/]+@)?github\.com(?::\d+)?\/|[\w.-]+@github\.com:)([\w.-]+)\/([\w.-]+?)(?:\.git)?\/?$/i.exec(
      url.trim()
    );
  return match ? `${match[1]}/${match[2]}` : undefined;
}

/** What the git checkout at `cwd` says, where there is one. */
export function readCheckout(cwd: string): Checkout {
  const top = git(cwd, ['rev-parse', '--show-toplevel']);
  if (top === undefined) return { workspace: cwd };
  const remote = git(cwd, ['remote', 'get-url', 'origin']);
  return {
    workspace: top,
    repository: remote === undefined ? undefined : repositoryOfRemote(remote),
    ref: git(cwd, ['symbolic-ref', '-q', 'HEAD']),
    sha: git(cwd, ['rev-parse', '-q', '--verify', 'HEAD'])
  };
}

export function checkRepository(value: string): string {
  if (!/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(value.trim())) {
    throw usage(`--repo ${JSON.stringify(value)}: expected OWNER/NAME, e.g. octo-org/hello`);
  }
  return value.trim();
}
