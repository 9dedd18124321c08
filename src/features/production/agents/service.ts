import { posix } from 'node:path';
import type { Config } from '../../../platform/config/index.js';
import type { Database } from '../../../platform/db/index.js';
import { randomToken } from '../../../platform/lib/ids.js';
import type { Computer, Runner } from '../../../../runners/types.js';
import { PathEscapeError, NotAFolderError } from '../../../core/files/confine.js';
import type { SessionFolders } from '../../../core/files/session-folder.js';
import type { FolderFs } from '../../../core/files/folder-fs.js';
import { AppError, Errors } from '../../../platform/server/errors.js';
import type { SessionService } from '../../../core/sessions/service.js';
import type { SolutionCatalog } from '../../solutions/catalog.js';
import type { Roles } from '../../solutions/roles.js';
import { runtimes } from '../runtimes.js';
import type { AgentRecordT, CreateAgentInput, PatchAgentInput, RuntimeT } from './schemas.js';
import type { ScriptCheck } from './script-policy.js';

/** The PATH of commands in the computer, with the agent's own bin folder first. */
const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const LOG_MAX = 64 * 1024;
/**
 * Commands run in a login shell, whose /etc/profile resets PATH: the computer's ~/.profile puts
 * the agent's bin/ back in front for sessions that carry AGENT_HOME (set by start-session).
 */
const PROFILE_MARK = '# agentsvc production agents';
const PROFILE_LINES = `${PROFILE_MARK}: a session started from an agent has its bin/ first\nif [ -n "$AGENT_HOME" ] && [ -d "$AGENT_HOME/bin" ]; then PATH="$AGENT_HOME/bin:$PATH"; export PATH; fi\n`;

