/**
 * Example values from the document's own JSON Schemas, so every operation of the page shows a
 * request and a response without examples written by hand (which would drift from the schemas).
 * Uses what a schema says first (`example`, `default`, `const`, `enum`), then its type and format.
 */

// biome-ignore lint/suspicious/noExplicitAny: JSON Schema objects, read field by field
export type Schema = any;
export type Components = Record<string, Schema>;

const STRINGS: Record<string, string> = {
  'date-time': '2026-01-01T12:00:00.000Z',
  date: '2026-01-01',
  uri: 'https://example.com/',
  email: 'ada@example.com',
  uuid: '00000000-0000-4000-8000-000000000000',
  binary: '<file bytes>',
};

/** A plausible value for a property, by its name, when the schema says no more than "string". */
function named(name: string | undefined): string {
  if (!name) return 'string';
  if (name === 'session_id') return 'sess_abc123';
  if (name === 'user_id') return 'user_abc123';
  if (name.endsWith('_id') || name === 'id') return `${name.replace(/_id$/, '')}_abc123`;
  if (name.endsWith('_at')) return STRINGS['date-time'];
  if (name === 'message') return 'Summarise the README';
  if (name === 'name' || name === 'intent' || name === 'title') return 'My example';
  return name;
}

export function example(schema: Schema, components: Components, name?: string, depth = 0): unknown {
  if (!schema || depth > 8) return null;
  if (schema.$ref) return example(components[String(schema.$ref).split('/').pop() ?? ''], components, name, depth + 1);
  if (schema.example !== undefined) return schema.example;
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  if (schema.const !== undefined) return schema.const;
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  const alt = schema.oneOf ?? schema.anyOf;
  if (Array.isArray(alt) && alt.length) return example(alt.find((s: Schema) => s.type !== 'null') ?? alt[0], components, name, depth + 1);
  if (Array.isArray(schema.allOf)) return Object.assign({}, ...schema.allOf.map((s: Schema) => example(s, components, name, depth + 1)));
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(schema.properties ?? {})) out[k] = example(v, components, k, depth + 1);
      return out;
    }
    case 'array':
      return schema.items ? [example(schema.items, components, name, depth + 1)] : [];
    case 'integer':
    case 'number':
      return schema.minimum ?? (schema.exclusiveMinimum !== undefined ? Number(schema.exclusiveMinimum) + 1 : 1);
    case 'boolean':
      return true;
    case 'string':
      return STRINGS[schema.format] ?? named(name);
    default:
      return schema.properties ? example({ ...schema, type: 'object' }, components, name, depth + 1) : null;
  }
}
