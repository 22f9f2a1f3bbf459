/**
 * Where a destination may be (SPEC §5.2 "Addresses", src/lib/addresses.ts): outside development https and
 * a public address only, checked for a literal address when the URL is set and for a name when the
 * connection is made; DESTINATION_ALLOW admits hosts and CIDRs, for every company or those it names. In
 * development http and loopback are allowed, private networks are not.
 */
import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { addressProblem, checkedLookup, parseAllowList, urlProblem, type AddressRules } from '../../src/lib/addresses.js';

const ACME = '3f2c7a9e-1b1d-4c55-9f0e-6d1b2a3c4d5e';
const ZETA = '9a1b0c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d';

function rules(strict: boolean, allow = ''): AddressRules {
  const parsed = parseAllowList(allow);
  if (typeof parsed === 'string') throw new Error(parsed);
  return { strict, allow: parsed };
}
const production = rules(true);
const development = rules(false);

/** Each literal address that is never a destination without an allow-list entry, in any environment. */
const NEVER_PUBLIC = [
  '10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.255.254', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '198.18.0.1',
  '192.0.2.10', '224.0.0.1', '255.255.255.255',
  'fc00::1', 'fd12:3456::1', 'fe80::1', 'fec0::1', 'ff02::1', '2001:db8::1', '::', '::127.0.0.1', '64:ff9b::a00:1', '2002:a00:1::1',
  // IPv4-mapped IPv6: the v4 rule applies, in either spelling.
  '::ffff:10.0.0.1', '::ffff:a00:1', '::ffff:169.254.169.254',
];
const LOOPBACK = ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1'];
const PUBLIC = ['8.8.8.8', '1.1.1.1', '2001:4860:4860::8888', '::ffff:8.8.8.8'];

