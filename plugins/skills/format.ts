/**
 * The Agent Skills format: a folder holding SKILL.md, whose YAML front matter has `name` (1-64 of
 * [a-z0-9-], equal to the folder's name), `description` (1-1024 characters by the format; a longer
 * one, as some publishers ship, is kept with a note, and the prompt shows its beginning) and optionally
 * `allowed-tools`, `license`, `compatibility`, `metadata`; the Markdown body is the instructions.
 *
 * Front matter is read by a small YAML subset parser (scalars, quoted strings, block scalars `|`
 * and `>`, flow and block lists, one level of nested map): what SKILL.md files use, and no
 * dependency that executes tags.
 */

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

function unquote(raw: string): string {
  const v = raw.trim();
  if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) {
    try {
      return JSON.parse(v) as string;
    } catch {
      throw new SkillFormatError(`bad double-quoted string ${v.slice(0, 40)}`);
    }
  }
  if (v.length >= 2 && v.startsWith("'") && v.endsWith("'")) return v.slice(1, -1).replace(/''/g, "'");
  // A plain scalar ends at ` #` (a comment).
  return v.replace(/\s+#.*$/, '');
}

function flowList(raw: string): string[] {
  const inner = raw.trim().slice(1, -1).trim();
  return inner ? inner.split(',').map((s) => unquote(s)).filter(Boolean) : [];
}

/** Parse the YAML subset of a front matter block into top-level keys. */
export function parseFrontMatter(yaml: string): Record<string, Value> {
  const lines = yaml.split(/\r?\n/);
  const out: Record<string, Value> = {};
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!line.trim() || line.trimStart().startsWith('#')) continue;
    if (/^\s/.test(line)) throw new SkillFormatError(`front matter line ${i + 1}: unexpected indentation`);
    const m = /^([A-Za-z0-9_-]+):(?:\s+(.*)|\s*)$/.exec(line);
    if (!m) throw new SkillFormatError(`front matter line ${i + 1}: expected "key: value"`);
    const [, key, rest = ''] = m;
    if (key in out) throw new SkillFormatError(`front matter line ${i + 1}: ${key} given twice`, key);
    const value = rest.trim();
    // Indented lines that follow belong to this key.
    const block: string[] = [];
    while (i + 1 < lines.length && (/^\s/.test(lines[i + 1]) || !lines[i + 1].trim())) block.push(lines[++i]);
    while (block.length && !block.at(-1)!.trim()) block.pop();
    if (value === '|' || value === '>' || value === '|-' || value === '>-') {
      const indent = Math.min(...block.filter((l) => l.trim()).map((l) => l.length - l.trimStart().length));
      const texts = block.map((l) => l.slice(Number.isFinite(indent) ? indent : 0));
      out[key] = value.startsWith('|') ? texts.join('\n') : texts.map((t) => t.trim()).join(' ').replace(/\s+/g, ' ');
    } else if (value.startsWith('[') && value.endsWith(']')) {
      out[key] = flowList(value);
    } else if (value === '') {
      const items = block.filter((l) => l.trim());
      if (items.every((l) => l.trim().startsWith('- '))) out[key] = items.map((l) => unquote(l.trim().slice(2)));
      else {
        const map: Record<string, string> = {};
        for (const l of items) {
          const mm = /^\s+([A-Za-z0-9_.-]+):\s*(.*)$/.exec(l);
          if (!mm) throw new SkillFormatError(`front matter ${key}: expected "key: value" lines or "- item" lines`, key);
          map[mm[1]] = unquote(mm[2]);
        }
        out[key] = map;
      }
    } else {
      // A plain or quoted scalar, possibly folded over indented continuation lines.
      out[key] = [unquote(value), ...block.map((l) => l.trim())].filter(Boolean).join(' ');
    }
  }
  return out;
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
