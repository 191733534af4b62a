// The `sandbox:` key of an environment, `workspaces.min_free` and `min_free_inodes`: defaults,
// every form, and errors that name the key, the value and the expected form.

import { describe, expect, it } from '@jest/globals';
import { bwrapArgs } from '../../src/executor/sandbox/bwrap.js';
import { parseConfig } from '../../src/executor/config/config.js';

const env = (sandbox: unknown) => ({ environments: [{ id: 'e', source: '/tmp', sandbox }] });

describe('sandbox configuration', () => {
  it('is on by default with network none, 4 GiB and 512 processes, for `local` too', () => {
    const config = parseConfig({}, '/tmp');
    expect(config.environments[0]!.sandbox).toEqual({
      enabled: true,
      network: 'none',
      read: [],
      write: [],
      memoryBytes: 4 * 1024 ** 3,
      processes: 512,
      requireLimits: false
    });
    expect(config.workspaces.minFreeBytes).toBe(1024 ** 3);
    expect(config.workspaces.minFreeInodes).toBe(65_536);
    expect(parseConfig({ workspaces: { min_free_inodes: 0 } }, '/tmp').workspaces.minFreeInodes).toBe(0);
  });

  it('reads off, host, host:port lists, paths and limits', () => {
    expect(parseConfig(env('off'), '/tmp').environments[0]!.sandbox.enabled).toBe(false);
    expect(parseConfig(env({ network: 'host' }), '/tmp').environments[0]!.sandbox.network).toBe('host');
    const full = parseConfig(
      env({
        network: ['api.anthropic.com:443', '[::1]:8080'],
        read: ['/opt/tools'],
        write: ['/var/cache/x'],
        memory: '1GiB',
        processes: 64,
        require_limits: true
      }),
      '/tmp'
    ).environments[0]!.sandbox;
    expect(full).toEqual({
      enabled: true,
      network: [
        { host: 'api.anthropic.com', port: 443 },
        { host: '::1', port: 8080 }
      ],
      read: ['/opt/tools'],
      write: ['/var/cache/x'],
      memoryBytes: 1024 ** 3,
      processes: 64,
      requireLimits: true
    });
  });

  it('names the key, the value and the expected form of every mistake', () => {
    expect(() =>
      parseConfig(
        env({ network: ['example.com'], read: ['relative'], memory: '1KiB', processes: 2, cpu: 1 }),
        '/tmp'
      )
    ).toThrow(
      [
        'environments[0].sandbox.cpu: unknown key; expected one of network, read, write, memory, processes, require_limits, user',
        'environments[0].sandbox.network "example.com": expected none, host or a list of host:port such as [api.anthropic.com:443]',
        'environments[0].sandbox.read ["relative"]: expected a list of absolute paths such as [/opt/tools]',
        'environments[0].sandbox.memory "1KiB": expected a size of at least 16MiB, e.g. 4GiB',
        'environments[0].sandbox.processes 2: expected a whole number from 8 to 1000000'
      ].join('\n- ')
    );
    expect(() => parseConfig(env('yes'), '/tmp')).toThrow(
      'environments[0].sandbox "yes": expected off or a mapping (network, read, write, memory, processes, user)'
    );
    expect(() => parseConfig({ workspaces: { min_free: 'lots' } }, '/tmp')).toThrow(
      'workspaces.min_free "lots": expected a size such as 500MiB or 2GiB'
    );
    expect(() => parseConfig({ workspaces: { min_free_inodes: '10%' } }, '/tmp')).toThrow(
      'workspaces.min_free_inodes "10%": expected a whole number from 0 to 1000000000'
    );
  });
});

describe('the bubblewrap command line', () => {
  it('hides the data dir and binds the workspace inside it afterwards, writable', () => {
    const args = bwrapArgs({
      workspace: '/tmp',
      read: [],
      write: [],
      hide: ['/usr/share', '/tmp'],
      network: 'none'
    }).join(' ');
    expect(args).toMatch(/^--die-with-parent --new-session --unshare-all --cap-drop ALL /);
    expect(args).not.toContain('--share-net');
    // /usr/share hidden after /usr is bound; the workspace bound after every hiding mount.
    expect(args.indexOf('--tmpfs /usr/share')).toBeGreaterThan(args.indexOf('--ro-bind-try /usr /usr'));
    expect(args.indexOf('--bind /tmp /tmp')).toBeGreaterThan(args.indexOf('--tmpfs /usr/share'));
  });
});
