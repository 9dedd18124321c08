import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { z } from 'zod';
import { ROOT } from '../../platform/lib/assets.js';
import { RuleSchema } from '../../platform/config/policy.js';

/**
 * The solutions catalogue (docs/solutions-and-admin.md): packages `templates/solutions/<id>/solution.json` shipped
 * with the service, `AGENTSVC_HOME/solutions/<id>/` installed by the operator, and `solutions/<id>/`
 * inside plugin folders. Each is validated once at start; a broken one is reported and skipped.
 */

const ID = /^[a-z0-9][a-z0-9_-]{0,127}$/;
const SKILL = /^[a-z0-9-]{1,64}$/;

export const RoleSchema = z
  .object({
    id: z.string().regex(ID, 'role ids are 1-128 of [a-z0-9_-]'),
    name: z.string().min(1).max(200),
    description: z.string().max(5000).default(''),
    system_prompt: z.string().min(1).max(200000),
    /** Tool or provider names the role may use; omitted or ["*"]: every tool; []: none. */
    tools: z.array(z.string().min(1).max(200)).max(500).nullable().default(null),
    initial_mode: z.enum(['planning', 'executing']).nullable().default(null),
    skills: z.array(z.string().regex(SKILL, 'skill names are 1-64 of [a-z0-9-]')).max(200).default([]),
    /** Tool policy rules of sessions with this role (docs/policy.md); a bad rule skips the solution. */
    policy: z.array(RuleSchema).max(1000).default([]),
    /**
     * Ceilings on the runs of this role's sessions, over the install's (docs/run-limits.md); each
     * omitted one is the install's. Bounds as the settings'.
     */
    run_limits: z
      .object({
        max_seconds: z.number().int().min(1).max(30 * 86400).optional(),
        max_tool_calls: z.number().int().min(1).max(1_000_000).optional(),
        loop_repeats: z.number().int().min(2).max(1000).optional(),
      })
      .strict()
      .nullable()
      .default(null),
  })
  .strict();

export const SolutionSchema = z
  .object({
    id: z.string().regex(ID, 'solution ids are 1-128 of [a-z0-9_-]'),
    name: z.string().min(1).max(200),
    version: z.string().min(1).max(64),
    description: z.string().max(5000).default(''),
    layout_type: z.string().max(64).default('default'),
    initial_message: z.string().max(20000).default(''),
    data: z.record(z.string(), z.unknown()).default({}),
    roles: z.array(RoleSchema).min(1).max(100),
  })
  .strict()
  .superRefine((s, ctx) => {
    const seen = new Set<string>();
    s.roles.forEach((r, i) => {
      if (seen.has(r.id)) ctx.addIssue({ code: 'custom', path: ['roles', i, 'id'], message: `duplicate role id ${r.id}` });
      seen.add(r.id);
    });
  });

export type Role = z.output<typeof RoleSchema>;
export type SolutionDoc = z.output<typeof SolutionSchema>;
export interface Solution extends SolutionDoc {
  /** The package folder (files are served from it, confined). */
  dir: string;
  source: string;
}

export interface SkillFiles {
  name: string;
  description: string;
  files: { path: string; content: Buffer }[];
}

function issues(e: z.ZodError): string {
  return e.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
}

/** Every file under dir (relative paths), no links followed, at most `max`. */
function walk(dir: string, max = 500): string[] {
  const out: string[] = [];
  const go = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (out.length >= max) return;
      const p = join(d, e.name);
      if (e.isDirectory()) go(p);
      else if (e.isFile()) out.push(relative(dir, p));
    }
  };
  go(dir);
  return out;
}

