// Before `npm test` and `npm run demo`: the system packages the executor uses, installed when
// missing. bubblewrap confines every run; skopeo and umoci copy and unpack the container images
// environments may name (`image:`). With `--tests`, also busybox-static, the one program the tests'
// own images hold. Installed with apt-get when this is root on Debian/Ubuntu; otherwise stop at
// once with the one command to run. Nothing to do off Linux.
import { execFileSync, spawnSync } from 'node:child_process';

const PACKAGES = [
  {
    name: 'bubblewrap',
    program: 'bwrap',
    args: ['--version'],
    why: 'the executor runs every agent inside it'
  },
  { name: 'skopeo', program: 'skopeo', args: ['--version'], why: "it copies environments' container images" },
  { name: 'umoci', program: 'umoci', args: ['--version'], why: "it unpacks environments' container images" }
];
if (process.argv.includes('--tests'))
  PACKAGES.push({
    name: 'busybox-static',
    program: '/bin/busybox',
    args: ['true'],
    why: "the tests' images hold it"
  });

const missing = PACKAGES.filter(pkg => spawnSync(pkg.program, pkg.args, { stdio: 'ignore' }).error);
if (process.platform === 'linux' && missing.length > 0) {
  const names = missing.map(pkg => pkg.name);
  const root = process.getuid?.() === 0;
  const apt = !spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).error;
  if (!root || !apt) {
    for (const pkg of missing) console.error(`${pkg.name} is missing (${pkg.why})`);
    console.error(`run \`sudo apt-get install -y ${names.join(' ')}\`, then this command again`);
    process.exit(1);
  }
  console.error(`${names.join(', ')} missing: installing with apt-get`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', ...names], { stdio: 'inherit', env });
}
