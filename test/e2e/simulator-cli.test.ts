import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';

const MAIN = 'bin/skyhook.js';
const cwd = new URL('../..', import.meta.url).pathname;

/** Runs the standalone simulator CLI and answers its exit code and output. */
function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { cwd }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
    });
  });
}

describe('simulator CLI', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ companies: [{ id: 'acme', token: 'acme-token' }] });
  });
  afterAll(() => sim.stop());

  it('fire posts events to a running simulator and prints a summary', async () => {
    const fired = await cli('simulator', 'fire', '--url', sim.url, '--company', 'acme', '--event', 'TripRequest', '--count', '3', '--resources', '2');
    expect(fired).toMatchObject({ code: 0, stderr: '' });
    expect(fired.stdout).toContain('fired 3 TripRequest event(s) for company acme over 2 resource(s)');
    expect(sim.report().perCompany.acme?.fired).toBe(3);

    const json = await cli('simulator', 'fire', '--url', sim.url, '--company', 'acme', '--event', 'ClientLeads', '--json');
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ companyId: 'acme', eventType: 'ClientLeads' })]);
  });

  it.each([
    [['--count', 'abc', '--company', 'acme', '--event', 'TripRequest'], '--count'],
    [['--company', 'acme', '--event', 'TripExploded'], '--event'],
    [['--company', 'acme'], '--event'],
  ])('a bad flag exits with 2 and one message naming it (%j)', async (args, flag) => {
    const result = await cli('simulator', 'fire', '--url', sim.url, ...args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringContaining(flag)]);
  });

  it("age-connection deactivates a company's unused connection past 60 days; expire-client-secret makes the token endpoint refuse it", async () => {
    sim.addCompany({ id: 'aged', token: 'aged-token' });
    const aged = await cli('simulator', 'age-connection', '--url', sim.url, '--company', 'aged', '--days', '61');
    expect(aged).toMatchObject({ code: 0, stderr: '' });
    expect(aged.stdout).toMatch(/^company aged's connection was last used \d{4}-/);
    const refused = await fetch(`${sim.apiBaseUrl}/webhooks/settings`, { headers: { authorization: 'Bearer aged-token' } });
    expect(refused.status).toBe(401);
    expect(JSON.stringify(await refused.json())).toContain('connection_deactivated');

    const expired = await cli('simulator', 'expire-client-secret', '--url', sim.url, '--company', 'aged');
    expect(expired).toMatchObject({ code: 0, stderr: '' });
    expect(expired.stdout).toMatch(/^company aged's client secret expired \d{4}-/);
    const unknown = await cli('simulator', 'age-connection', '--url', sim.url, '--company', 'initech', '--days', '1');
    expect(unknown).toMatchObject({ code: 2, stdout: '' });
  });

  it('an unknown company is refused with exit code 2', async () => {
    const result = await cli('simulator', 'fire', '--url', sim.url, '--company', 'initech', '--event', 'TripRequest');
    expect(result).toMatchObject({ code: 2, stdout: '' });
    expect(result.stderr).toContain('unknown company "initech"');
  });

  it('faults shows the knobs, changes only those given, and refuses a bad value naming it', async () => {
    const shown = await cli('simulator', 'faults', '--url', sim.url);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^resource5xxRate\s+0$/m);

    const changed = await cli('simulator', 'faults', '--url', sim.url, '--resource-5xx-rate', '0.25', '--plural-put-missing');
    expect(changed.code).toBe(0);
    expect(changed.stdout).toMatch(/^resource5xxRate\s+0\.25$/m);
    expect(changed.stdout).toMatch(/^pluralPutMissing\s+true$/m);

    const kept = await cli('simulator', 'faults', '--url', sim.url, '--plural-put-missing', 'false');
    expect(kept.stdout).toMatch(/^resource5xxRate\s+0\.25$/m);
    expect(kept.stdout).toMatch(/^pluralPutMissing\s+false$/m);
    expect(kept.stdout).toMatch(/^duplicateRate\s+0$/m);
    sim.setFaults({ resource5xxRate: 0 });

    const refused = await cli('simulator', 'faults', '--url', sim.url, '--lost-ack-rate', '2');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--lost-ack-rate');
  });

  it("company-faults shows and changes one company's knobs, and refuses a bad value naming it", async () => {
    const shown = await cli('simulator', 'company-faults', '--url', sim.url, '--company', 'acme');
    expect(shown).toMatchObject({ code: 0, stderr: '' });
    expect(shown.stdout).toMatch(/^resourceRateLimit\s+off$/m);

    const limited = await cli('simulator', 'company-faults', '--url', sim.url, '--company', 'acme', '--resource-rate-limit', '10:2', '--resource-latency', '5');
    expect(limited.code).toBe(0);
    expect(limited.stdout).toMatch(/^resourceLatencyMs\s+5$/m);
    expect(limited.stdout).toMatch(/^resourceRateLimit\s+10 per second, then 429 with Retry-After: 2$/m);
    expect(sim.setCompanyFaults('acme', {})).toEqual({ resourceLatencyMs: 5, resourceRateLimit: { perSecond: 10, retryAfterS: 2 } });

    const cleared = await cli('simulator', 'company-faults', '--url', sim.url, '--company', 'acme', '--resource-rate-limit', 'off');
    expect(cleared.stdout).toMatch(/^resourceRateLimit\s+off$/m);
    expect(cleared.stdout).toMatch(/^resourceLatencyMs\s+5$/m);
    sim.setCompanyFaults('acme', { resourceLatencyMs: null });

    const refused = await cli('simulator', 'company-faults', '--url', sim.url, '--company', 'acme', '--resource-rate-limit', '10');
    expect(refused).toMatchObject({ code: 2, stdout: '' });
    expect(refused.stderr).toContain('--resource-rate-limit');
    const unknown = await cli('simulator', 'company-faults', '--url', sim.url, '--company', 'initech', '--resource-latency', '5');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown company "initech"');
  });

  it('serves each company in the profile its flags give: bearer, avinode, OAuth client credentials; a flag that cannot work exits 2 naming it', async () => {
    const child = spawn(
      process.execPath,
      [MAIN, 'simulator', '--port', '0', '--company', 'acme:acme-token', '--company', 'zeta:zeta-api', '--avinode', 'zeta:zeta-auth', '--oauth-client', 'orbit:orbit-client:orbit:secret', '--token-lifetime', '5'],
      { cwd },
    );
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    try {
      while (!stdout.includes('OAuth token URL')) await once(child.stdout, 'data');
      expect(stdout).toContain('companies: acme (bearer), zeta (avinode), orbit (bearer, OAuth)');
      const apiBaseUrl = /API base URL: (\S+)/.exec(stdout)?.[1] ?? '';
      const list = (headers: Record<string, string>) => fetch(`${apiBaseUrl}/webhooks/settings`, { headers }).then((r) => r.status);
      expect(await list({ authorization: 'Bearer acme-token' })).toBe(200);
      expect(await list({ authorization: 'Bearer zeta-auth' })).toBe(401); // no X-Avinode-ApiToken
      const avinode = { 'x-avinode-apitoken': 'zeta-api', 'x-avinode-senttimestamp': new Date().toISOString(), 'x-avinode-product': 'Test 1.0' };
      expect(await list({ authorization: 'Bearer zeta-auth', ...avinode })).toBe(200);
      const token = await fetch(`${apiBaseUrl}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'orbit-client', client_secret: 'orbit:secret' }).toString(),
      }).then((r) => r.json() as Promise<{ access_token: string; expires_in: number }>);
      expect(token.expires_in).toBe(5);
      expect(await list({ authorization: `Bearer ${token.access_token}` })).toBe(200);
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
    const orphan = await cli('simulator', '--port', '0', '--avinode', 'nobody:x');
    expect(orphan).toMatchObject({ code: 2, stdout: '' });
    expect(orphan.stderr.trim()).toBe('simulator: --avinode nobody: no --company nobody:<token> gives its API token');
    const halfOAuth = await cli('simulator', '--port', '0', '--oauth-client', 'orbit:only-an-id');
    expect(halfOAuth.code).toBe(2);
    expect(halfOAuth.stderr).toContain('--oauth-client');
  });

  it('starts on the given port, prints its URLs and stops cleanly on SIGTERM', async () => {
    const child = spawn(process.execPath, [MAIN, 'simulator', '--port', '0', '--company', 'acme:acme-token'], { cwd });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    while (!stdout.includes('API base URL')) await once(child.stdout, 'data');
    const apiBaseUrl = /API base URL: (\S+)/.exec(stdout)?.[1] ?? '';
    const answer = await fetch(`${apiBaseUrl}/webhooks/settings`, { headers: { authorization: 'Bearer acme-token' } });
    expect(answer.status).toBe(200);
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
  });
});