export function skillDescription(skillMd: string): string {
  const m = /^---\r?\n([\s\S]*?)\r?\n---/.exec(skillMd);
  const d = m ? /^description:\s*(.*)$/m.exec(m[1]) : null;
  return d ? d[1].trim().replace(/^["']|["']$/g, '') : '';
}

export class SolutionCatalog {
  private readonly byId = new Map<string, Solution>();

  constructor(readonly problems: string[] = []) {}

  /** Roots searched, in order; an id found twice keeps its first package. */
  static roots(home: string, plugins: string[]): { dir: string; source: string }[] {
    const roots = [{ dir: join(ROOT, 'templates', 'solutions'), source: 'builtin' }, { dir: join(home, 'solutions'), source: 'home' }];
    for (const p of plugins) {
      let dir: string;
      // A plugin path names its module file or its folder; solutions/ sits beside the module.
      if (p.startsWith('.') || isAbsolute(p)) dir = existsSync(resolve(p)) && statSync(resolve(p)).isFile() ? dirname(resolve(p)) : resolve(p);
      else {
        // An npm package: its folder (a package without package.json exports of it is skipped).
        try {
          dir = dirname(createRequire(join(ROOT, 'package.json')).resolve(`${p}/package.json`));
        } catch {
          continue;
        }
      }
      roots.push({ dir: join(dir, 'solutions'), source: `plugin:${p}` });
    }
    return roots;
  }

  static load(roots: { dir: string; source: string }[]): SolutionCatalog {
    const cat = new SolutionCatalog();
    for (const root of roots) {
      if (!existsSync(root.dir)) continue;
      for (const name of readdirSync(root.dir).sort()) {
        const dir = join(root.dir, name);
        if (!statSync(dir).isDirectory()) continue;
        const file = join(dir, 'solution.json');
        try {
          const doc = SolutionSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
          if (!doc.success) throw new Error(issues(doc.error));
          if (doc.data.id !== name) throw new Error(`id ${doc.data.id} differs from its folder name ${name}`);
          if (cat.byId.has(doc.data.id)) throw new Error(`solution ${doc.data.id} is already defined by ${cat.byId.get(doc.data.id)!.source}`);
          for (const r of doc.data.roles) for (const s of r.skills) if (!existsSync(join(dir, 'skills', s, 'SKILL.md'))) throw new Error(`role ${r.id}: skill ${s} has no skills/${s}/SKILL.md`);
          cat.byId.set(doc.data.id, { ...doc.data, dir: realpathSync(dir), source: root.source });
        } catch (e) {
          cat.problems.push(`solution ${file} skipped: ${(e as Error).message}`);
        }
      }
    }
    return cat;
  }

  list(): Solution[] {
    return [...this.byId.values()];
  }

  get(id: string): Solution | null {
    return this.byId.get(id) ?? null;
  }

  role(solutionId: string, roleId: string): { solution: Solution; role: Role } | null {
    const solution = this.get(solutionId);
    const role = solution?.roles.find((r) => r.id === roleId);
    return solution && role ? { solution, role } : null;
  }

  /** A file of a package, confined to its folder (no `..`, no link out); null when missing. */
  file(solutionId: string, path: string): { path: string; content: Buffer } | null {
    const s = this.get(solutionId);
    if (!s || path.includes('\0')) return null;
    const full = resolve(s.dir, path);
    if (full !== s.dir && !full.startsWith(s.dir + sep)) return null;
    try {
      const real = realpathSync(full);
      if (!real.startsWith(s.dir + sep) || !statSync(real).isFile()) return null;
      return { path: relative(s.dir, real), content: readFileSync(real) };
    } catch {
      return null;
    }
  }

  /** A skill shipped with a solution package (skills/<name>/...). */
  skill(solutionId: string, name: string): SkillFiles | null {
    const s = this.get(solutionId);
    if (!s || !SKILL.test(name)) return null;
    const dir = join(s.dir, 'skills', name);
    if (!existsSync(join(dir, 'SKILL.md'))) return null;
    const files = walk(dir).map((p) => ({ path: p, content: readFileSync(join(dir, p)) }));
    const md = files.find((f) => f.path === 'SKILL.md')!.content.toString('utf8');
    return { name, description: skillDescription(md), files };
  }
}
