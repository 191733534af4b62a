// Which addresses a webhook may be sent to. An endpoint's URL is the team's to choose, so without
// a check it could make the executor call what only the executor can reach: its own loopback
// ports, the private network it sits in, a cloud's metadata service. Unless the operator allows
// private networks, the host is resolved here and every address outside the public internet is
// refused; the request then connects to the address that was checked (send.ts), so a name that
// answers differently a moment later (DNS rebinding) cannot move it.

import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

const refused = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, where cloud metadata services answer
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4] // reserved, and broadcast
] as const)
  refused.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local (fd00:ec2::254 is a metadata service)
  ['fe80::', 10], // link-local
  ['ff00::', 8] // multicast
] as const)
  refused.addSubnet(net, prefix, 'ipv6');

/** The IPv4 address an IPv6 one carries (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, 6to4, compatible). */
function embeddedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::|::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const high = parseInt(hex[1]!, 16);
    const low = parseInt(hex[2]!, 16);
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  const sixToFour = /^2002:([0-9a-f]{1,4}):([0-9a-f]{1,4}):/.exec(lower);
  if (sixToFour) {
    const high = parseInt(sixToFour[1]!, 16);
    const low = parseInt(sixToFour[2]!, 16);
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  return undefined;
}

/** Whether an IP address is on the public internet (not loopback, private, link-local, metadata, …). */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !refused.check(address, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4 !== undefined) return !refused.check(v4, 'ipv4');
    return !refused.check(address, 'ipv6');
  }
  return false;
}

export class AddressRefused extends Error {}

export interface Resolved {
  address: string;
  family: 4 | 6;
}

/**
 * The address to connect to for `hostname` (a name or an IP literal, IPv6 without brackets): the
 * first one its name resolves to that may be reached. Throws AddressRefused, naming the host and
 * what it resolved to, when none may.
 */
export async function resolveHost(hostname: string, allowPrivate: boolean): Promise<Resolved> {
  const literal = isIP(hostname);
  const found: Resolved[] =
    literal !== 0
      ? [{ address: hostname, family: literal as 4 | 6 }]
      : (await lookup(hostname, { all: true, verbatim: true })).map(entry => ({
          address: entry.address,
          family: entry.family as 4 | 6
        }));
  if (found.length === 0) throw new AddressRefused(`${hostname} resolves to no address`);
  if (allowPrivate) return found[0]!;
  const allowed = found.find(entry => isPublicAddress(entry.address));
  if (allowed) return allowed;
  const addresses = found.map(entry => entry.address).join(', ');
  throw new AddressRefused(
    `${hostname} resolves only to addresses that are not public (${addresses}): loopback, private, ` +
      'link-local and metadata addresses are refused unless webhooks.allow_private_networks is true'
  );
}

/**
 * What is wrong with an endpoint URL, or undefined: an http(s) URL without credentials, whose host
 * resolves to an address that may be reached. The host is looked up again at every attempt.
 */
export async function urlProblem(url: string, allowPrivate: boolean): Promise<string | undefined> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `url ${JSON.stringify(url)}: not a URL; expected an http or https URL such as https://example.com/hooks`;
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    return `url ${JSON.stringify(url)}: the scheme ${parsed.protocol.replace(/:$/, '')} is not sent to; expected http or https`;
  if (parsed.username !== '' || parsed.password !== '')
    return 'url: credentials in the URL are refused (they would be shown in the endpoint record); expected a URL without user:password@';
  try {
    await resolveHost(hostOf(parsed), allowPrivate);
  } catch (error) {
    if (error instanceof AddressRefused) return `url ${JSON.stringify(url)}: ${error.message}`;
    return `url ${JSON.stringify(url)}: the host ${hostOf(parsed)} does not resolve (${(error as NodeJS.ErrnoException).code ?? 'lookup failed'})`;
  }
  return undefined;
}

/** The URL's host without the brackets of an IPv6 literal. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}
