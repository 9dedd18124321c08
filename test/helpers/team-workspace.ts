import type { TestApp } from './app.js';
import { createSession } from './chat.js';

type User = { key: string; userId: string };

/**
 * A team workspace of `owner` with `members` added, and a session of the owner's in it, which the
 * members read (docs/identity.md "What each role reads and does").
 */
export async function teamWorkspaceSession(app: TestApp, owner: User, members: User[], intent = 'Team job'): Promise<{ ws: string; sid: string }> {
  const res = await app.api('/api/prod_workspaces', { method: 'POST', key: owner.key, json: { name: 'Infra' } });
  if (res.status !== 200) throw new Error(`create workspace: ${res.status} ${await res.text()}`);
  const ws = (await res.json()).id as string;
  for (const m of members) {
    const added = await app.api(`/api/prod_workspaces/${ws}/members`, { method: 'POST', key: owner.key, json: { user_id: m.userId } });
    if (added.status !== 200) throw new Error(`add member: ${added.status} ${await added.text()}`);
  }
  return { ws, sid: await createSession(app, owner.key, { intent, workspace_id: ws }) };
}
