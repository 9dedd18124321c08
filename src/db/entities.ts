import { EntitySchema } from '@mikro-orm/core';

/** Rows of the store. Plain classes + EntitySchema: no decorators, no reflect-metadata. */

export class User {
  id!: string;
  username!: string;
  isAdmin: boolean = false;
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
