import t from 'tap';
import { launch, open, shot } from '../console/browser.js';
import { withProvider } from './oidc.js';

/** AGENTSVC_KEY_SIGNIN=false (docs/identity.md "The console"): the sign-in page offers the provider only. */

t.test('console: key sign-in switched off leaves only the provider', async (t) => {
  const { app } = await withProvider(t, { AGENTSVC_KEY_SIGNIN: 'false' });
  const browser = await launch(t);
  if (!browser) return;
  const { page } = await open(browser, `${app.url}/`);
  await page.getByRole('link', { name: 'Sign in with Test IdP' }).waitFor();
  t.equal(await page.getByLabel('API key').count(), 0, 'no key form');
  t.equal(await page.getByText('or', { exact: true }).count(), 0, 'no "or" between two ways');
  await shot(page, '45-signin-provider-only');
});
