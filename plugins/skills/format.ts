/**
 * The Agent Skills format: a folder holding SKILL.md, whose YAML front matter has `name` (1-64 of
 * [a-z0-9-], equal to the folder's name), `description` (1-1024 characters by the format; a longer
 * one, as some publishers ship, is kept with a note, and the prompt shows its beginning) and optionally
 * `allowed-tools`, `license`, `compatibility`, `metadata`; the Markdown body is the instructions.
 *
 * Front matter is YAML, read by the `yaml` library (the project's YAML parser everywhere) under its
 * failsafe schema: text, lists and one level of map, which is what SKILL.md files use; no tag runs.
 */

import { LineCounter, parseDocument } from 'yaml';

export const SKILL_NAME = /^[a-z0-9-]{1,64}$/;
export const MAX_DESCRIPTION = 1024;

export interface SkillDoc {
  name: string;
  description: string;
  allowedTools: string[];
  license?: string;
  metadata: Record<string, string>;
  /** The Markdown instructions after the front matter. */
  body: string;
  /** What does not follow the format but was accepted (shown by the skills listing and logged). */
  notes: string[];
}

export class SkillFormatError extends Error {
  constructor(
    message: string,
    /** The front matter field at fault, when one is. */
    readonly field?: string,
  ) {
    super(message);
  }
}

type Value = string | string[] | Record<string, string>;


/** A field's value: text, a list of texts, or one level of map to texts (null, `key:` alone, is ''). */
function field(key: string, v: unknown): Value {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v;
  if (typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string')) return v as Record<string, string>;
  throw new SkillFormatError(`front matter ${key}: expected text, a list of texts, or "key: text" lines`, key);
}

/**
 * Parse a front matter block into its top-level keys, with the `yaml` library under the failsafe
 * schema: every scalar stays text (`license: 2.0` is "2.0"), no tag is resolved to anything but
 * text, a key given twice is an error.
 */
export function parseFrontMatter(text: string): Record<string, Value> {
  const lines = new LineCounter();
  const doc = parseDocument(text, { schema: 'failsafe', uniqueKeys: true, prettyErrors: false, lineCounter: lines });
  const error = doc.errors[0];
  if (error) throw new SkillFormatError(`front matter line ${lines.linePos(error.pos[0]).line}: ${error.message}`);
  const top: unknown = doc.toJS();
  if (top === null || top === undefined) return {};
  if (typeof top !== 'object' || Array.isArray(top)) throw new SkillFormatError('front matter must be "key: value" lines');
  return Object.fromEntries(Object.entries(top).map(([k, v]) => [k, field(k, v)]));
}

/** Split SKILL.md into front matter text and body; throws when the front matter is missing. */
function split(text: string): { yaml: string; body: string } {
  const src = text.replace(/^\uFEFF/, '');
  const m = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(src);
  if (!m) throw new SkillFormatError('SKILL.md must start with YAML front matter between two "---" lines');
  return { yaml: m[1], body: src.slice(m[0].length) };
}

/**
 * Parse and validate SKILL.md. `folder` is the name of the folder holding it: the skill's name
 * must equal it. Throws SkillFormatError with a message for the person who wrote the file.
 */
export function parseSkill(text: string, folder?: string): SkillDoc {
  const { yaml, body } = split(text);
  const fm = parseFrontMatter(yaml);
  const name = fm.name;
  if (typeof name !== 'string' || !name) throw new SkillFormatError('front matter needs name', 'name');
  if (!SKILL_NAME.test(name)) throw new SkillFormatError(`name ${JSON.stringify(name.slice(0, 80))} must be 1-64 characters of a-z, 0-9 and -`, 'name');
  if (folder !== undefined && name !== folder) throw new SkillFormatError(`name ${name} must equal its folder's name ${folder}`, 'name');
  const description = fm.description;
  if (typeof description !== 'string' || !description.trim()) throw new SkillFormatError('front matter needs description (1-1024 characters)', 'description');
  const notes: string[] = [];
  // Real publishers ship longer ones (Anthropic's claude-api: 1,068): refusing the skill helps no one.
  if (description.length > MAX_DESCRIPTION) notes.push(`description is ${description.length} characters, over the format's ${MAX_DESCRIPTION}; the prompt shows its beginning`);
  const tools = fm['allowed-tools'];
  let allowedTools: string[] = [];
  if (typeof tools === 'string') allowedTools = tools.split(/[\s,]+/).filter(Boolean);
  else if (Array.isArray(tools)) allowedTools = tools;
  else if (tools !== undefined) throw new SkillFormatError('allowed-tools must be a list or a space-separated string', 'allowed-tools');
  const metadata = fm.metadata;
  if (metadata !== undefined && (typeof metadata !== 'object' || Array.isArray(metadata))) throw new SkillFormatError('metadata must be a map of strings', 'metadata');
  return {
    name,
    description: description.trim(),
    allowedTools,
    license: typeof fm.license === 'string' ? fm.license : undefined,
    metadata: (metadata as Record<string, string>) ?? {},
    body: body.trim(),
    notes,
  };
}
