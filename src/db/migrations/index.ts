import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261121000001_users_keys } from './Migration20261121000001_users_keys.js';

/** Committed migrations, in order. Listed explicitly so the compiled build needs no globbing. */
export const migrationsList: MigrationObject[] = [
  { name: 'Migration20261121000001_users_keys', class: Migration20261121000001_users_keys },
];
