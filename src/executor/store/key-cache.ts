// API keys held in memory, so an authenticated request does not read the keys table each time.
// Correctness over speed: the store says when the cache may be trusted (SQLite: no key was written
// since it was filled, by any connection, by the key_changes counter that triggers on api_keys move;
// PostgreSQL: the notification connection is up and no key notification came), and empties it on
// every key write of its own. A lookup that
// was in flight while the cache was emptied is not kept, so a revocation is never undone by it.
// Only keys that exist are kept: made-up keys cannot grow it, and their lookups go to the table.

import type { KeyRecord } from './types.js';

const MAX_KEYS = 10_000;

export class KeyCache {
  private readonly keys = new Map<string, KeyRecord>();
  private generation = 0;

  /** Forgets every key (a key was created or revoked, here or possibly elsewhere). */
  clear(): void {
    this.keys.clear();
    this.generation++;
  }

  /** The key with this hash, from memory when there, else from `load` (kept when found). */
  async find(hash: string, load: () => Promise<KeyRecord | undefined>): Promise<KeyRecord | undefined> {
    const cached = this.keys.get(hash);
    if (cached) return cached;
    const generation = this.generation;
    const record = await load();
    if (record && generation === this.generation) {
      if (this.keys.size >= MAX_KEYS) this.keys.delete(this.keys.keys().next().value!);
      this.keys.set(hash, record);
    }
    return record;
  }
}
