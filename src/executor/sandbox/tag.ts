// A short, stable name for a data dir, so one executor's cgroups are told from another's.

import { createHash } from 'node:crypto';

export function dataDirTag(dataDir: string): string {
  return createHash('sha256').update(dataDir).digest('hex').slice(0, 10);
}
