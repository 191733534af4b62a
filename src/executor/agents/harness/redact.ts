// Removing a run's secrets from what its CLI prints, in one pass over each string whatever their
// number: the secrets (listed variables, MCP env values and headers) become one Aho–Corasick matcher
// when the run starts, and each string is read once, each character looked up once (amortised).
// A split/join per secret per line cost the whole API its event loop once a run had thousands.
// Every character that lies inside any occurrence of any secret is hidden: where occurrences
// overlap or one lies within another, their union becomes one `[redacted]`, so a longer secret goes
// whole and no piece of one is left beside another's mark.

export const REDACTED = '[redacted]';

/** A function hiding every occurrence of `secrets` in a string; built once, used for every line. */
export function secretRedactor(secrets: readonly string[]): (text: string) => string {
  const patterns = [...new Set(secrets)].filter(secret => secret.length > 0);
  if (patterns.length === 0) return text => text;
  const matcher = linkFailures(buildTrie(patterns));
  return text => hideSpans(text, matchedSpans(matcher, text));
}

/**
 * The trie: one map of edges keyed by (node, UTF-16 code unit) for all nodes, far smaller than
 * a map per node when most nodes have one child, as secrets' tails do. Node 0 is the root.
 */
interface Trie {
  edges: Map<number, number>;
  /** Per node: its distance from the root, whether a secret ends there, and its children's units. */
  depth: number[];
  terminal: boolean[];
  children: number[][];
}

/** The matcher: the trie with failure links, and per node `longest`, the longest secret that ends there. */
interface Matcher {
  edges: Map<number, number>;
  fail: Int32Array;
  longest: Int32Array;
}

/** The edge key of `unit` from `node`. */
function key(node: number, unit: number): number {
  return node * 0x10000 + unit;
}

/** The trie of `patterns`. */
function buildTrie(patterns: string[]): Trie {
  const trie: Trie = { edges: new Map(), depth: [0], terminal: [false], children: [[]] };
  const { edges, depth, terminal, children } = trie;
  for (const pattern of patterns) {
    let node = 0;
    for (let i = 0; i < pattern.length; i++) {
      const unit = pattern.charCodeAt(i);
      let next = edges.get(key(node, unit));
      if (next === undefined) {
        next = depth.length;
        edges.set(key(node, unit), next);
        depth.push(depth[node]! + 1);
        terminal.push(false);
        children.push([]);
        children[node]!.push(unit);
      }
      node = next;
    }
    terminal[node] = true;
  }
  return trie;
}

/**
 * Failure links, breadth first; `longest[node]`: the longest secret that ends the text matched
 * so far at this node (the node's own, else its failure node's), 0 for none.
 */
function linkFailures({ edges, depth, terminal, children }: Trie): Matcher {
  const count = depth.length;
  const fail = new Int32Array(count);
  const longest = new Int32Array(count);
  const queue: number[] = [0];
  for (let head = 0; head < queue.length; head++) {
    const node = queue[head]!;
    for (const unit of children[node]!) {
      const child = edges.get(key(node, unit))!;
      let link = 0;
      if (node !== 0) {
        let back = fail[node]!;
        while (back !== 0 && !edges.has(key(back, unit))) back = fail[back]!;
        link = edges.get(key(back, unit)) ?? 0;
      }
      fail[child] = link;
      longest[child] = terminal[child] ? depth[child]! : longest[link]!;
      queue.push(child);
    }
  }
  return { edges, fail, longest };
}

/** Spans of `text` to hide, [start, end), ordered and never overlapping (touching ones stay two). */
function matchedSpans({ edges, fail, longest }: Matcher, text: string): { starts: number[]; ends: number[] } {
  const starts: number[] = [];
  const ends: number[] = [];
  let node = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    let next = edges.get(key(node, unit));
    while (next === undefined && node !== 0) {
      node = fail[node]!;
      next = edges.get(key(node, unit));
    }
    node = next ?? 0;
    const length = longest[node]!;
    if (length === 0) continue;
    const start = i + 1 - length;
    // A span this one covers goes; one it overlaps grows to its end.
    while (starts.length > 0 && start <= starts.at(-1)!) {
      starts.pop();
      ends.pop();
    }
    if (starts.length > 0 && start < ends.at(-1)!) ends[ends.length - 1] = i + 1;
    else {
      starts.push(start);
      ends.push(i + 1);
    }
  }
  return { starts, ends };
}

/** `text` with each span replaced by one REDACTED. */
function hideSpans(text: string, { starts, ends }: { starts: number[]; ends: number[] }): string {
  if (starts.length === 0) return text;
  let out = '';
  let from = 0;
  for (let k = 0; k < starts.length; k++) {
    out += text.slice(from, starts[k]) + REDACTED;
    from = ends[k]!;
  }
  return out + text.slice(from);
}
