import { Migration } from '@mikro-orm/migrations';

/** Sign-in with an OpenID Connect provider, roles and disabled users (docs/identity.md). */
export class Migration20261127000071_identity extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table users add column role text not null default 'member' check (role in ('admin', 'member', 'viewer'))`);
    this.addSql('alter table users add column disabled boolean not null default false');
    this.addSql(`update users set role = 'admin' where is_admin`);
    // A provider's user, linked once to a user of ours by (issuer, sub), never by name.
    this.addSql(`create table user_links (
      issuer text not null,
      subject text not null,
      user_id text not null references users(id) on delete cascade,
      email text null,
      created_at timestamptz not null default now(),
      last_signin_at timestamptz not null default now(),
      primary key (issuer, subject)
    )`);
    this.addSql('create index user_links_user_id_idx on user_links(user_id)');
    // A signed-in browser or terminal: the cookie (or CLI token) holds the secret, only its hash is here.
    this.addSql(`create table signins (
      id text primary key,
      user_id text not null references users(id) on delete cascade,
      token_hash text not null unique,
      csrf_token text not null,
      kind text not null check (kind in ('browser', 'cli')),
      user_agent text null,
      ip text null,
      id_token text null,
      created_at timestamptz not null default now(),
      last_seen_at timestamptz not null default now(),
      expires_at timestamptz not null,
      revoked_at timestamptz null
    )`);
    this.addSql('create index signins_user_id_idx on signins(user_id)');
    // A sign-in under way at the provider: state, nonce and PKCE verifier (browser), or the device code (terminal).
    this.addSql(`create table signin_requests (
      id text primary key,
      kind text not null check (kind in ('browser', 'device')),
      nonce text null,
      code_verifier text null,
      device_code text null,
      return_to text null,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null
    )`);
    this.addSql(`create table identity_audit (
      id text primary key,
      at timestamptz not null default now(),
      action text not null,
      user_id text null,
      actor_id text null,
      detail jsonb not null default '{}'
    )`);
    this.addSql('create index identity_audit_at_idx on identity_audit(at)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table identity_audit');
    this.addSql('drop table signin_requests');
    this.addSql('drop table signins');
    this.addSql('drop table user_links');
    this.addSql('alter table users drop column disabled');
    this.addSql('alter table users drop column role');
  }
}