interface Row {
  id: string;
  user_id: string;
  agent_id: string | null;
  name: string;
  solution_id: string;
  biz_role_id: string;
  runtime_provider: string;
  spec: Spec;
  status: string;
  instance_log: string | null;
  instantiated_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

type Spec = Omit<CreateAgentInput, 'runtime_provider' | 'agent_id' | 'name' | 'solution_id' | 'biz_role_id'>;

export type ProdAgent = AgentRecordT & { user_id: string };

const iso = (d: Date | string | null) => (d == null ? null : new Date(d).toISOString());

function toRecord(r: Row): ProdAgent {
  const s = r.spec;
  return {
    record_id: r.id,
    provider_key: `${r.runtime_provider}:${r.id}`,
    agent_id: r.agent_id,
    user_id: r.user_id,
    name: r.name,
    icon: s.icon ?? '',
    solution_id: r.solution_id,
    biz_role_id: r.biz_role_id,
    agent_template: s.agent_template ?? '',
    initial_mode: s.initial_mode ?? null,
    skills: s.skills ?? [],
    skills_data: s.skills_data ?? {},
    init_script: s.init_script ?? '',
    layout_type: s.layout_type ?? 'default',
    preview_urls: s.preview_urls ?? [],
    runtime_provider: r.runtime_provider,
    visibility: s.visibility ?? 'workspace',
    instructions: s.instructions ?? '',
    status: r.status,
    instantiated_at: iso(r.instantiated_at),
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
  };
}

/**
 * A production agent of a user, or null (another user's agent is null too). With `userId` null,
 * any user's agent: for callers that check access themselves (a workspace's members).
 */
export async function getProdAgent(db: Database, userId: string | null, recordId: string): Promise<ProdAgent | null> {
  const rows = await db.sql<Row>(`select * from prod_agents where id = ?${userId == null ? '' : ' and user_id = ?'}`, userId == null ? [recordId] : [recordId, userId]);
  return rows[0] ? toRecord(rows[0]) : null;
}

/**
 * Adds our PATH lines to the computer's `~/.profile`, through the confined file layer: the file is
 * the user's (their commands can replace it with a link), so it is read and replaced by descriptor.
 */
async function ensureProfile(home: FolderFs): Promise<void> {
  let current = '';
  try {
    current = (await home.read('.profile')).toString('utf8');
  } catch (e) {
    // A link leading out of the home (or nowhere) is never followed: it is replaced by our file.
    if (e instanceof PathEscapeError) await home.remove('.profile');
    else if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  if (!current.includes(PROFILE_MARK)) await home.write('.profile', `${current}${current && !current.endsWith('\n') ? '\n' : ''}${PROFILE_LINES}`);
}

/** The folder of an agent inside its user's computer (relative to the computer's root). */
export const agentDir = (recordId: string) => posix.join('.prod_agents', recordId);

export interface StartSessionOptions {
  intent?: string;
  workspace_id?: string | null;
}

/** Production agents (docs/solutions-and-admin.md "Production agents"): records, instantiate, start-session. */
export class ProdAgents {
  constructor(
    private readonly deps: {
      db: Database;
      config: Config;
      catalog: SolutionCatalog;
      roles: Roles;
      sessions: SessionService;
      runner: Runner;
      /** The session folders (their quota: what the home's files add counts against it). */
      folders: SessionFolders;
      /** Ids of the user's agents a record may name in `agent_id` (production-solution agents and production agents). */
      agentIds: (userId: string) => Promise<Set<string>>;
      /** Seconds an init_script may run (AGENTSVC_AGENT_INIT_TIMEOUT_SECONDS). */
      initTimeoutMs?: number;
      /** The tool policy's word on an init_script, as on a Bash call of the user (script-policy.ts). */
      scriptPolicy?: ScriptCheck;
    },
  ) {}

  /** The user's computer home, through the confined file layer (never by host path). */
  private homeOf(computer: Computer): FolderFs {
    return this.deps.folders.home(computer);
  }

  /** Ids of the user's production agents. */
  async ids(userId: string): Promise<string[]> {
    return (await this.deps.db.sql<{ id: string }>('select id from prod_agents where user_id = ?', [userId])).map((r) => r.id);
  }

  runtimes(): RuntimeT[] {
    return runtimes(this.deps.config);
  }

  private runtime(id: string | undefined, at: string[]): string {
    const all = this.runtimes();
    if (id == null || id === '') return all[0].id;
    if (!all.some((r) => r.id === id)) throw Errors.invalid(at, `unknown runtime ${JSON.stringify(id)}; GET /api/prod_solution/agents/runtimes lists them: ${all.map((r) => r.id).join(', ')}`);
    return id;
  }

  async list(userId: string): Promise<ProdAgent[]> {
    return (await this.deps.db.sql<Row>('select * from prod_agents where user_id = ? order by created_at desc, id desc', [userId])).map(toRecord);
  }

  async get(userId: string, recordId: string): Promise<ProdAgent> {
    const a = await getProdAgent(this.deps.db, userId, recordId);
    if (!a) throw Errors.notFound('production agent');
    return a;
  }

  /** `<runtime_provider>:<record_id>`; the record id never holds a colon, a model id may. */
  async byProviderKey(userId: string, key: string): Promise<{ provider: string; runtime: RuntimeT; agent: ProdAgent }> {
    const i = key.lastIndexOf(':');
    if (i <= 0) throw Errors.notFound('production agent');
    const agent = await getProdAgent(this.deps.db, userId, key.slice(i + 1));
    if (!agent || agent.runtime_provider !== key.slice(0, i)) throw Errors.notFound('production agent');
    const runtime = this.runtimes().find((r) => r.id === agent.runtime_provider) ?? { id: agent.runtime_provider, type: 'runner' as const, name: agent.runtime_provider, available: false, default: false };
    return { provider: agent.runtime_provider, runtime, agent };
  }

  async create(userId: string, input: CreateAgentInput): Promise<ProdAgent> {
    await this.deps.roles.resolve(userId, input.solution_id, input.biz_role_id);
    const runtime = this.runtime(input.runtime_provider, ['body', 'runtime_provider']);
    // A reference in the body is checked like a path id (docs/trust-boundary.md): another user's agent is 404.
    if (input.agent_id && !(await this.deps.agentIds(userId)).has(input.agent_id)) throw Errors.notFound('agent');
    const { agent_id, name, solution_id, biz_role_id, runtime_provider: _r, ...spec } = input;
    const id = `agent_${randomToken(20)}`;
    const [row] = await this.deps.db.sql<Row>(
      `insert into prod_agents (id, user_id, agent_id, name, solution_id, biz_role_id, runtime_provider, spec)
       values (?, ?, ?, ?, ?, ?, ?, cast(? as jsonb)) returning *`,
      [id, userId, agent_id ?? null, name, solution_id, biz_role_id, runtime, JSON.stringify(spec)],
    );
    return toRecord(row);
  }

  async update(userId: string, recordId: string, patch: PatchAgentInput): Promise<ProdAgent> {
    const cur = await this.get(userId, recordId);
    const solutionId = patch.solution_id ?? cur.solution_id;
    const roleId = patch.biz_role_id ?? cur.biz_role_id;
    if (patch.solution_id !== undefined || patch.biz_role_id !== undefined) await this.deps.roles.resolve(userId, solutionId, roleId);
    const runtime = patch.runtime_provider !== undefined ? this.runtime(patch.runtime_provider, ['body', 'runtime_provider']) : cur.runtime_provider;
    const { name, solution_id: _s, biz_role_id: _b, runtime_provider: _r, ...spec } = patch;
    // What instantiate prepared no longer matches a changed script or skill set.
    const stale = spec.init_script !== undefined || spec.skills !== undefined || spec.skills_data !== undefined;
    const rows = await this.deps.db.sql<Row>(
      `update prod_agents set name = ?, solution_id = ?, biz_role_id = ?, runtime_provider = ?, spec = spec || cast(? as jsonb),
         status = case when ? then 'created' else status end, updated_at = now()
       where id = ? and user_id = ? returning *`,
      [name ?? cur.name, solutionId, roleId, runtime, JSON.stringify(spec), stale, recordId, userId],
    );
    if (!rows[0]) throw Errors.notFound('production agent');
    return toRecord(rows[0]);
  }

  async delete(userId: string, recordId: string): Promise<void> {
    const rows = await this.deps.db.sql<{ id: string }>('delete from prod_agents where id = ? and user_id = ? returning id', [recordId, userId]);
    if (!rows[0]) throw Errors.notFound('production agent');
  }

  /** The files of each of the agent's skills: skills_data first, then the solution package's. */
  private skillFiles(a: ProdAgent): { name: string; files: { path: string; content: Buffer | string }[] }[] {
    const names = [...new Set([...a.skills, ...Object.keys(a.skills_data)])];
    const out: { name: string; files: { path: string; content: Buffer | string }[] }[] = [];
    for (const name of names) {
      const d = a.skills_data[name] as string | { files: { path: string; content: string }[] } | undefined;
      if (typeof d === 'string') out.push({ name, files: [{ path: 'SKILL.md', content: d }] });
      else if (d) out.push({ name, files: d.files });
      else {
        const shipped = this.deps.catalog.skill(a.solution_id, name);
        if (shipped) out.push({ name, files: shipped.files });
      }
    }
    return out;
  }

  /**
   * Prepares the agent's computer: its folder `.prod_agents/<record_id>` (bin/ on PATH, skills/),
   * then runs init_script there. Answers `{record_id, status, exit_code, log}`; the log is kept.
   */
  async instantiate(userId: string, recordId: string): Promise<{ record_id: string; status: 'ready' | 'failed'; exit_code: number | null; log: string }> {
    const a = await this.get(userId, recordId);
    const computer = await this.deps.runner.acquire(userId);
    const files = this.homeOf(computer);
    const dir = agentDir(a.record_id);
    const home = posix.join(computer.root, dir);
    const lines: string[] = [];
    let notInstalled = 0;
    await files.mkdir(posix.join(dir, 'bin'));
    await ensureProfile(files);
    for (const s of this.skillFiles(a)) {
      let written = 0;
      const failed: string[] = [];
      for (const f of s.files) {
        if (f.path.split('/').some((p) => p === '..' || p === '') || f.path.startsWith('/')) {
          lines.push(`skill ${s.name}: file ${f.path} skipped (paths stay inside the skill folder)`);
          continue;
        }
        // The tree is the user's: their commands may have put a link or a file in the way. That
        // file is not installed (and said so in the log); nothing is followed out of the home.
        await files.write(posix.join(dir, 'skills', s.name, f.path), f.content).then(
          () => written++,
          (e: NodeJS.ErrnoException) => {
            if (!(e instanceof PathEscapeError || e instanceof NotAFolderError || typeof e.code === 'string')) throw e;
            failed.push(`${f.path} (${e.message})`);
          },
        );
      }
      lines.push(`skill ${s.name} installed (${written} of ${s.files.length} files)`);
      if (failed.length) lines.push(`skill ${s.name}: ${failed.length} file(s) not written, e.g. ${failed[0]}`);
      notInstalled += failed.length;
    }
    for (const n of a.skills) if (!this.skillFiles(a).some((s) => s.name === n)) lines.push(`skill ${n}: not found in skills_data or solution ${a.solution_id}; skipped`);
    let exitCode: number | null = 0;
    let ok = notInstalled === 0;
    const refused = a.init_script.trim() ? await this.deps.scriptPolicy?.(userId, a.record_id, a.init_script) : null;
    if (refused) {
      lines.push(`init_script not run: ${refused}`);
      exitCode = null;
      ok = false;
    } else if (a.init_script.trim()) {
      await files.write(posix.join(dir, 'init.sh'), a.init_script);
      lines.push('$ sh init.sh');
      const r = await computer.exec('sh ./init.sh', {
        cwd: home,
        env: { AGENT_HOME: home, PATH: `${home}/bin:${SYSTEM_PATH}` },
        timeoutMs: this.deps.initTimeoutMs ?? 300_000,
        maxOutputBytes: LOG_MAX,
      });
      if (r.stdout) lines.push(r.stdout.replace(/\n$/, ''));
      if (r.stderr) lines.push(r.stderr.replace(/\n$/, ''));
      exitCode = r.exitCode;
      ok = r.exitCode === 0 && !r.timedOut;
      lines.push(r.timedOut ? 'init_script timed out' : `init_script exited with ${r.exitCode ?? r.signal}`);
    }
    let log = lines.join('\n');
    if (log.length > LOG_MAX) log = `${log.slice(0, 1000)}\n[... ${log.length - LOG_MAX} characters cut ...]\n${log.slice(-(LOG_MAX - 1100))}`;
    const status = ok ? 'ready' : 'failed';
    await this.deps.db.sql('update prod_agents set status = ?, instance_log = ?, instantiated_at = now() where id = ? and user_id = ?', [status, log, a.record_id, userId]);
    return { record_id: a.record_id, status, exit_code: exitCode, log };
  }

  /**
   * A session configured from the agent: its solution role (prompt, tools, mode), its
   * instructions and template in the system prompt, its computer folder's bin/ on PATH and its
   * skills in the session's `.skills/`. An agent never instantiated is instantiated first.
   */
  async startSession(userId: string, recordId: string, opts: StartSessionOptions = {}): Promise<{ session_id: string; route_solution_id: string }> {
    let a = await this.get(userId, recordId);
    if (a.status !== 'ready') {
      const r = await this.instantiate(userId, recordId);
      if (r.status !== 'ready') throw new AppError(409, 'AGENT_NOT_READY', `instantiate failed (exit ${r.exit_code}); fix init_script and retry. Log tail: ${r.log.slice(-500)}`);
      a = await this.get(userId, recordId);
    }
    const computer = await this.deps.runner.acquire(userId);
    const files = this.homeOf(computer);
    await ensureProfile(files);
    const home = posix.join(computer.root, agentDir(a.record_id));
    const model = this.runtimes().find((r) => r.id === a.runtime_provider && r.type === 'model')?.id ?? null;
    const sessionId = await this.deps.sessions.create(userId, {
      intent: opts.intent ?? a.name,
      solution_id: a.solution_id,
      biz_role_id: a.biz_role_id,
      model,
      mode: (a.initial_mode as 'planning' | 'executing' | null) ?? undefined,
      is_persistent: false,
      workspace_id: opts.workspace_id ?? null,
      env: { AGENT_HOME: home, PATH: `${home}/bin:${SYSTEM_PATH}` },
    });
    const setup = { prod_agent: { record_id: a.record_id, name: a.name, instructions: a.instructions, agent_template: a.agent_template } };
    await this.deps.sessions.mergeSetup(sessionId, setup);
    for (const s of this.skillFiles(a)) {
      for (const f of s.files) {
        if (f.path.split('/').some((p) => p === '..' || p === '') || f.path.startsWith('/')) continue;
        await files.write(posix.join(sessionId, '.skills', s.name, f.path), f.content);
      }
    }
    return { session_id: sessionId, route_solution_id: a.solution_id };
  }

  /** Solutions an agent can be built on, with the roles this user may use. */
  async catalogSolutions(userId: string) {
    const items = [];
    for (const s of this.deps.catalog.list()) {
      const roles = [];
      for (const r of s.roles) roles.push({ id: r.id, name: r.name, description: r.description, initial_mode: r.initial_mode, allowed: await this.deps.roles.access.allowed(userId, s.id, r.id) });
      items.push({ id: s.id, name: s.name, version: s.version, description: s.description, roles });
    }
    return { items };
  }
}
