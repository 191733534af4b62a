// Which store a node uses: a path or sqlite: URL for SQLite (the default, in the data dir), a
// postgres:// URL for PostgreSQL shared by several nodes. Parsing only: opening is open.ts, so the
// config can name a store without loading a database driver.

import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export type StoreSpec = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

export class StoreSpecError extends Error {}

/**
 * Reads a store setting. Undefined means SQLite in the data dir; relative paths are from `base`.
 * Throws StoreSpecError naming the value (password hidden) and the expected forms.
 */
export function parseStoreSpec(value: string | undefined, dataDir: string, base: string): StoreSpec {
  const text = value?.trim() ?? '';
  if (text === '') return { kind: 'sqlite', path: join(dataDir, 'executor.db') };
  if (/^postgres(ql)?:\/\//i.test(text)) {
    try {
      const url = new URL(text);
      if (url.hostname === '' && !url.searchParams.has('host')) throw new Error('no host');
    } catch {
      throw new StoreSpecError(
        `${JSON.stringify(redactUrl(text))}: not a valid PostgreSQL URL; expected postgres://USER:PASSWORD@HOST:PORT/DATABASE`
      );
    }
    return { kind: 'postgres', url: text };
  }
  if (/^sqlite:/i.test(text)) {
    const rest = text.slice('sqlite:'.length);
    const path = rest.startsWith('//') ? fileURLToPath(`file:${rest}`) : rest;
    if (path === '')
      throw new StoreSpecError(
        `${JSON.stringify(text)}: expected sqlite:PATH, e.g. sqlite:/var/lib/agent-executor/executor.db`
      );
    return { kind: 'sqlite', path: isAbsolute(path) ? path : resolve(base, path) };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    throw new StoreSpecError(
      `${JSON.stringify(redactUrl(text))}: unsupported store; expected a path or sqlite:PATH for SQLite, or postgres://USER:PASSWORD@HOST:PORT/DATABASE`
    );
  }
  return { kind: 'sqlite', path: resolve(base, text) };
}

/** The store named by the spec, with password hidden, for logs. */
export function describeStore(spec: StoreSpec): string {
  return spec.kind === 'sqlite' ? `sqlite:${spec.path}` : redactUrl(spec.url);
}

/** postgres://user:***@host:port/db: the address with any password taken out, for logs and errors. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    for (const name of [...parsed.searchParams.keys()])
      if (/pass|secret|key/i.test(name)) parsed.searchParams.set(name, '***');
    return parsed.href;
  } catch {
    // Not a URL the parser takes: hide everything between :// and the last @ (a password may hold
    // / and @ of its own).
    return url.replace(/^([a-z][a-z0-9+.-]*:\/\/).*@/i, '$1***@');
  }
}
