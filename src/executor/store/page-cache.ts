// List pages held in memory between writes. A page of runs costs node:sqlite about 3 µs a row to turn
// into objects, and clients poll the same page over and over while nothing changes. A page is kept
// only under a stamp that moves on every write: SQLite's total_changes() (rows this connection has
// inserted, updated or deleted) with PRAGMA data_version (moves when any other connection, in this
// process or another, committed). Any write anywhere therefore empties the cache before the next
// list is answered, so a cached page never shows anything an uncached read would not.

const MAX_PAGES = 256;

export class PageCache<T> {
  private stamp = '';
  private readonly pages = new Map<string, T>();

  /** The page for `key` read under this `stamp`, or the one `load` reads now (kept under it). */
  get(stamp: string, key: string, load: () => T): T {
    if (stamp !== this.stamp) {
      this.pages.clear();
      this.stamp = stamp;
    }
    let page = this.pages.get(key);
    if (page === undefined) {
      page = load();
      if (this.pages.size >= MAX_PAGES) this.pages.delete(this.pages.keys().next().value!);
      this.pages.set(key, page);
    }
    return page;
  }
}
