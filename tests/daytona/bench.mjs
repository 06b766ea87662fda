// SPDX-License-Identifier: Apache-2.0
// airlock-bench --daytona runs this: the official Daytona SDK against airlockd --daytona-api, beside
// its baselines measured in the same rounds from the same Node process: the official MCP client
// over `airlockctl mcp` for a command's round trip, and `airlockctl create` then `airlockctl exec`
// for a sandbox made and its first command run. Both sides run the same command, `/bin/sh -c true`
// (what executeCommand('true') runs), judged by the same rules. Prints one JSON line of medians.
// Usage: node bench.mjs ROUNDS; DAYTONA_API_URL, DAYTONA_API_KEY, AIRLOCKCTL and the daemon's XDG
// variables in the environment.
import { execFileSync } from 'node:child_process';
import { Daytona } from '@daytonaio/sdk';
import { Client } from '../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js';
import { StdioClientTransport } from '../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.js';

const rounds = Number(process.argv[2] ?? 5);
const perRound = 20;
const ctl = process.env.AIRLOCKCTL;
const median = (v) => { const s = [...v].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const now = () => Number(process.hrtime.bigint()) / 1e6;
async function timed(f) { const t = now(); await f(); return now() - t; }

const daytona = new Daytona();
const sandbox = await daytona.create();
const mcp = new Client({ name: 'airlock-bench', version: '1' });
await mcp.connect(new StdioClientTransport({ command: ctl, args: ['--no-autostart', 'mcp'], env: process.env, stderr: 'inherit' }));
await mcp.callTool({ name: 'sandbox_create', arguments: { name: 'mcp-bench' } });

const sdkExec = async () => {
  const r = await sandbox.process.executeCommand('true');
  if (r.exitCode !== 0) throw new Error(`executeCommand: ${JSON.stringify(r)}`);
};
const mcpExec = async () => {
  const r = await mcp.callTool({ name: 'sandbox_exec', arguments: { sandbox: 'mcp-bench', argv: ['/bin/sh', '-c', 'true'] } });
  if (r.isError || r.structuredContent?.exit_code !== 0) throw new Error(`sandbox_exec: ${JSON.stringify(r)}`);
};
let n = 0;
const cliFirst = () => {
  const name = `cli-${++n}`;
  execFileSync(ctl, ['--no-autostart', 'create', '--name', name], { stdio: 'ignore' });
  execFileSync(ctl, ['--no-autostart', 'exec', name, '--', '/bin/sh', '-c', 'true'], { stdio: 'ignore' });
  return name;
};

for (let i = 0; i < 3; ++i) { await sdkExec(); await mcpExec(); } // warm both paths
const exec = { sdk: [], mcp: [] }, first = { sdk: [], cli: [] };
const made = [];
for (let round = 0; round < rounds; ++round) {
  const sdk = [], over = [];
  for (let i = 0; i < perRound; ++i) { // interleaved, so that the machine's noise falls on both
    sdk.push(await timed(sdkExec));
    over.push(await timed(mcpExec));
  }
  exec.sdk.push(median(sdk));
  exec.mcp.push(median(over));
  const sdkMs = await timed(async () => {
    const s = await daytona.create({ labels: { bench: 'first' } });
    made.push(s);
    const r = await s.process.executeCommand('true');
    if (r.exitCode !== 0) throw new Error('first command');
  });
  let cliName;
  const cliMs = await timed(async () => { cliName = cliFirst(); });
  first.sdk.push(sdkMs);
  first.cli.push(cliMs);
  execFileSync(ctl, ['--no-autostart', 'rm', cliName], { stdio: 'ignore' });
  await made.pop().delete();
}
await sandbox.delete();
await mcp.close();
process.stdout.write(JSON.stringify({
  execSdkMs: median(exec.sdk), execMcpMs: median(exec.mcp),
  firstSdkMs: median(first.sdk), firstCliMs: median(first.cli),
}) + '\n');
process.exit(0);
