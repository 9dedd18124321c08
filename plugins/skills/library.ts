import { createHash } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { lstat, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { SessionFiles, SessionScope } from '../../src/features/plugin-host/api.js';
import { parseSkill, type SkillDoc, SKILL_NAME } from './format.js';

/** Session skills live here, relative to the session folder (docs/plugins.md). */
export const SESSION_DIR = '.skills';
/** In a global skill folder: who put it there (`agentsvc/<name>` for shipped skills). */
export const SOURCE_MARK = '.agentsvc-source';
/** In a session skill folder copied from a global skill: the hash of what was copied. */
export const INSTALLED_MARK = '.agentsvc-installed';
const MAX_FILES = 500;
const MAX_DEPTH = 8;

export interface SkillFile {
  path: string;
  size: number;
}

export interface Skill {
  /** Global skills: their name; session skills: `session:<name>`. */
  id: string;
  name: string;
  description: string;
  scope: 'global' | 'session';
  /** `agentsvc/<name>` (shipped), `local/<name>` (the operator's), `session/<name>` (uploaded), `installed/<name>` (a global skill copied in). */
  source: string;
  /** Global: relative to AGENTSVC_HOME; session: relative to the session folder. */
  dir: string;
  allowed_tools: string[];
  files: SkillFile[];
  valid: boolean;
  error: string | null;
}

export interface LoadedSkill extends Skill {
  doc: SkillDoc | null;
}

const hidden = (p: string) => p.split('/').some((s) => s === SOURCE_MARK || s === INSTALLED_MARK);

/** Files of a host folder (the operator's global skills), links skipped, bounded. */
async function hostFiles(dir: string): Promise<SkillFile[]> {
  const out: SkillFile[] = [];
  const walk = async (rel: string, depth: number) => {
    if (depth > MAX_DEPTH) return;
    for (const name of (await readdir(join(dir, rel))).sort()) {
      if (out.length >= MAX_FILES) return;
      const r = rel ? `${rel}/${name}` : name;
      const st = await lstat(join(dir, r));
      if (st.isDirectory()) await walk(r, depth + 1);
      else if (st.isFile() && !hidden(r)) out.push({ path: r, size: st.size });
    }
  };
  await walk('', 0);
  return out;
}

function hashOf(files: { path: string; data: Buffer }[]): string {
  const h = createHash('sha256');
  for (const f of files) h.update(f.path).update('\0').update(f.data).update('\0');
  return h.digest('hex').slice(0, 16);
}

function skillOf(base: Omit<Skill, 'name' | 'description' | 'allowed_tools' | 'valid' | 'error'>, folder: string, text: string | null): LoadedSkill {
  try {
    if (text === null) throw new Error('SKILL.md is missing');
    const doc = parseSkill(text, folder);
    return { ...base, name: doc.name, description: doc.description, allowed_tools: doc.allowedTools, valid: true, error: null, doc };
  } catch (e) {
    return { ...base, name: folder, description: '', allowed_tools: [], valid: false, error: (e as Error).message, doc: null };
  }
}

const GLOBAL_MAX_AGE_MS = 5000;

/** The global skills as read for one signature: `skills` settles with the read; `last` is the newest list read of that signature. */
interface GlobalCache {
  sig: string;
  at: number;
  skills: Promise<LoadedSkill[]>;
  last: LoadedSkill[] | null;
}
/**
 * How old a signature of the global folder a run start takes (the REST listings read it anew): an
 * operator's edit reaches runs within a second, and a burst of run starts (200 in half a second)
 * reads the folder a few times, not once per start (a readdir and two stats per skill each time).
 */
const RUN_SIGNATURE_AGE_MS = 1000;

/**
 * Global skills (AGENTSVC_HOME/skills, seeded from the shipped ones) and a session's skills
 * (`.skills/<name>` in its folder, read through the plugin API's confined files).
 */
export class SkillLibrary {
  readonly globalDir: string;

  private readonly maxAgeMs: number;
  private readonly runSignatureAgeMs: number;

  /** `ages`: GLOBAL_MAX_AGE_MS and RUN_SIGNATURE_AGE_MS, for a test that cannot wait for them. */
  constructor(
    home: string,
    private readonly files: SessionFiles,
    ages: { maxAgeMs?: number; runSignatureAgeMs?: number } = {},
  ) {
    this.globalDir = join(home, 'skills');
    this.maxAgeMs = ages.maxAgeMs ?? GLOBAL_MAX_AGE_MS;
    this.runSignatureAgeMs = ages.runSignatureAgeMs ?? RUN_SIGNATURE_AGE_MS;
  }

  /**
   * Copy shipped skills into AGENTSVC_HOME/skills: a missing one is added, one we put there before
   * (marked) is updated when it changed, and an operator's own folder of the same name is left alone.
   */
  seed(shippedDir: string): string[] {
    const done: string[] = [];
    if (!existsSync(shippedDir)) return done;
    for (const name of readdirNames(shippedDir)) {
      const target = join(this.globalDir, name);
      const mark = join(target, SOURCE_MARK);
      const source = `agentsvc/${name}`;
      const fresh = readFileSync(join(shippedDir, name, 'SKILL.md'), 'utf8');
      if (existsSync(target)) {
        if (!existsSync(mark) || readFileSync(mark, 'utf8').trim() !== source) continue;
        const current = existsSync(join(target, 'SKILL.md')) ? readFileSync(join(target, 'SKILL.md'), 'utf8') : null;
        if (current === fresh) continue;
        rmSync(target, { recursive: true, force: true });
      }
      cpSync(join(shippedDir, name), target, { recursive: true });
      writeFileSync(mark, `${source}\n`);
      done.push(name);
    }
    return done;
  }

  /**
   * Global skills, read again when the folder's listing or a skill's folder or SKILL.md changed
   * (a readdir and two stats per skill), and at least every GLOBAL_MAX_AGE_MS (files deeper in a
   * skill). Every run start lists them twice (prompt and tools): 200 sessions starting at once
   * read the folder once, not 400 times. A listing reads the signature now (or joins the read under
   * way); a run start (`forRun`) takes one read up to RUN_SIGNATURE_AGE_MS ago, and does not wait
   * for the periodic re-read of an unchanged folder: it takes the list read last while the new one
   * is read (200 starts at once waited 180 ms for it, behind their own file reads in libuv's
   * threads). A changed signature is always waited for.
   */
  async globalSkills(forRun = false): Promise<LoadedSkill[]> {
    const sig = await this.globalSignature(forRun ? this.runSignatureAgeMs : 0);
    const c = this.globalCache;
    if (c && c.sig === sig && Date.now() - c.at < this.maxAgeMs) return forRun && c.last ? c.last : c.skills;
    const loading = this.readGlobal();
    const entry: GlobalCache = { sig, at: Date.now(), skills: loading, last: c?.sig === sig ? c.last : null };
    this.globalCache = entry;
    loading.then(
      (list) => {
        entry.last = list;
      },
      () => {
        if (this.globalCache === entry) this.globalCache = null;
      },
    );
    return forRun && entry.last ? entry.last : loading;
  }

  private globalCache: GlobalCache | null = null;

  /** The last signature read, or being read; `signed`: when that read began. */
  private signing: Promise<string> | null = null;
  private signed = 0;
  private signatureDone = true;

  private globalSignature(maxAgeMs: number): Promise<string> {
    if (!this.signing || (this.signatureDone && Date.now() - this.signed >= maxAgeMs)) {
      const p = this.readSignature();
      this.signing = p;
      this.signed = Date.now();
      this.signatureDone = false;
      void p.finally(() => {
        if (this.signing === p) this.signatureDone = true;
      });
    }
    return this.signing;
  }

  private async readSignature(): Promise<string> {
    let names: string[];
    try {
      names = (await readdir(this.globalDir)).sort();
    } catch {
      return '';
    }
    const stamp = (p: string) => stat(p).then((s) => `${s.mtimeMs}:${s.size}`, () => '-');
    const parts = await Promise.all(names.map(async (n) => `${n}/${await stamp(join(this.globalDir, n))}/${await stamp(join(this.globalDir, n, 'SKILL.md'))}`));
    return parts.join('|');
  }

  private async readGlobal(): Promise<LoadedSkill[]> {
    let names: string[];
    try {
      names = (await readdir(this.globalDir, { withFileTypes: true })).filter((d) => d.isDirectory() && !d.name.startsWith('.')).map((d) => d.name).sort();
    } catch {
      return [];
    }
    return Promise.all(
      names.map(async (folder) => {
        const dir = join(this.globalDir, folder);
        const text = await readFile(join(dir, 'SKILL.md'), 'utf8').catch(() => null);
        const mark = await readFile(join(dir, SOURCE_MARK), 'utf8').catch(() => '');
        const files = await hostFiles(dir).catch(() => []);
        return skillOf({ id: folder, scope: 'global', source: mark.trim() || `local/${folder}`, dir: `skills/${folder}`, files }, folder, text);
      }),
    );
  }

  async globalSkill(name: string): Promise<LoadedSkill | null> {
    return (await this.globalSkills()).find((s) => s.id === name) ?? null;
  }

  /** Files of a session folder, relative to it, bounded. */
  private async sessionFiles(scope: SessionScope, dir: string): Promise<SkillFile[]> {
    const out: SkillFile[] = [];
    const walk = async (rel: string, depth: number) => {
      if (depth > MAX_DEPTH) return;
      for (const e of await this.files.list(scope, `${dir}/${rel}`)) {
        if (out.length >= MAX_FILES) return;
        const r = rel ? `${rel}/${e.name}` : e.name;
        if (e.type === 'directory') await walk(r, depth + 1);
        else if (!hidden(r)) out.push({ path: r, size: e.size });
      }
    };
    await walk('', 0);
    return out;
  }

  async sessionSkills(scope: SessionScope): Promise<LoadedSkill[]> {
    let entries: { name: string; type: string }[];
    try {
      entries = await this.files.list(scope, SESSION_DIR);
    } catch {
      return [];
    }
    const folders = entries.filter((e) => e.type === 'directory' && !e.name.startsWith('.')).map((e) => e.name);
    return Promise.all(
      folders.map(async (folder) => {
        const dir = `${SESSION_DIR}/${folder}`;
        const read = (p: string) => this.files.read(scope, `${dir}/${p}`).then((b) => b.toString('utf8'), () => null);
        const text = await read('SKILL.md');
        const installed = (await read(INSTALLED_MARK)) !== null;
        const files = await this.sessionFiles(scope, dir).catch(() => []);
        return skillOf({ id: `session:${folder}`, scope: 'session', source: `${installed ? 'installed' : 'session'}/${folder}`, dir, files }, folder, text);
      }),
    );
  }

  /** What a session sees: its own skills, then the global ones it does not shadow; valid ones only. */
  visible(scope: SessionScope): Promise<LoadedSkill[]> {
    // The prompt and the tool list of one run start ask at the same moment: one read serves both.
    const key = `${scope.userId}\0${scope.sessionId}`;
    const running = this.reading.get(key);
    if (running) return running;
    const p = this.readVisible(scope).finally(() => this.reading.delete(key));
    this.reading.set(key, p);
    return p;
  }

  private reading = new Map<string, Promise<LoadedSkill[]>>();

  private async readVisible(scope: SessionScope): Promise<LoadedSkill[]> {
    const own = (await this.sessionSkills(scope)).filter((s) => s.valid);
    const names = new Set(own.map((s) => s.name));
    const global = (await this.globalSkills(true)).filter((s) => s.valid && !names.has(s.name));
    return [...own.filter((s) => !s.source.startsWith('installed/')), ...own.filter((s) => s.source.startsWith('installed/')), ...global];
  }

  /**
   * Copy a global skill into the session's `.skills/<name>` so its scripts can run inside the
   * computer. A session skill of that name that was not copied from here is never overwritten.
   */
  async install(scope: SessionScope, name: string): Promise<'installed' | 'current' | 'kept'> {
    // One install of a skill into a session at a time: two at once removed each other's files mid-copy.
    const key = `${scope.userId}/${scope.sessionId}/${name}`;
    const before = this.installing.get(key) ?? Promise.resolve();
    const mine = before.then(() => this.installNow(scope, name));
    const tail = mine.catch(() => {});
    this.installing.set(key, tail);
    void tail.then(() => {
      if (this.installing.get(key) === tail) this.installing.delete(key);
    });
    return mine;
  }

  private installing = new Map<string, Promise<unknown>>();

  private async installNow(scope: SessionScope, name: string): Promise<'installed' | 'current' | 'kept'> {
    if (!SKILL_NAME.test(name)) throw new Error(`no skill named ${name}`);
    const skill = await this.globalSkill(name);
    if (!skill?.valid) throw new Error(`no global skill named ${name}`);
    const dir = `${SESSION_DIR}/${name}`;
    const data = await Promise.all(skill.files.map(async (f) => ({ path: f.path, data: await readFile(join(this.globalDir, name, f.path)) })));
    const hash = hashOf(data);
    const have = await this.files.read(scope, `${dir}/${INSTALLED_MARK}`).then((b) => b.toString('utf8').trim(), (e) => (e.code === 'ENOENT' ? null : ''));
    const exists = have !== null || (await this.files.list(scope, dir).then((l) => l.length > 0, () => false));
    if (exists && have === null) return 'kept';
    if (have === hash) return 'current';
    await this.files.remove(scope, dir);
    for (const f of data) {
      const st = await lstat(join(this.globalDir, name, f.path));
      await this.files.write(scope, `${dir}/${f.path}`, f.data, { executable: (st.mode & 0o111) !== 0 });
    }
    await this.files.write(scope, `${dir}/${INSTALLED_MARK}`, `${hash}\n`);
    return 'installed';
  }
}

function readdirNames(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && SKILL_NAME.test(d.name))
      .map((d) => d.name)
      .sort();
  } catch {
    return [];
  }
}
