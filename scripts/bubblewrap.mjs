// Before `npm test` and `npm run demo`: the executor confines every run with bubblewrap, so make
// sure it is there. Installed with apt-get when this is root on Debian/Ubuntu; otherwise stop at
// once with the one command to run. Nothing to do off Linux.
import { execFileSync, spawnSync } from 'node:child_process';

if (process.platform === 'linux' && spawnSync('bwrap', ['--version'], { stdio: 'ignore' }).error) {
  const root = process.getuid?.() === 0;
  const apt = !spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).error;
  if (!root || !apt) {
    console.error(
      'bubblewrap is missing (the executor runs every agent inside it): run `sudo apt-get install -y bubblewrap`, then this command again'
    );
    process.exit(1);
  }
  console.error('bubblewrap is missing: installing it with apt-get');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', 'bubblewrap'], { stdio: 'inherit', env });
}
