// Before the executor starts on a runner: bubblewrap installed (every run is confined with it), and
// user namespaces allowed where the runner's AppArmor refuses them (Ubuntu 23.10 and later, so
// GitHub's ubuntu-24.04 images). Both changes are said in the log; off Linux nothing is done.

import * as core from '@actions/core';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

const RESTRICT = '/proc/sys/kernel/apparmor_restrict_unprivileged_userns';

function asRoot(command: string[]): void {
  const root = process.getuid?.() === 0;
  const [program, ...args] = root ? command : ['sudo', '-n', ...command];
  execFileSync(program!, args, {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  });
}

function works(): boolean {
  const result = spawnSync('bwrap', ['--unshare-all', '--die-with-parent', '--ro-bind', '/', '/', 'true'], {
    stdio: 'ignore'
  });
  return !result.error && result.status === 0;
}

export function ensureBubblewrap(): void {
  if (process.platform !== 'linux') return;
  if (spawnSync('bwrap', ['--version'], { stdio: 'ignore' }).error) {
    core.info('bubblewrap is missing: installing it with apt-get (the executor confines every run with it)');
    try {
      asRoot(['apt-get', 'update', '-qq']);
      asRoot(['apt-get', 'install', '-y', '-qq', 'bubblewrap']);
    } catch (error) {
      throw new Error(
        `could not install bubblewrap (${(error as Error).message.split('\n')[0]}); install it before this step with \`sudo apt-get install -y bubblewrap\``
      );
    }
  }
  if (works()) return;
  if (existsSync(RESTRICT) && readFileSync(RESTRICT, 'utf8').trim() === '1') {
    core.warning(
      "this runner's AppArmor refuses unprivileged user namespaces, which bubblewrap needs: lifting the restriction with `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` for this job"
    );
    asRoot(['sysctl', '-w', 'kernel.apparmor_restrict_unprivileged_userns=0']);
  }
}
