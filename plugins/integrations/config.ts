import { z } from 'zod';

/**
 * config.json `integrations` (or AGENTSVC_INTEGRATIONS as JSON text): tool providers declared by
 * configuration. Today one kind: an OpenAPI 3 document turned into tools.
 *
 * `{"petstore": {"type": "openapi", "spec": "https://.../openapi.json" | "./file.json" | {...},
 *   "base_url": "https://api.example.com", "operations": ["listPets"], "tags": ["pets"],
 *   "auth": {"type": "bearer", "env": "PETSTORE_TOKEN"}}}`
 * Credentials are read per call from the session's env (its own, then the user's `default` env bucket).
 */

export const INTEGRATION_NAME = /^[a-z0-9_-]{1,32}$/;

const Auth = z.discriminatedUnion('type', [
  z.object({ type: z.literal('bearer'), env: z.string().min(1).max(128) }).strict(),
  z.object({ type: z.literal('header'), name: z.string().min(1).max(128), env: z.string().min(1).max(128) }).strict(),
  z.object({ type: z.literal('query'), name: z.string().min(1).max(128), env: z.string().min(1).max(128) }).strict(),
]);

const OpenApi = z
  .object({
    type: z.literal('openapi'),
    spec: z.union([z.string().min(1), z.record(z.string(), z.unknown())]),
    base_url: z.string().url().optional(),
    /** Offer only these operation ids (each must be in the document). */
    operations: z.array(z.string().min(1)).min(1).optional(),
    /** Offer only operations with one of these tags. */
    tags: z.array(z.string().min(1)).min(1).optional(),
    auth: Auth.optional(),
    timeout_ms: z.number().int().min(100).max(600_000).optional(),
    description: z.string().max(1000).optional(),
  })
  .strict();

export type OpenApiIntegration = z.output<typeof OpenApi>;
export type Integrations = Record<string, OpenApiIntegration>;

export function parseIntegrations(value: unknown): Integrations {
  let v = value;
  if (v === undefined || v === null || v === '') return {};
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch (e) {
      throw new Error(`not valid JSON (${(e as Error).message})`);
    }
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('must be a JSON object of integrations by name');
  const out: Integrations = {};
  for (const [name, entry] of Object.entries(v)) {
    if (!INTEGRATION_NAME.test(name)) throw new Error(`integration name ${JSON.stringify(name)} must be 1-32 of [a-z0-9_-]`);
    const r = OpenApi.safeParse(entry);
    if (!r.success) throw new Error(`integration ${name}: ${r.error.issues.map((i) => `${i.path.join('.') || 'entry'}: ${i.message}`).join('; ')}`);
    out[name] = r.data;
  }
  return out;
}
