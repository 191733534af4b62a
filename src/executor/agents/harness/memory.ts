// What a CLI's translator remembers from one line to the next, bounded. The stream is the CLI's
// stdout, and anything that runs in the run's sandbox can write lines to it (a tool's process opens
// /proc/<the CLI>/fd/1), so the translator must not grow with what it is sent: Gemini's streamed
// text joined without limit, and the tool calls each translator remembered (their ids and the
// files they edit) were never forgotten, so a forged stream of 1 MiB lines grew the executor's
// heap until it crashed, with every run of the node. Text is kept up to a size (what is left out
// is counted, for the note that says so); calls past a size are not remembered (a call then loses
// its `file` event, or is shown twice), and a call is forgotten once its result came.

/** Characters of the final answer kept (as AGENT_RESULT_FILE's 1 MiB). */
export const MAX_RESULT_CHARS = 1024 * 1024;
/** Characters of one message of streamed text: a longer one is given out in parts. */
export const MAX_MESSAGE_PART_CHARS = 64 * 1024;
/** Characters of remembered call ids and paths, all together; a longer id or path is never kept. */
const MAX_REMEMBERED_CHARS = 1024 * 1024;
const MAX_ID_OR_PATH_CHARS = 4096;

/** Tool calls remembered by id until their result comes (at most MAX_REMEMBERED_CHARS of them). */
export class CallMemory<V extends string | true> {
  private readonly calls = new Map<string, V>();
  private chars = 0;

  private static size(id: string, value: string | true): number {
    return id.length + (value === true ? 0 : value.length);
  }

  /** Remembers `value` for `id` when both are short and there is room; answers whether it did. */
  set(id: string, value: V): boolean {
    const size = CallMemory.size(id, value);
    if (value !== true && value.length > MAX_ID_OR_PATH_CHARS) return false;
    if (id.length > MAX_ID_OR_PATH_CHARS || this.chars + size > MAX_REMEMBERED_CHARS) return false;
    this.forget(id);
    this.calls.set(id, value);
    this.chars += size;
    return true;
  }

  get(id: string): V | undefined {
    return this.calls.get(id);
  }

  has(id: string): boolean {
    return this.calls.has(id);
  }

  forget(id: string): void {
    const value = this.calls.get(id);
    if (value === undefined) return;
    this.calls.delete(id);
    this.chars -= CallMemory.size(id, value);
  }
}

/** Text gathered from parts, kept up to `max` characters; the rest only counted. */
export class BoundedText {
  private kept = '';
  private more = 0;

  constructor(private readonly max: number) {}

  add(part: string): void {
    const room = this.max - this.kept.length;
    if (part.length <= room) this.kept += part;
    else {
      this.kept += part.slice(0, Math.max(0, room));
      this.more += part.length - Math.max(0, room);
    }
  }

  set(text: string): void {
    this.clear();
    this.add(text);
  }

  clear(): void {
    this.kept = '';
    this.more = 0;
  }

  get length(): number {
    return this.kept.length;
  }

  /** The text kept, and how many characters past it were left out (`dropped`, when any were). */
  get value(): { text: string; dropped?: number } {
    return this.more > 0 ? { text: this.kept, dropped: this.more } : { text: this.kept };
  }
}
