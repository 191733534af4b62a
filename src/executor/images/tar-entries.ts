// Reads a layer's tar headers as its bytes go by (images/cache.ts hashes and counts the same
// stream), so what an entry unpacks to is known before anything is written. The tar's own length
// bounds what its regular files write, except for sparse files: a PAX sparse entry (GNU.sparse.*
// records, or the GNU 'S' type) of a few hundred bytes unpacks to as many bytes as its header
// claims. Those are refused; and entries are counted, since empty files and folders cost inodes the
// byte bound does not see.

const BLOCK = 512;
/** PAX header data is kept whole to look for sparse records; a larger one is refused. */
const MAX_PAX_BYTES = 1 << 20;

export class TarEntries {
  /** Entries seen (headers of files, folders, links…; PAX and long-name records not counted). */
  entries = 0;
  private pending = Buffer.alloc(0);
  /** Bytes of the current entry's data still to pass (padded to the block). */
  private skip = 0;
  /** The data of a PAX header being gathered, and how much of it is still to come. */
  private pax?: { parts: Buffer[]; left: number; padding: number; global: boolean };
  /** A PAX `size` record's value: the next entry's data length, in place of its header's. */
  private nextSize?: number;

  /** `refuse` answers the error to throw, given why. */
  constructor(
    private readonly maxEntries: number,
    private readonly refuse: (why: string) => Error
  ) {}

  /** The next layer's tar begins (the entries counted so far stay counted). */
  nextTar(): void {
    this.pending = Buffer.alloc(0);
    this.skip = 0;
    this.pax = undefined;
    this.nextSize = undefined;
  }

  /** Takes the next bytes of the tar; throws `refuse(…)` at a sparse entry or past maxEntries. */
  feed(chunk: Buffer): void {
    let data = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = Buffer.alloc(0);
    while (data.length > 0) {
      if (this.pax) {
        const take = Math.min(this.pax.left, data.length);
        this.pax.parts.push(data.subarray(0, take));
        this.pax.left -= take;
        data = data.subarray(take);
        if (this.pax.left > 0) return;
        this.checkPax(Buffer.concat(this.pax.parts), this.pax.global);
        this.skip = this.pax.padding;
        this.pax = undefined;
        continue;
      }
      if (this.skip > 0) {
        const take = Math.min(this.skip, data.length);
        this.skip -= take;
        data = data.subarray(take);
        continue;
      }
      if (data.length < BLOCK) {
        this.pending = Buffer.from(data);
        return;
      }
      this.header(data.subarray(0, BLOCK));
      data = data.subarray(BLOCK);
    }
  }

  private header(block: Buffer): void {
    if (block.every(byte => byte === 0)) return; // the end-of-archive blocks
    const type = String.fromCharCode(block[156]!);
    const field = entrySize(block.subarray(124, 136));
    if (field === undefined) throw this.refuse('a tar header with an unreadable size');
    // The unpacker reads an entry's length from a PAX `size` record where there is one: so does this.
    const size = type === 'x' || type === 'g' ? field : (this.nextSize ?? field);
    if (type !== 'x' && type !== 'g') this.nextSize = undefined;
    const padded = Math.ceil(size / BLOCK) * BLOCK;
    if (type === 'S') throw this.refuse('a sparse file (GNU tar type S)');
    if (type === 'x' || type === 'g') {
      if (size > MAX_PAX_BYTES) throw this.refuse(`a PAX header of ${size} bytes`);
      this.pax = { parts: [], left: size, padding: padded - size, global: type === 'g' };
      if (size === 0) {
        this.pax = undefined;
        this.skip = padded;
      }
      return;
    }
    if (type !== 'L' && type !== 'K') {
      this.entries++;
      if (this.entries > this.maxEntries)
        throw this.refuse(`more than ${this.maxEntries} entries (files, folders and links)`);
    }
    this.skip = padded;
  }

  /**
   * PAX records are `LENGTH KEY=VALUE\n`: a GNU.sparse key makes the next entry a sparse file, and a
   * `size` key gives the next entry's data length (a global one would give every entry's: refused).
   */
  private checkPax(data: Buffer, global: boolean): void {
    const text = data.toString('latin1');
    if (/(^|\n)\d+ GNU\.sparse\./.test(text)) throw this.refuse('a sparse file (GNU.sparse PAX records)');
    const sizes = [...text.matchAll(/(?:^|\n)\d+ size=([^\n]*)\n/g)].map(match => match[1]!);
    if (sizes.length === 0) return;
    const value = sizes[sizes.length - 1]!;
    if (global || !/^\d{1,15}$/.test(value))
      throw this.refuse(`a PAX size record ${JSON.stringify(value.slice(0, 20))}`);
    this.nextSize = Number(value);
  }
}

/** A header's size field: octal digits (NUL or space ended), or base-256 when its first bit is set. */
function entrySize(field: Buffer): number | undefined {
  if (field[0] === 0xff) return undefined; // a negative base-256 number
  if ((field[0]! & 0x80) !== 0) {
    let value = field[0]! & 0x7f;
    for (const byte of field.subarray(1)) value = value * 256 + byte;
    return Number.isSafeInteger(value) ? value : undefined;
  }
  const text = field
    .toString('latin1')
    .replace(/[\0 ]+$/, '')
    .trim();
  if (text === '') return 0;
  return /^[0-7]+$/.test(text) ? parseInt(text, 8) : undefined;
}
