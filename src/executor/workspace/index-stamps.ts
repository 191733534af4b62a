// A shared checkout's files are given to the run's user (chown) after git wrote them, which changes
// every file's owner and ctime. git's index remembers both, so the next `git update-index --refresh`
// would see every entry as possibly changed and read and hash every file of the repository again
// (about 0.9 s of a 3.9 s first run at 50,000 files). Nothing but ownership changed: the executor
// wrote the files a moment before, in a directory only it can reach. So the new owner and ctime are
// written into the index entries directly, from one lstat of each file, and only for an entry whose
// file still has the index's size, mtime, inode and type; any other entry (git's "racily clean"
// ones, stored with size 0, and submodules) is left as it was, for git's own refresh to read.
// The caller still runs that refresh afterwards: git then checks every entry against the files
// (stat only) and writes the index itself, so an entry this file got wrong would be read again.
//
// Index versions 2 and 3 only (fixed-length entries, what `read-tree` writes unless told
// otherwise); any other version is left alone (the refresh then reads every file, as before).

import { createHash } from 'node:crypto';
import { lstatSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const GITLINK = 0o160000;

/**
 * Writes the current owner and ctime of each file into the index at `indexFile` (work tree
 * `workTree`) where nothing else of the file changed. Answers how many entries were updated.
 */
export function restampIndex(indexFile: string, workTree: string, hash: 'sha1' | 'sha256'): number {
  const index = readFileSync(indexFile);
  const hashBytes = hash === 'sha1' ? 20 : 32;
  if (index.length < 12 + hashBytes || index.toString('latin1', 0, 4) !== 'DIRC') return 0;
  const version = index.readUInt32BE(4);
  if (version !== 2 && version !== 3) return 0;
  const count = index.readUInt32BE(8);
  let at = 12;
  let updated = 0;
  for (let i = 0; i < count; i++) {
    const flags = index.readUInt16BE(at + 40 + hashBytes);
    const extended = (flags & 0x4000) !== 0;
    const nameStart = at + 40 + hashBytes + 2 + (extended ? 2 : 0);
    const nameEnd = index.indexOf(0, nameStart);
    if (nameEnd < 0) return 0;
    const path = index.toString('utf8', nameStart, nameEnd);
    const mode = index.readUInt32BE(at + 24);
    if ((mode & 0o170000) !== GITLINK && stampEntry(index, at, join(workTree, path), mode)) updated++;
    // Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
    at += (nameEnd - at + 8) & ~7;
  }
  if (updated === 0) return 0;
  const body = index.length - hashBytes;
  createHash(hash).update(index.subarray(0, body)).digest().copy(index, body);
  writeFileSync(indexFile, index);
  return updated;
}

/** Updates one entry's ctime, uid and gid from its file, when size, mtime, inode and type match. */
function stampEntry(index: Buffer, at: number, file: string, mode: number): boolean {
  let stat;
  try {
    stat = lstatSync(file, { bigint: true });
  } catch {
    return false;
  }
  const low = (value: bigint) => Number(value & 0xffffffffn);
  const second = (ns: bigint) => low(ns / 1_000_000_000n);
  const nano = (ns: bigint) => Number(ns % 1_000_000_000n);
  const same =
    index.readUInt32BE(at + 8) === second(stat.mtimeNs) &&
    index.readUInt32BE(at + 12) === nano(stat.mtimeNs) &&
    index.readUInt32BE(at + 20) === low(stat.ino) &&
    index.readUInt32BE(at + 36) === low(stat.size) &&
    (mode & 0o170000) === (Number(stat.mode) & 0o170000);
  if (!same) return false;
  index.writeUInt32BE(second(stat.ctimeNs), at);
  index.writeUInt32BE(nano(stat.ctimeNs), at + 4);
  index.writeUInt32BE(low(stat.uid), at + 28);
  index.writeUInt32BE(low(stat.gid), at + 32);
  return true;
}
