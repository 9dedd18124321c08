import * as client from 'openid-client';
import type { OidcSettings } from '../../platform/config/identity.js';
import { AppError } from '../../platform/server/errors.js';

/** The provider could not be reached (discovery failed): the sign-in page says so, nothing crashes. */
export class ProviderUnreachable extends AppError {
  constructor(reason: string) {
    super(503, 'OIDC_UNAVAILABLE', `the sign-in provider cannot be reached: ${reason}`);
  }
}

export interface SignedIn {
  subject: string;
  claims: Record<string, unknown>;
  idToken: string | null;
}

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/**
 * The service as a relying party of one OpenID Connect provider, through openid-client (OpenID
 * Certified; it does discovery, PKCE, state/nonce and the ID token's signature, issuer, audience and
 * expiry checks). Discovery is retried on use until it succeeds, so a provider that is down at
 * start is a warning, not a failed start.
 */
export class OidcProvider {
  private config: client.Configuration | null = null;
  private pending: Promise<client.Configuration> | null = null;

  constructor(readonly settings: OidcSettings) {}

  /** Discover now (at start); a failure is answered as the warning `up` shows. */
  async warmUp(): Promise<string | null> {
    try {
      await this.configuration();
      return null;
    } catch (e) {
      return (e as Error).message;
    }
  }

  private configuration(): Promise<client.Configuration> {
    if (this.config) return Promise.resolve(this.config);
    this.pending ??= (async () => {
      const issuer = new URL(this.settings.issuer);
      try {
        const config = await client.discovery(issuer, this.settings.clientId, this.settings.clientSecret, undefined, {
          // Plain http is allowed by the settings only on loopback (src/platform/config/identity.ts).
          execute: issuer.protocol === 'http:' ? [client.allowInsecureRequests, client.enableNonRepudiationChecks] : [client.enableNonRepudiationChecks],
          timeout: 10,
        });
        this.config = config;
        return config;
      } catch (e) {
        throw new ProviderUnreachable(`${this.settings.issuer} (${(e as Error).message})`);
      } finally {
        this.pending = null;
      }
    })();
    return this.pending;
  }

  async endSessionUrl(idToken: string | null, after: string): Promise<string | null> {
    const config = await this.configuration().catch(() => null);
    if (!config?.serverMetadata().end_session_endpoint) return null;
    const params: Record<string, string> = { post_logout_redirect_uri: after, client_id: this.settings.clientId };
    if (idToken) params.id_token_hint = idToken;
    return client.buildEndSessionUrl(config, params).href;
  }

  /** Where to send the browser, with a fresh state, nonce and PKCE verifier to keep until the callback. */
  async authorizationUrl(redirectUri: string): Promise<{ url: string; state: string; nonce: string; verifier: string }> {
    const verifier = client.randomPKCECodeVerifier();
    return { ...(await this.authorizationUrlFor(redirectUri, await client.calculatePKCECodeChallenge(verifier))), verifier };
  }

  /**
   * The same with the PKCE S256 challenge of someone else's verifier: `agentsvc login --browser`
   * keeps its verifier and sends it only with the code, so a code caught on its way to the loopback
   * listener is worth nothing without it.
   */
  async authorizationUrlFor(redirectUri: string, codeChallenge: string): Promise<{ url: string; state: string; nonce: string }> {
    const config = await this.configuration();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: this.settings.scopes,
      state,
      nonce,
      code_challenge: codeChallenge,
      code_challenge_method: 'S256',
    });
    return { url: url.href, state, nonce };
  }

  /** The callback: code exchanged, state, nonce and ID token checked; throws on any failure. */
  async callback(callbackUrl: URL, redirectUri: string, expected: { state: string; nonce: string; verifier: string }): Promise<SignedIn> {
    const config = await this.configuration();
    const tokens = await client.authorizationCodeGrant(
      config,
      callbackUrl,
      { pkceCodeVerifier: expected.verifier, expectedState: expected.state, expectedNonce: expected.nonce, idTokenExpected: true },
      { redirect_uri: redirectUri },
    );
    return this.signedIn(config, tokens);
  }

  private async signedIn(config: client.Configuration, tokens: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers): Promise<SignedIn> {
    const idClaims = tokens.claims();
    if (!idClaims) throw new Error('the provider answered without an ID token');
    let claims: Record<string, unknown> = { ...idClaims };
    // Some providers put groups only in UserInfo: read it when the role claim is missing.
    if (!(this.settings.roles.claim in claims) && config.serverMetadata().userinfo_endpoint && tokens.access_token) {
      const info = await client.fetchUserInfo(config, tokens.access_token, idClaims.sub).catch(() => null);
      if (info) claims = { ...info, ...claims, [this.settings.roles.claim]: info[this.settings.roles.claim] };
    }
    return { subject: idClaims.sub, claims, idToken: tokens.id_token ?? null };
  }

  async deviceFlowOffered(): Promise<boolean> {
    return !!(await this.configuration()).serverMetadata().device_authorization_endpoint;
  }

  /** RFC 8628: the codes the person enters at the provider. */
  async startDevice(): Promise<client.DeviceAuthorizationResponse> {
    return client.initiateDeviceAuthorization(await this.configuration(), { scope: this.settings.scopes });
  }

  /** One poll of the device grant: pending, slow down, refused, or signed in. */
  async pollDevice(deviceCode: string): Promise<{ status: 'authorization_pending' | 'slow_down' } | { status: 'denied'; error: string } | { status: 'ok'; signedIn: SignedIn }> {
    const config = await this.configuration();
    try {
      const tokens = await client.genericGrantRequest(config, DEVICE_GRANT, { device_code: deviceCode });
      return { status: 'ok', signedIn: await this.signedIn(config, tokens) };
    } catch (e) {
      if (e instanceof client.ResponseBodyError) {
        if (e.error === 'authorization_pending' || e.error === 'slow_down') return { status: e.error };
        return { status: 'denied', error: e.error };
      }
      throw e;
    }
  }
}
