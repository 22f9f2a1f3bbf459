/**
 * Where a company's destination may be (SPEC §5.2): outside development, `https` and a public address only, checked
 * when the connection is made (a name that resolves to a private, loopback or link-local address is
 * refused; the connection goes to the address that was checked, so a name that answers differently the
 * second time, DNS rebinding, gains nothing), unless DESTINATION_ALLOW admits the host or its address.
 * In development `http` and loopback addresses are allowed (the demo, the tests).
 *
 * DESTINATION_ALLOW: comma-separated entries, each a host name or a CIDR, optionally `=` and the companies
 * it is for, joined by `+` (`crm.internal.example=3f2c...+9a1b...`); without, for every company. Used by
 * delivery/send.ts (at each connection) and the destinations' service (when a URL is set).
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/** Never a destination, in any environment: reserved, documentation, multicast and private ranges. */
const NOT_PUBLIC = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.0.0.0', 24],
  ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) NOT_PUBLIC.addSubnet(net, bits, 'ipv4');
// ::/96 (IPv4-compatible, unspecified), site-local, Teredo and 6to4 carry or reach IPv4 or private networks a v4 rule would refuse.
for (const [net, bits] of [
  ['::', 96], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['2001:db8::', 32], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64],
  ['2001::', 32], ['2002::', 16],
] as const) NOT_PUBLIC.addSubnet(net, bits, 'ipv6');

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** One allow-list entry: a host name or a network, for every company or those named. */
interface AllowEntry {
  host?: string;
  network?: BlockList;
  companies?: Set<string>;
}

export interface AddressRules {
  /** Outside development: https, public addresses. */
  strict: boolean;
  allow: AllowEntry[];
}

/** DESTINATION_ALLOW parsed; answers why an entry is not one, for the configuration's one-line error. */
export function parseAllowList(value: string): AllowEntry[] | string {
  const entries: AllowEntry[] = [];
  for (const raw of value.split(',').map((s) => s.trim()).filter(Boolean)) {
    const [target = '', companies] = raw.split('=', 2);
    const entry: AllowEntry = companies === undefined ? {} : { companies: new Set(companies.split('+').map((c) => c.trim().toLowerCase()).filter(Boolean)) };
    if (entry.companies?.size === 0) return `${JSON.stringify(raw)} names no company after =`;
    const [ip, bits] = target.split('/', 2);
    if (bits !== undefined) {
      const family = isIP(ip ?? '');
      const prefix = Number(bits);
      if (!family || !Number.isInteger(prefix) || prefix < 0 || prefix > (family === 4 ? 32 : 128)) return `${JSON.stringify(target)} is not a CIDR such as 10.88.0.0/16`;
      entry.network = new BlockList();
      entry.network.addSubnet(ip!, prefix, family === 4 ? 'ipv4' : 'ipv6');
    } else if (isIP(target)) {
      entry.network = new BlockList();
      entry.network.addAddress(target, isIP(target) === 4 ? 'ipv4' : 'ipv6');
    } else if (/^[a-z0-9.-]+$/i.test(target) && target.length <= 253) {
      entry.host = target.toLowerCase();
    } else {
      return `${JSON.stringify(target)} is neither a host name nor a CIDR`;
    }
    entries.push(entry);
  }
  return entries;
}

const familyOf = (address: string) => (isIP(address) === 6 ? 'ipv6' : 'ipv4');
const forCompany = (entry: AllowEntry, companyId: string) => !entry.companies || entry.companies.has(companyId.toLowerCase());
const hostAllowed = (rules: AddressRules, host: string, companyId: string) => rules.allow.some((e) => e.host === host.toLowerCase() && forCompany(e, companyId));

/** Why `address` may not be connected to for this company's destination at `host`, or null. */
export function addressProblem(rules: AddressRules, host: string, address: string, companyId: string): string | null {
  if (hostAllowed(rules, host, companyId)) return null;
  if (rules.allow.some((e) => e.network?.check(address, familyOf(address)) && forCompany(e, companyId))) return null;
  if (!rules.strict && LOOPBACK.check(address, familyOf(address))) return null;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return addressProblem(rules, host, mapped, companyId);
  if (NOT_PUBLIC.check(address, familyOf(address))) return `${address} is not a public address (private, loopback, link-local or reserved); DESTINATION_ALLOW can admit it`;
  return null;
}

/** Why `raw` cannot be this company's destination, checked when it is set (the address itself is checked at each connection). */
export function urlProblem(rules: AddressRules, raw: string, companyId: string): string | null {
  const url = URL.canParse(raw) ? new URL(raw) : null;
  if (!url || !['http:', 'https:'].includes(url.protocol)) return 'must be an absolute http(s) URL';
  if (url.username || url.password || url.hash) return 'must not carry credentials or a fragment';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (rules.strict && url.protocol !== 'https:' && !hostAllowed(rules, host, companyId)) return 'must use https';
  // A literal address is known now: one that could never be admitted is refused at once.
  return isIP(host) ? addressProblem(rules, host, host, companyId) : null;
}

/**
 * The lookup a destination's connections use: every address the name resolves to is checked, and the
 * connection goes to the first, as checked. A literal address skips lookups: send.ts checks it itself.
 */
export function checkedLookup(rules: AddressRules, companyId: string, host: string): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const problem = addresses.map((a) => addressProblem(rules, host, a.address, companyId)).find((p) => p !== null);
      if (problem) return callback(Object.assign(new Error(`${hostname} resolves to ${problem}`), { code: 'EADDRNOTPUBLIC' }), '', 0);
      const first = addresses[0]!;
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, [first]);
      return callback(null, first.address, first.family);
    });
  };
}