/** Calls a LookupFunction as net.connect does (`all` as autoSelectFamily asks it). */
function resolve(lookup: ReturnType<typeof checkedLookup>, hostname: string, all: boolean): Promise<{ err: NodeJS.ErrnoException | null; addresses: LookupAddress[] }> {
  return new Promise((done) => {
    lookup(hostname, { all }, (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => {
      done({ err, addresses: err ? [] : Array.isArray(address) ? address : [{ address, family: family! }] });
    });
  });
}

describe('addresses outside development (strict)', () => {
  it.each(NEVER_PUBLIC.concat(LOOPBACK))('refuses the literal address %s', (address) => {
    expect(addressProblem(production, address, address, ACME)).toMatch(/is not a public address/);
  });

  it.each(PUBLIC)('admits the public address %s', (address) => {
    expect(addressProblem(production, address, address, ACME)).toBeNull();
  });

  it('refuses http, whatever the host', () => {
    expect(urlProblem(production, 'http://example.com/hooks', ACME)).toBe('must use https');
    expect(urlProblem(production, 'http://8.8.8.8/hooks', ACME)).toBe('must use https');
    expect(urlProblem(production, 'https://example.com/hooks', ACME)).toBeNull();
  });

  it('refuses a URL whose literal host is private, loopback or link-local, however the URL spells it', () => {
    for (const url of [
      'https://10.0.0.1/hooks',
      'https://127.0.0.1:8443/hooks',
      'https://[::1]/hooks',
      'https://[::ffff:127.0.0.1]/hooks',
      'https://[0:0:0:0:0:ffff:a00:1]/hooks',
      'https://169.254.169.254/latest/meta-data/',
      // WHATWG URL parsing turns these into 127.0.0.1 and 10.0.0.1.
      'https://2130706433/hooks',
      'https://0x7f.1/hooks',
      'https://012.0.0.1/hooks',
    ]) {
      expect(urlProblem(production, url, ACME), url).toMatch(/is not a public address/);
    }
  });

  it('refuses what is not an absolute http(s) URL, and credentials or a fragment in it', () => {
    expect(urlProblem(production, 'ftp://example.com/', ACME)).toBe('must be an absolute http(s) URL');
    expect(urlProblem(production, '/hooks', ACME)).toBe('must be an absolute http(s) URL');
    expect(urlProblem(production, 'https://user:pass@example.com/', ACME)).toBe('must not carry credentials or a fragment');
    expect(urlProblem(production, 'https://example.com/#x', ACME)).toBe('must not carry credentials or a fragment');
  });

  it('refuses a name that resolves to a loopback address when the connection is made (localhost)', async () => {
    for (const all of [false, true]) {
      const { err } = await resolve(checkedLookup(production, ACME, 'localhost'), 'localhost', all);
      expect(err?.code).toBe('EADDRNOTPUBLIC');
      expect(err?.message).toMatch(/^localhost resolves to .* is not a public address/);
    }
  });
});

describe('addresses in development', () => {
  it.each(LOOPBACK)('admits the loopback address %s', (address) => {
    expect(addressProblem(development, address, address, ACME)).toBeNull();
  });

  it.each(NEVER_PUBLIC)('still refuses %s', (address) => {
    expect(addressProblem(development, address, address, ACME)).toMatch(/is not a public address/);
  });

  it('admits http and loopback URLs (the demo, the tests), not a private network', () => {
    expect(urlProblem(development, 'http://127.0.0.1:4000/hooks', ACME)).toBeNull();
    expect(urlProblem(development, 'http://[::1]:4000/hooks', ACME)).toBeNull();
    expect(urlProblem(development, 'http://localhost:4000/hooks', ACME)).toBeNull();
    expect(urlProblem(development, 'http://10.0.0.1/hooks', ACME)).toMatch(/10\.0\.0\.1 is not a public address/);
    expect(urlProblem(development, 'http://192.168.0.10/hooks', ACME)).toMatch(/is not a public address/);
  });

  it('connects to localhost, to the one address it checked', async () => {
    const { err, addresses } = await resolve(checkedLookup(development, ACME, 'localhost'), 'localhost', true);
    expect(err).toBeNull();
    expect(addresses).toHaveLength(1);
    expect(LOOPBACK).toContain(addresses[0]!.address);
  });
});

describe('DESTINATION_ALLOW', () => {
  it('a CIDR admits the addresses in it, and only those', () => {
    const allow = rules(true, '10.88.0.0/16, fd00:1::/32');
    expect(addressProblem(allow, '10.88.4.5', '10.88.4.5', ACME)).toBeNull();
    expect(addressProblem(allow, '::ffff:10.88.4.5', '::ffff:10.88.4.5', ACME)).toBeNull();
    expect(addressProblem(allow, 'fd00:1::7', 'fd00:1::7', ACME)).toBeNull();
    expect(addressProblem(allow, '10.89.0.1', '10.89.0.1', ACME)).toMatch(/is not a public address/);
    expect(addressProblem(allow, 'fd00:2::7', 'fd00:2::7', ACME)).toMatch(/is not a public address/);
    expect(urlProblem(allow, 'https://10.88.4.5/hooks', ACME)).toBeNull();
  });

  it('a CIDR admits an address, not http: https is still asked of a literal address it admits', () => {
    const allow = rules(true, '127.0.0.1/32');
    expect(urlProblem(allow, 'https://127.0.0.1:8443/hooks', ACME)).toBeNull();
    expect(urlProblem(allow, 'http://127.0.0.1:8080/hooks', ACME)).toBe('must use https');
    expect(urlProblem(allow, 'https://127.0.0.2/hooks', ACME)).toMatch(/is not a public address/);
  });

  it('a host admits the host by name, whatever it resolves to, over http too', async () => {
    const allow = rules(true, 'localhost,crm.internal.example');
    expect(urlProblem(allow, 'http://localhost:8080/hooks', ACME)).toBeNull();
    expect(urlProblem(allow, 'http://CRM.internal.example/hooks', ACME)).toBeNull();
    expect(urlProblem(allow, 'http://other.internal.example/hooks', ACME)).toBe('must use https');
    expect((await resolve(checkedLookup(allow, ACME, 'localhost'), 'localhost', false)).err).toBeNull();
  });

  it('a CIDR admits a name at connection when every address it resolves to is in it', async () => {
    const allow = rules(true, '127.0.0.0/8,::1/128');
    expect((await resolve(checkedLookup(allow, ACME, 'localhost'), 'localhost', true)).err).toBeNull();
    expect((await resolve(checkedLookup(rules(true, '10.0.0.0/8'), ACME, 'localhost'), 'localhost', true)).err?.code).toBe('EADDRNOTPUBLIC');
  });

  it('an entry naming companies admits them only', async () => {
    const allow = rules(true, `localhost=${ACME}, 10.88.0.0/16=${ZETA.toUpperCase()}+${ACME}`);
    expect(urlProblem(allow, 'http://localhost:8080/hooks', ACME)).toBeNull();
    expect(urlProblem(allow, 'http://localhost:8080/hooks', ZETA)).toBe('must use https');
    expect((await resolve(checkedLookup(allow, ZETA, 'localhost'), 'localhost', false)).err?.code).toBe('EADDRNOTPUBLIC');
    expect((await resolve(checkedLookup(allow, ACME, 'localhost'), 'localhost', false)).err).toBeNull();
    expect(addressProblem(allow, '10.88.0.9', '10.88.0.9', ZETA)).toBeNull();
    expect(addressProblem(allow, '10.88.0.9', '10.88.0.9', ACME)).toBeNull();
    expect(addressProblem(allow, '10.88.0.9', '10.88.0.9', '00000000-0000-4000-8000-000000000000')).toMatch(/is not a public address/);
  });

  it('says why an entry is not one', () => {
    expect(parseAllowList('10.0.0.0/33')).toMatch(/"10.0.0.0\/33" is not a CIDR/);
    expect(parseAllowList('10.0.0.0/x')).toMatch(/is not a CIDR/);
    expect(parseAllowList('crm_host!')).toMatch(/"crm_host!" is neither a host name nor a CIDR/);
    expect(parseAllowList('localhost=')).toMatch(/names no company after =/);
    expect(parseAllowList(' , ')).toEqual([]);
  });
});
