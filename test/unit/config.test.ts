/** The one validated configuration (SPEC §3): a bad or missing value is one line naming the variable. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

const production = { NODE_ENV: 'production', SECRET_KEY: Buffer.alloc(32, 7).toString('base64'), ADMIN_TOKEN: 'a-production-admin-token' };

describe('configuration', () => {
  it('requires PUBLIC_BASE_URL in production: the default names this machine, which the marketplace cannot reach', () => {
    expect(() => loadConfig(production)).toThrow(ConfigError);
    expect(() => loadConfig(production)).toThrow(/PUBLIC_BASE_URL is required in production/);
  });

  it('requires https for PUBLIC_BASE_URL in production', () => {
    expect(() => loadConfig({ ...production, PUBLIC_BASE_URL: 'http://hooks.example.com' })).toThrow(/PUBLIC_BASE_URL must use https in production/);
    expect(loadConfig({ ...production, PUBLIC_BASE_URL: 'https://hooks.example.com/' }).publicBaseUrl).toBe('https://hooks.example.com');
  });

  it('refuses a PUBLIC_BASE_URL with a query, a fragment or credentials, and one that is not http(s)', () => {
    expect(() => loadConfig({ PUBLIC_BASE_URL: 'https://hooks.example.com/?a=1' })).toThrow(/PUBLIC_BASE_URL must not carry a query/);
    expect(() => loadConfig({ PUBLIC_BASE_URL: 'ftp://hooks.example.com' })).toThrow(/PUBLIC_BASE_URL/);
    // A path prefix is fine: a proxy may serve Skyhook under one.
    expect(loadConfig({ PUBLIC_BASE_URL: 'https://example.com/skyhook/' }).publicBaseUrl).toBe('https://example.com/skyhook');
  });

  it('outside production, defaults PUBLIC_BASE_URL to this machine on PORT', () => {
    expect(loadConfig({}).publicBaseUrl).toBe('http://localhost:3000');
    const config = loadConfig({ PORT: '4100' });
    expect(config.publicBaseUrl).toBe('http://localhost:4100');
    expect(config.warnings.join('\n')).not.toMatch(/PUBLIC_BASE_URL/);
  });

  it('outside production, without ADMIN_TOKEN, the development admin token stays the same across restarts, and says so once', () => {
    const first = loadConfig({});
    expect(first.adminToken).toMatch(/^dev-[\w-]{24}$/);
    expect(loadConfig({}).adminToken).toBe(first.adminToken);
    expect(first.warnings).toContainEqual(expect.stringContaining(`development admin token ${first.adminToken} (set ADMIN_TOKEN to choose one)`));
    // Derived from SECRET_KEY: another key, another token; ADMIN_TOKEN wins.
    expect(loadConfig({ SECRET_KEY: production.SECRET_KEY }).adminToken).not.toBe(first.adminToken);
    expect(loadConfig({ ADMIN_TOKEN: 'chosen-admin-token-123' }).adminToken).toBe('chosen-admin-token-123');
  });

  it('warns at start when PUBLIC_BASE_URL names another port of this machine than PORT', () => {
    const { warnings } = loadConfig({ PORT: '4100', PUBLIC_BASE_URL: 'http://localhost:3000' });
    expect(warnings).toContainEqual(expect.stringMatching(/PUBLIC_BASE_URL http:\/\/localhost:3000 names port 3000 of this machine, but Skyhook listens on PORT 4100/));
    // Another host (a proxy, a tunnel) may well listen on another port: nothing to say.
    expect(loadConfig({ PORT: '4100', PUBLIC_BASE_URL: 'https://hooks.example.com' }).warnings.join('\n')).not.toMatch(/PUBLIC_BASE_URL/);
  });

  it('reads REQUEST_TIMEOUT_MS (default 30 s) and refuses a nonsense value naming it', () => {
    expect(loadConfig({}).requestTimeoutMs).toBe(30_000);
    expect(loadConfig({ REQUEST_TIMEOUT_MS: '5000' }).requestTimeoutMs).toBe(5000);
    expect(() => loadConfig({ REQUEST_TIMEOUT_MS: 'soon' })).toThrow(/REQUEST_TIMEOUT_MS/);
  });

  it('exports traces only when an OTLP endpoint is set (SPEC §15), over http/protobuf unless http/json is asked for', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing).toEqual({ protocol: 'http/protobuf', endpoint: 'http://collector:4318/v1/traces' });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).tracing?.protocol).toBe('http/json');
    // The traces' own variables win over the general ones; the endpoint is shown without its password.
    expect(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://user:pw@traces.example.com/otlp/v1/traces',
      }).tracing,
    ).toEqual({ protocol: 'http/protobuf', endpoint: 'https://user:***@traces.example.com/otlp/v1/traces' });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }).tracing).toBeDefined();
    // The standard off switches.
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }).tracing).toBeUndefined();
  });

  it('refuses OTLP settings Skyhook cannot honour, naming the variable', () => {
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL must be http\/protobuf or http\/json .*grpc is not supported/);
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4317' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT must be an http\(s\) URL/);
    expect(() => loadConfig({ OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(/OTEL_TRACES_EXPORTER must be otlp or none/);
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER: 'sometimes' })).toThrow(/OTEL_TRACES_SAMPLER must be always_on/);
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER_ARG: '2' })).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
  });
});
