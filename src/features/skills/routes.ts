import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../../platform/config/index.js';
import type { SessionFolders } from '../../core/files/session-folder.js';
import type { Conversation } from '../../core/conversation/conversation.js';
import { me } from '../../platform/server/auth.js';
import { AppError, Errors } from '../../platform/server/errors.js';
import type { SessionService } from '../../core/sessions/service.js';
// The skills plugin's public face (its index), never its internal modules.
import { type LoadedSkill, rank, type SkillLibrary, skillsPrompt, tokens, uploadSkill, UploadError } from '../../../plugins/skills/index.js';
import { sessionFiles } from '../plugin-host/files.js';
import * as S from './schemas.js';

export interface SkillRouteDeps {
  config: Config;
  /** The session folders: skill files written into one count against the storage quota. */
  folders: SessionFolders;
  sessions: SessionService;
  conversation: Conversation;
  library: () => SkillLibrary;
  /** Runs in flight list their tools again (a skill appeared or went away). */
  toolsChanged: () => void;
}

const pub = ({ doc: _doc, ...s }: LoadedSkill) => s;

function kindOf(path: string): 'script' | 'reference' | 'asset' | 'other' {
  if (/^scripts\//.test(path) || /\.(sh|py|mjs|js|ts|rb|pl)$/.test(path)) return 'script';
  if (/^(references?|docs)\//.test(path) || /\.(md|txt)$/.test(path)) return 'reference';
  if (/^assets\//.test(path)) return 'asset';
  return 'other';
}

/** The global and session skill endpoints (docs/plugins.md "Skills"), over the skills plugin. */
export const skillRoutes: FastifyPluginAsyncZod<SkillRouteDeps> = async (app, { config, folders, sessions, conversation, library, toolsChanged }) => {
  const tags = ['skills'];
  const files = sessionFiles(folders);
  const scopeOf = async (req: { params: { session_id: string } } & Parameters<typeof me>[0]) => {
    const userId = me(req).id;
    await sessions.getOwned(userId, req.params.session_id);
    return { userId, sessionId: req.params.session_id };
  };

  app.get('/api/skills', { schema: { tags, summary: 'Global skills (invalid ones too, with the reason)', response: { 200: z.array(S.Skill) } } }, async () =>
    (await library().globalSkills()).map(pub),
  );
  app.get('/api/skills/installed', { schema: { tags, summary: 'Global skills offered to agents', response: { 200: z.array(S.Skill) } } }, async () =>
    (await library().globalSkills()).filter((s) => s.valid).map(pub),
  );
  app.get('/api/skills/search', { schema: { tags, querystring: S.SearchQuery, response: { 200: z.object({ results: z.array(S.SearchResult) }) } } }, async (req) => ({
    results: rank((await library().globalSkills()).filter((s) => s.valid), req.query.q)
      .slice(0, req.query.limit)
      .map((s) => ({ id: s.id, name: s.name, description: s.description, source: s.source, score: s.score })),
  }));
  app.get('/api/skills/scenario-resources', { schema: { tags, summary: "Files of global skills besides SKILL.md", querystring: S.ResourcesQuery, response: { 200: z.object({ items: z.array(S.Resource) }) } } }, async (req) => {
    const items = (await library().globalSkills())
      .filter((s) => s.valid)
      .flatMap((s) => s.files.filter((f) => f.path !== 'SKILL.md').map((f) => ({ skill: s.name, path: f.path, kind: kindOf(f.path), size: f.size })));
    return { items: items.slice(0, req.query.limit) };
  });
  app.get('/api/skills/:skill_id', { schema: { tags, params: S.SkillParams, response: { 200: S.SkillDetail } } }, async (req) => {
    const s = await library().globalSkill(req.params.skill_id);
    if (!s) throw Errors.notFound('skill');
    const content = await readFile(join(library().globalDir, s.id, 'SKILL.md'), 'utf8').catch(() => null);
    return { ...pub(s), content, body: s.doc?.body ?? null };
  });
  app.get('/api/skill-store/stats', { schema: { tags, response: { 200: S.StoreStats } } }, async () => {
    const all = await library().globalSkills();
    const valid = all.filter((s) => s.valid);
    const bySource: Record<string, number> = {};
    for (const s of all) bySource[s.source.split('/')[0]] = (bySource[s.source.split('/')[0]] ?? 0) + 1;
    return {
      skills: all.length,
      valid: valid.length,
      invalid: all.length - valid.length,
      by_source: bySource,
      files: all.reduce((n, s) => n + s.files.length, 0),
      bytes: all.reduce((n, s) => n + s.files.reduce((m, f) => m + f.size, 0), 0),
      prompt_budget_tokens: config.skills.promptTokens,
      prompt_tokens: tokens(skillsPrompt(valid, config.skills.promptTokens) ?? ''),
    };
  });

  app.get('/api/sessions/:session_id/skills', { schema: { tags, params: S.SessionParams, response: { 200: z.array(S.Skill) } } }, async (req) => {
    const scope = await scopeOf(req);
    const own = await library().sessionSkills(scope);
    const names = new Set(own.map((s) => s.name));
    return [...own, ...(await library().globalSkills()).filter((s) => s.valid && !names.has(s.name))].map(pub);
  });

  app.get('/api/sessions/:session_id/skill-stats', { schema: { tags, params: S.SessionParams, response: { 200: S.SessionStats } } }, async (req) => {
    const scope = await scopeOf(req);
    const own = await library().sessionSkills(scope);
    const visible = await library().visible(scope);
    const loads: Record<string, number> = {};
    let total = 0;
    let failed = 0;
    for (const t of await conversation.turns(scope.sessionId)) {
      for (const c of t.tool_calls) {
        if (c.tool_name !== 'Skill') continue;
        let name = '?';
        try {
          name = String((JSON.parse(c.arguments) as { name?: unknown }).name ?? '?');
        } catch {}
        if (c.status === 'error') failed++;
        else if (c.status === 'done') {
          loads[name] = (loads[name] ?? 0) + 1;
          total++;
        }
      }
    }
    return {
      session_id: scope.sessionId,
      skills: visible.length,
      session_skills: own.filter((s) => s.valid).length,
      global_skills: visible.filter((s) => s.scope === 'global').length,
      invalid: own.filter((s) => !s.valid).length,
      loads,
      total_loads: total,
      failed_loads: failed,
    };
  });

  app.post(
    '/api/sessions/:session_id/skills::upload',
    { bodyLimit: config.skills.uploadBytes * 2 + 256 * 1024, schema: { tags, summary: 'Upload a skill folder into .skills/<name> of the session', params: S.SessionParams, body: S.UploadBody, response: { 200: S.UploadResult } } },
    async (req) => {
      const scope = await scopeOf(req);
      try {
        const r = await uploadSkill(files, scope, req.body, config.skills.uploadBytes);
        toolsChanged();
        return r;
      } catch (e) {
        if (e instanceof UploadError) {
          if (e.status === 413) throw Errors.tooLarge(e.message);
          throw Errors.invalid(e.loc, e.message);
        }
        if ((e as { code?: string }).code === 'PATH_OUTSIDE_WORKSPACE' || (e as { code?: string }).code === 'DANGLING_SYMLINK') {
          throw new AppError(422, 'PATH_OUTSIDE_WORKSPACE', `.skills/${req.body.name} leads outside the session folder: ${(e as Error).message}`);
        }
        throw e;
      }
    },
  );

  app.post('/api/sessions/:session_id/skills/install', { schema: { tags, summary: 'Copy every global skill into .skills/ of the session', params: S.SessionParams, response: { 200: S.InstallResult } } }, async (req) => {
    const scope = await scopeOf(req);
    const out = { installed: [] as string[], current: [] as string[], kept: [] as string[], skill_dir: '.skills' };
    for (const s of (await library().globalSkills()).filter((x) => x.valid)) out[await library().install(scope, s.name)].push(s.name);
    if (out.installed.length) toolsChanged();
    return out;
  });

  app.post('/api/sessions/:session_id/skills::resync', { schema: { tags, summary: 'Re-read .skills/ and refresh installed copies of global skills', params: S.SessionParams, response: { 200: S.ResyncResult } } }, async (req) => {
    const scope = await scopeOf(req);
    const refreshed: string[] = [];
    for (const s of (await library().sessionSkills(scope)).filter((x) => x.source.startsWith('installed/'))) {
      if ((await library().globalSkill(s.name))?.valid && (await library().install(scope, s.name)) === 'installed') refreshed.push(s.name);
    }
    const own = await library().sessionSkills(scope);
    const ok = own.filter((s) => s.valid).map((s) => s.name);
    const invalid = own.filter((s) => !s.valid).map((s) => ({ name: s.name, error: s.error ?? '' }));
    toolsChanged();
    const detail = `${ok.length} session skills${invalid.length ? `, ${invalid.length} invalid` : ''}${refreshed.length ? `; refreshed ${refreshed.join(', ')}` : ''}`;
    return { detail, session_skills: ok, invalid, refreshed };
  });
};
