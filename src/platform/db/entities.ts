import { EntitySchema } from '@mikro-orm/core';

/** Rows of the store. Plain classes + EntitySchema: no decorators, no reflect-metadata. */

export class User {
  id!: string;
  username!: string;
  isAdmin: boolean = false;
  /** admin, member or viewer (docs/identity.md); `isAdmin` stays true exactly for admins. */
  role: 'admin' | 'member' | 'viewer' = 'member';
  /** A disabled user's keys, sign-ins and sockets are refused (docs/identity.md). */
  disabled: boolean = false;
  avatarUrl: string | null = null;
  createdAt: Date = new Date();
}

export class ApiKey {
  id!: string;
  userId!: string;
  name!: string;
  keyHash!: string;
  last4!: string;
  createdAt: Date = new Date();
  lastUsedAt: Date | null = null;
}

export const UserSchema = new EntitySchema<User>({
  class: User,
  tableName: 'users',
  properties: {
    id: { type: 'string', primary: true },
    username: { type: 'string', unique: true },
    isAdmin: { type: 'boolean', default: false },
    role: { type: 'string', default: 'member' },
    disabled: { type: 'boolean', default: false },
    avatarUrl: { type: 'string', nullable: true },
    createdAt: { type: 'Date' },
  },
});

export const ApiKeySchema = new EntitySchema<ApiKey>({
  class: ApiKey,
  tableName: 'api_keys',
  properties: {
    id: { type: 'string', primary: true },
    userId: { type: 'string' },
    name: { type: 'string' },
    keyHash: { type: 'string', unique: true },
    last4: { type: 'string' },
    createdAt: { type: 'Date' },
    lastUsedAt: { type: 'Date', nullable: true },
  },
});

export type SessionStatus = 'created' | 'running' | 'completed' | 'failed' | 'interrupted' | 'waiting_for_input';

export class Session {
  id!: string;
  userId!: string;
  intent: string = '';
  status: SessionStatus = 'created';
  mode: 'planning' | 'executing' = 'executing';
  model: string | null = null;
  solutionId: string | null = null;
  bizRoleId: string | null = null;
  templateId: string | null = null;
  primarySkillId: string | null = null;
  softwareFactoryId: number | null = null;
  workspaceId: string | null = null;
  memoryEnabled: boolean = false;
  isPersistent: boolean = false;
  shared: boolean = false;
  isPinned: boolean = false;
  env: Record<string, string> | null = null;
  disableTools: string[] = [];
  solution: Record<string, unknown> = {};
  sessionSetup: Record<string, unknown> = {};
  primarySkillSnapshot: Record<string, unknown> | null = null;
  replayState: Record<string, unknown> | null = null;
  extra: Record<string, unknown> | null = null;
  extraCreatedAt: Date | null = null;
  extraUpdatedAt: Date | null = null;
  lastSeq: number = 0;
  runOwner: string | null = null;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
}

const json = (nullable = false) => ({ type: 'json', nullable }) as const;

export const SessionSchema = new EntitySchema<Session>({
  class: Session,
  tableName: 'sessions',
  properties: {
    id: { type: 'string', primary: true },
    userId: { type: 'string' },
    intent: { type: 'string' },
    status: { type: 'string' },
    mode: { type: 'string' },
    model: { type: 'string', nullable: true },
    solutionId: { type: 'string', nullable: true },
    bizRoleId: { type: 'string', nullable: true },
    templateId: { type: 'string', nullable: true },
    primarySkillId: { type: 'string', nullable: true },
    softwareFactoryId: { type: 'integer', nullable: true },
    workspaceId: { type: 'string', nullable: true },
    memoryEnabled: { type: 'boolean' },
    isPersistent: { type: 'boolean' },
    shared: { type: 'boolean' },
    isPinned: { type: 'boolean' },
    env: json(true),
    disableTools: json(),
    solution: json(),
    sessionSetup: json(),
    primarySkillSnapshot: json(true),
    replayState: json(true),
    extra: json(true),
    extraCreatedAt: { type: 'Date', nullable: true },
    extraUpdatedAt: { type: 'Date', nullable: true },
    lastSeq: { type: 'integer' },
    runOwner: { type: 'string', nullable: true },
    createdAt: { type: 'Date' },
    updatedAt: { type: 'Date' },
  },
});
