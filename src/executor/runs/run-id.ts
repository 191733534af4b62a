// A new run's id: a UUID of version 7 (RFC 9562), whose first 48 bits are the creation time in
// milliseconds and whose other 74 bits (beside the version and variant) are random. Ids made in
// order sort in order, so a create adds its run id and its first event at the end of their indexes
// (runs.run_id, and events' (run_id, seq) key) instead of on a random page of each: a batch of
// creates writes a few pages instead of one per create, and reads none from the disk. Run ids are
// names, not secrets (every read checks the caller's team), and the time they carry is the run's
// created_at, which its record shows anyway.

import { randomUUID } from 'node:crypto';

/** A time-ordered UUID (version 7) for a new run. */
export function newRunId(now = Date.now()): string {
  const random = randomUUID(); // xxxxxxxx-xxxx-4xxx-Nxxx-xxxxxxxxxxxx, N the variant (8 to b)
  const time = now.toString(16).padStart(12, '0').slice(-12);
  return `${time.slice(0, 8)}-${time.slice(8)}-7${random.slice(15)}`;
}

/**
 * The 8 hex digits that tell a run apart in short (`{short_id}` of a published branch): the last 8
 * of a time-ordered id, whose first digits are its time and so shared by every run of the same
 * minute; the first 8 of an older random (version 4) id, as they always were, so its branch keeps
 * its name.
 */
export function shortRunId(runId: string): string {
  const hex = runId.replace(/-/g, '');
  return hex[12] === '7' ? hex.slice(-8) : hex.slice(0, 8);
}
