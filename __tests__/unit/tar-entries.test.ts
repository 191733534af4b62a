// An image layer's tar is read header by header as it is hashed (images/tar-entries.ts): a sparse
// file (a few hundred bytes of tar that unpack to as many bytes as its header claims) is refused,
// and entries are counted against a bound. The tars are made by GNU tar, as an image's would be.

import { afterAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TarEntries } from '../../src/executor/images/tar-entries.js';
import { tempDir } from '../support/executor.js';

const work = tempDir('tar-entries-');
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A tar of `files` (name → content, or a size for a sparse file of that many bytes), in `format`. */
function tarOf(name: string, files: Record<string, string | number>, options: string[]): Buffer {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(join(dir, file, '..'), { recursive: true });
    if (typeof content === 'number') {
      writeFileSync(join(dir, file), '');
      truncateSync(join(dir, file), content);
    } else writeFileSync(join(dir, file), content);
  }
  const out = join(work, `${name}.tar`);
  execFileSync('tar', [...options, '-cf', out, '-C', dir, '.']);
  return readFileSync(out);
}

/** Feeds `tar` in pieces of `size` bytes (headers split across pieces); answers the reader. */
function read(tar: Buffer, max: number, size = 97): TarEntries {
  const entries = new TarEntries(max, why => new Error(`refused: ${why}`));
  for (let at = 0; at < tar.length; at += size) entries.feed(tar.subarray(at, at + size));
  return entries;
}

describe("an image layer's tar entries", () => {
  const long = `${'d'.repeat(120)}/${'f'.repeat(150)}.txt`;
  const files = { 'a.txt': 'one', 'b/c.txt': 'two'.repeat(300), [long]: 'deep' };

  it('counts files, folders and long names in PAX and GNU tars alike', () => {
    // ./, a.txt, b/, b/c.txt, the long folder and its file.
    expect(read(tarOf('pax', files, ['--format=posix']), 100).entries).toBe(6);
    expect(read(tarOf('gnu', files, ['--format=gnu']), 100, 4096).entries).toBe(6);
  });

  it('refuses more entries than its bound, naming it', () => {
    const many = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`f${i}`, '']));
    expect(() => read(tarOf('many', many, ['--format=posix']), 10)).toThrow(
      'refused: more than 10 entries (files, folders and links)'
    );
  });

  it('refuses a sparse file: 600 MB claimed by a few KB of tar, in the PAX and the old GNU form', () => {
    const pax = tarOf('sparse-pax', { 'big.bin': 600 * 1024 ** 2 }, ['--sparse', '--format=posix']);
    expect(pax.length).toBeLessThan(64 * 1024);
    expect(() => read(pax, 100)).toThrow('refused: a sparse file (GNU.sparse PAX records)');
    const gnu = tarOf('sparse-gnu', { 'big.bin': 600 * 1024 ** 2 }, ['--sparse', '--format=gnu']);
    expect(() => read(gnu, 100)).toThrow('refused: a sparse file (GNU tar type S)');
  });

  it('reads an entry\'s length from its PAX size record, as the unpacker does, so no sparse entry hides in "data"', () => {
    const sparse = tarOf('sparse-hidden', { 'big.bin': 600 * 1024 ** 2 }, ['--sparse', '--format=posix']);
    // A PAX header saying the next entry's data is 0 bytes, then an entry whose own header claims
    // the sparse entry's bytes as its data: a reader trusting the header would skip the sparse one.
    const record = 'size=0';
    const line = `${record.length + 4} ${record}\n`;
    const paxData = Buffer.alloc(512);
    paxData.write(line);
    const disguise = header('cover.txt', '0', sparse.length - 1024);
    const crafted = Buffer.concat([header('pax', 'x', line.length), paxData, disguise, sparse]);
    expect(() => read(crafted, 100)).toThrow('refused: a sparse file (GNU.sparse PAX records)');
    // A global size record would set every entry's length: refused.
    const global = Buffer.concat([header('g', 'g', line.length), paxData, sparse]);
    expect(() => read(global, 100)).toThrow('refused: a PAX size record "0"');
  });
});

/** A ustar header block: `name`, type flag, size (octal), with its checksum. */
function header(name: string, type: string, size: number): Buffer {
  const block = Buffer.alloc(512);
  block.write(name, 0);
  block.write('0000644\0', 100);
  block.write('0000000\0', 108);
  block.write('0000000\0', 116);
  block.write(`${size.toString(8).padStart(11, '0')}\0`, 124);
  block.write('00000000000\0', 136);
  block.write(type, 156);
  block.write('ustar\0', 257);
  block.write('00', 263);
  block.fill(' ', 148, 156);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return block;
}
