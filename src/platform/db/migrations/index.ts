import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261121000001_users_keys } from './Migration20261121000001_users_keys.js';
import { Migration20261121000002_sessions_turns_events } from './Migration20261121000002_sessions_turns_events.js';
import { Migration20261121000003_session_tasks } from './Migration20261121000003_session_tasks.js';
import { Migration20261123000001_scheduled_tasks } from './Migration20261123000001_scheduled_tasks.js';
import { Migration20261123000002_timetravel } from './Migration20261123000002_timetravel.js';
import { Migration20261123000003_memories_settings } from './Migration20261123000003_memories_settings.js';
import { Migration20261123000004_share_links } from './Migration20261123000004_share_links.js';
import { Migration20261124000020_prod_agents } from './Migration20261124000020_prod_agents.js';
import { Migration20261124000021_admin_grants } from './Migration20261124000021_admin_grants.js';
import { Migration20261124000022_prod_solutions } from './Migration20261124000022_prod_solutions.js';
import { Migration20261124000030_apps_annotations } from './Migration20261124000030_apps_annotations.js';
import { Migration20261124000031_workspaces_issues } from './Migration20261124000031_workspaces_issues.js';
import { Migration20261125000040_run_identity } from './Migration20261125000040_run_identity.js';
import { Migration20261125000041_usage_budgets } from './Migration20261125000041_usage_budgets.js';
import { Migration20261125000050_tool_policy } from './Migration20261125000050_tool_policy.js';
import { Migration20261126000042_usage_purpose } from './Migration20261126000042_usage_purpose.js';
import { Migration20261127000060_egress_audit } from './Migration20261127000060_egress_audit.js';
import { Migration20261127000070_model_credentials } from './Migration20261127000070_model_credentials.js';
import { Migration20261127000071_identity } from './Migration20261127000071_identity.js';
import { Migration20261127000072_inbox_webhooks } from './Migration20261127000072_inbox_webhooks.js';
import { Migration20261127000075_signin_loopback } from './Migration20261127000075_signin_loopback.js';

/** Committed migrations, in order. Listed explicitly so the compiled build needs no globbing. */
export const migrationsList: MigrationObject[] = [
  { name: 'Migration20261121000001_users_keys', class: Migration20261121000001_users_keys },
  { name: 'Migration20261121000002_sessions_turns_events', class: Migration20261121000002_sessions_turns_events },
  { name: 'Migration20261121000003_session_tasks', class: Migration20261121000003_session_tasks },
  { name: 'Migration20261123000001_scheduled_tasks', class: Migration20261123000001_scheduled_tasks },
  { name: 'Migration20261123000002_timetravel', class: Migration20261123000002_timetravel },
  { name: 'Migration20261123000003_memories_settings', class: Migration20261123000003_memories_settings },
  { name: 'Migration20261123000004_share_links', class: Migration20261123000004_share_links },
  { name: 'Migration20261124000020_prod_agents', class: Migration20261124000020_prod_agents },
  { name: 'Migration20261124000021_admin_grants', class: Migration20261124000021_admin_grants },
  { name: 'Migration20261124000022_prod_solutions', class: Migration20261124000022_prod_solutions },
  { name: 'Migration20261124000030_apps_annotations', class: Migration20261124000030_apps_annotations },
  { name: 'Migration20261124000031_workspaces_issues', class: Migration20261124000031_workspaces_issues },
  { name: 'Migration20261125000040_run_identity', class: Migration20261125000040_run_identity },
  { name: 'Migration20261125000041_usage_budgets', class: Migration20261125000041_usage_budgets },
  { name: 'Migration20261125000050_tool_policy', class: Migration20261125000050_tool_policy },
  { name: 'Migration20261126000042_usage_purpose', class: Migration20261126000042_usage_purpose },
  { name: 'Migration20261127000060_egress_audit', class: Migration20261127000060_egress_audit },
  { name: 'Migration20261127000070_model_credentials', class: Migration20261127000070_model_credentials },
  { name: 'Migration20261127000071_identity', class: Migration20261127000071_identity },
  { name: 'Migration20261127000072_inbox_webhooks', class: Migration20261127000072_inbox_webhooks },
  { name: 'Migration20261127000075_signin_loopback', class: Migration20261127000075_signin_loopback },
];
