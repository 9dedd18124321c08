import type { Database } from '../../platform/db/index.js';

export interface PublishedAppRow {
  session_id: string;
  user_id: string;
  working_dir: string;
  published_at: Date;
}

/** The `published_apps` table: which session folder is served under /apps/<session_id>/ (docs/solutions-and-admin.md). */
export class PublishedAppStore {
  constructor(private readonly db: Database) {}

  /** Publishes (or moves) a session's app to `workingDir`, its canonical link-free folder. */
  async publish(userId: string, sessionId: string, workingDir: string): Promise<PublishedAppRow> {
    const [row] = await this.db.sql<PublishedAppRow>(
      `insert into published_apps (session_id, user_id, working_dir) values (?, ?, ?)
       on conflict (session_id) do update set working_dir = excluded.working_dir, published_at = now() returning *`,
      [sessionId, userId, workingDir],
    );
    return row;
  }

  list(userId: string): Promise<PublishedAppRow[]> {
    return this.db.sql<PublishedAppRow>('select * from published_apps where user_id = ? order by published_at desc limit 1000', [userId]);
  }

  /** The user's app of that session; without `userId`, anyone's (the public pages). */
  async get(sessionId: string, userId?: string): Promise<PublishedAppRow | null> {
    const [row] = userId
      ? await this.db.sql<PublishedAppRow>('select * from published_apps where session_id = ? and user_id = ?', [sessionId, userId])
      : await this.db.sql<PublishedAppRow>('select * from published_apps where session_id = ?', [sessionId]);
    return row ?? null;
  }

  async remove(userId: string, sessionId: string): Promise<boolean> {
    return (await this.db.sql('delete from published_apps where session_id = ? and user_id = ? returning session_id', [sessionId, userId])).length > 0;
  }
}
