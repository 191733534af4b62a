// A fan-out list read into items, for both sides that fan out: the action's `fan-out` input
// (src/action/inputs.ts) and `agent-run run --fan-out FILE` (src/cli/commands/fan-out.ts). A YAML
// list whose entries are a prompt (a string) or a mapping of the fields an item may set for itself;
// each problem names the item (by its index, as the `runs` output numbers them), the field and the
// form expected. Each side then turns an item into a create request with its own defaults.

import { parse } from 'yaml';
import { RUN_MODE_WORDS, type RunMode, isRunMode, showValue } from '../api/index.js';

/** Most items one step may fan out to: every item is a run of the team's queue. */
export const MAX_FAN_OUT_ITEMS = 50;
/** Most runs a step keeps in flight at once (`max-parallel`). */
export const MAX_PARALLEL = 20;

/** One item as written: every field is optional and falls back to the step's input of that name. */
export interface FanOutItemInput {
  prompt?: string;
  'prompt-file'?: string;
  'environment-id'?: string;
  title?: string;
  /** Merged over the step's `config`. */
  config?: Record<string, unknown>;
  mode?: RunMode;
}

const FIELDS = ['prompt', 'prompt-file', 'environment-id', 'title', 'config', 'mode'] as const;
const ITEM_FORM =
  'a prompt (a string) or a mapping with prompt or prompt-file and optionally environment-id, title, config, mode';
export const FAN_OUT_FORM = `a YAML list of 1–${MAX_FAN_OUT_ITEMS} items, each ${ITEM_FORM}`;

/** The items of a non-empty `fan-out` input; problems are pushed, and their items left out. */
export function parseFanOut(raw: string, problems: string[]): FanOutItemInput[] {
  let value: unknown;
  try {
    value = parse(raw, { maxAliasCount: 10 });
  } catch (error) {
    const why = (error as Error).message.split('\n')[0]!.slice(0, 200);
    problems.push(`fan-out is not valid YAML (${why}): expected ${FAN_OUT_FORM}`);
    return [];
  }
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_FAN_OUT_ITEMS) {
    const what = Array.isArray(value) ? `a list of ${value.length} items` : showValue(raw, 80);
    problems.push(`fan-out ${what}: expected ${FAN_OUT_FORM}`);
    return [];
  }
  const items: FanOutItemInput[] = [];
  value.forEach((entry: unknown, index) => {
    const item = readItem(entry, `fan-out[${index}]`, problems);
    if (item) items.push(item);
  });
  return items;
}

function readItem(entry: unknown, name: string, problems: string[]): FanOutItemInput | undefined {
  if (typeof entry === 'string') {
    if (entry.trim() !== '') return { prompt: entry };
    problems.push(`${name} is an empty string: expected ${ITEM_FORM}`);
    return undefined;
  }
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
    problems.push(`${name} ${showValue(entry)}: expected ${ITEM_FORM}`);
    return undefined;
  }
  const fields = entry as Record<string, unknown>;
  const before = problems.length;
  for (const key of Object.keys(fields)) {
    if (!(FIELDS as readonly string[]).includes(key))
      problems.push(`${name}.${key.slice(0, 60)}: not an item field; expected one of ${FIELDS.join(', ')}`);
  }
  const item: FanOutItemInput = {};
  for (const key of ['prompt', 'prompt-file', 'environment-id', 'title'] as const) {
    const value = fields[key];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string' || value.trim() === '')
      problems.push(`${name}.${key} ${showValue(value)}: expected a non-empty string`);
    else item[key] = value;
  }
  if (item.prompt !== undefined && item['prompt-file'] !== undefined)
    problems.push(`${name}: prompt and prompt-file are both set; give one of them`);
  const config = fields.config;
  if (config !== undefined && config !== null) {
    const parsed = typeof config === 'string' ? parseJsonObject(config) : config;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      problems.push(
        `${name}.config ${showValue(config)}: expected a mapping (or a JSON object), e.g. {model_id: auto}`
      );
    else item.config = parsed as Record<string, unknown>;
  }
  const mode = fields.mode;
  if (mode !== undefined && mode !== null) {
    if (isRunMode(mode)) item.mode = mode;
    else problems.push(`${name}.mode ${showValue(mode, 40)}: expected ${RUN_MODE_WORDS}`);
  }
  return problems.length === before ? item : undefined;
}

function parseJsonObject(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
