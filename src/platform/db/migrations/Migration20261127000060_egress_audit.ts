import { Migration } from '@mikro-orm/migrations';

export class Migration20261127000060_egress_audit extends Migration {
  override async up(): Promise<void> {
    // A connection the egress proxy refused is audited with the Bash call that made it when known,
    // else with none (docs/policy-network.md).
    this.addSql('alter table policy_audit alter column tool_call_id drop not null');
  }

  override async down(): Promise<void> {
    this.addSql(`update policy_audit set tool_call_id = '' where tool_call_id is null`);
    this.addSql('alter table policy_audit alter column tool_call_id set not null');
  }
}
