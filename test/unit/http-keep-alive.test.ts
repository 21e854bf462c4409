import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../runtime/config.ts';
import { bootedPlatform } from '../harness/booted.ts';

/** GET /health on a pooled connection: its status, and whether the connection had served a request before. */
function get(port: number, agent: Agent): Promise<{ status: number; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/health', agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, reused: req.reusedSocket }));
    });
    req.on('error', reject).end();
  });
}

describe('the HTTP server on PORT', () => {
  const platform = bootedPlatform();
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  afterEach(() => agent.destroy());

  it('keeps an idle keep-alive connection open past Node’s 5 s default, for the load balancer in front', async () => {
    const running = await platform.start({ mailer: false });
    const { port } = running.server!.address() as AddressInfo;
    expect(await get(port, agent)).toEqual({ status: 200, reused: false });
    // Idle longer than Node's default keep-alive (5 s), which closed the connection here.
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    expect(await get(port, agent)).toEqual({ status: 200, reused: true });
  }, 20_000);

  it('takes its idle timeout from HTTP_KEEP_ALIVE_SECONDS, and refuses one that is not a positive number', async () => {
    expect(loadConfig({}).httpKeepAliveSeconds).toBe(65);
    expect(loadConfig({ HTTP_KEEP_ALIVE_SECONDS: '620' }).httpKeepAliveSeconds).toBe(620);
    expect(() => loadConfig({ HTTP_KEEP_ALIVE_SECONDS: '0' })).toThrow(/HTTP_KEEP_ALIVE_SECONDS must be a positive number/);
    expect(() => loadConfig({ HTTP_KEEP_ALIVE_SECONDS: 'soon' })).toThrow(/HTTP_KEEP_ALIVE_SECONDS/);
    const running = await platform.start({ mailer: false, env: { HTTP_KEEP_ALIVE_SECONDS: '0.5' } });
    const { port } = running.server!.address() as AddressInfo;
    expect(await get(port, agent)).toEqual({ status: 200, reused: false });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await get(port, agent)).toEqual({ status: 200, reused: false });
  }, 20_000);
});
