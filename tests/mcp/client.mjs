// SPDX-License-Identifier: Apache-2.0
// Drives `airlockctl mcp` with the official MCP TypeScript SDK client, as an agent would.
// Usage: node client.mjs session|cancel|disconnect; AIRLOCKCTL and AIRLOCK_MCP_ARGS (a JSON
// array) say what to run. tst_mcp runs it beside a real daemon and answers the approvals this
// asks for with `airlockctl approve` and `airlockctl deny`. Each step asserts what it got; the
// last line of output is {"ok": true, ...} with what the C++ side checks in the history.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

const scenario = process.argv[2];
const transport = new StdioClientTransport({
  command: process.env.AIRLOCKCTL,
  args: JSON.parse(process.env.AIRLOCK_MCP_ARGS),
  env: process.env,
  stderr: 'inherit',
});
const client = new Client({ name: 'airlock-test-agent', version: '1.0.0' });
const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const text = (r) => r.content.map((c) => c.text).join('');

async function call(name, args, options = {}) {
  return client.callTool({ name, arguments: args }, undefined, { resetTimeoutOnProgress: true, timeout: 120000, ...options });
}

// Starts a command, returns its promise and the execution once it runs ("SANDBOX:N").
function running(sandbox, argv, signal) {
  let started;
  const execution = new Promise((resolve) => { started = resolve; });
  const result = call('sandbox_exec', { sandbox, argv }, {
    signal,
    onprogress: (p) => { const m = /^running as (\S+)/.exec(p.message ?? ''); if (m) started(m[1]); },
  });
  return { result, execution };
}

// Calls a tool that asks a person and cancels it as soon as it says so; the request's id.
async function cancelledWhileAsking(name, args) {
  const giveUp = new AbortController();
  let asked;
  const waiting = call(name, args, {
    signal: giveUp.signal,
    onprogress: (p) => {
      const m = /\(request ([0-9a-f]{8})\)$/.exec(p.message ?? '');
      if (m && !asked) { asked = m[1]; giveUp.abort('not needed any more'); }
    },
  });
  await assert.rejects(waiting);
  assert.ok(asked, 'no request was reported');
  return asked;
}

await client.connect(transport);
assert.equal(client.getServerVersion().name, 'airlock');
assert.match(client.getInstructions(), /sandbox_create/);

if (scenario === 'session') {
  const tools = (await client.listTools()).tools;
  assert.deepEqual(tools.map((t) => t.name).sort(),
    ['sandbox_create', 'sandbox_delete', 'sandbox_exec', 'sandbox_list', 'sandbox_read_file', 'sandbox_write_file']);
  const exec = tools.find((t) => t.name === 'sandbox_exec');
  assert.deepEqual(exec.inputSchema.required, ['sandbox']);
  assert.equal(exec.inputSchema.additionalProperties, false);
  assert.equal(exec.outputSchema.properties.exit_code.type, 'integer'); // 2025-06-18 on: results are structured
  say({ step: 'tools', protocol: LATEST_PROTOCOL_VERSION });

  const created = await call('sandbox_create', { name: 'agent-box', limits: { memory_mb: 256 } });
  assert.equal(created.isError, false, text(created));
  assert.equal(created.structuredContent.name, 'agent-box');
  assert.equal(created.structuredContent.capabilities.network.mode, 'none');
  assert.equal(created.structuredContent.capabilities.commands.default, 'ask');
  assert.equal(created.structuredContent.capabilities.limits.memoryBytes, 256 * 1024 * 1024);

  // Allowed by the default rules: runs at once.
  const hello = await call('sandbox_exec', { sandbox: 'agent-box', argv: ['echo', 'hello'] });
  assert.equal(hello.structuredContent.exit_code, 0, text(hello));
  assert.equal(hello.structuredContent.stdout, 'hello\n');
  assert.match(text(hello), /^exit code 0 \(succeeded, \d+ ms, agent-box:1\)\n--- stdout ---\nhello\n$/);

  // A shell asks a person (tst_mcp approves it with `airlockctl approve`); progress says so, then
  // streams the output.
  const progress = [];
  const ticks = await call('sandbox_exec', { sandbox: 'agent-box', command: 'for i in 1 2 3; do echo tick $i; sleep 0.3; done' },
    { onprogress: (p) => progress.push(p) });
  assert.equal(ticks.structuredContent.exit_code, 0, text(ticks));
  assert.equal(ticks.structuredContent.stdout, 'tick 1\ntick 2\ntick 3\n');
  const messages = progress.map((p) => p.message);
  assert.match(messages[0], /^waiting for a person to approve this command \(request [0-9a-f]{8}\)$/, messages.join(' | '));
  assert.ok(messages.some((m) => /^approved by airlockctl\//.test(m)), messages.join(' | '));
  assert.ok(messages.some((m) => /^running as agent-box:\d+$/.test(m)), messages.join(' | '));
  assert.ok(messages.some((m) => m.startsWith('stdout: tick')), messages.join(' | '));
  assert.deepEqual(progress.map((p) => p.progress), progress.map((_, i) => i + 1)); // increasing
  say({ step: 'progress', messages });

  // Denied by the person: an error the agent can read, with their reason.
  const denied = await call('sandbox_exec', { sandbox: 'agent-box', command: 'touch forbidden' });
  assert.equal(denied.isError, true);
  assert.match(text(denied), /^Airlock refused to run the command: denied by .+: not on my machine$/);

  // Nobody answers: the daemon's timeout denies.
  const unanswered = await call('sandbox_exec', { sandbox: 'agent-box', command: 'touch ignored' });
  assert.equal(unanswered.isError, true);
  assert.match(text(unanswered), /^Airlock refused to run the command: denied by airlockd: nobody decided within 2 s$/);

  // Files, both ways, text and bytes; paths stay in the workspace.
  const wrote = await call('sandbox_write_file', { sandbox: 'agent-box', path: 'data/in.txt', content: 'héllo wörld\n' });
  assert.equal(wrote.isError, true, 'data/ does not exist yet');
  await call('sandbox_exec', { sandbox: 'agent-box', argv: ['mkdir', 'data'] });
  const written = await call('sandbox_write_file', { sandbox: 'agent-box', path: 'data/in.txt', content: 'héllo wörld\n' });
  assert.deepEqual(written.structuredContent, { path: '/workspace/data/in.txt', bytes: 14 });
  const read = await call('sandbox_read_file', { sandbox: 'agent-box', path: '/workspace/data/in.txt' });
  assert.deepEqual(read.structuredContent, { content: 'héllo wörld\n', size: 14, truncated: false });
  const cat = await call('sandbox_exec', { sandbox: 'agent-box', argv: ['cat', 'data/in.txt'] });
  assert.equal(cat.structuredContent.stdout, 'héllo wörld\n');
  const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  await call('sandbox_write_file', { sandbox: 'agent-box', path: 'bin.dat', content_base64: bytes.toString('base64'), mode: 0o600 });
  const back = await call('sandbox_read_file', { sandbox: 'agent-box', path: 'bin.dat', encoding: 'base64', max_bytes: 100 });
  assert.deepEqual(back.structuredContent, { content: bytes.subarray(0, 100).toString('base64'), size: 256, truncated: true });
  const escape = await call('sandbox_write_file', { sandbox: 'agent-box', path: '../../etc/evil', content: 'x' });
  assert.equal(escape.isError, true);
  assert.match(text(escape), /not written: .*(workspace|escape)/i);

  // Standard input, then end of file.
  const wc = await call('sandbox_exec', { sandbox: 'agent-box', argv: ['wc', '-c'], stdin: 'abcdef' });
  assert.equal(wc.structuredContent.stdout.trim(), '6');

  // More output than asked for: its beginning and end, and where the rest is.
  const seq = await call('sandbox_exec', { sandbox: 'agent-box', argv: ['seq', '1', '20000'], max_output_bytes: 256 });
  const whole = Array.from({ length: 20000 }, (_, i) => `${i + 1}\n`).join('');
  assert.equal(seq.structuredContent.stdout_bytes, whole.length);
  assert.equal(seq.structuredContent.truncated, true);
  const out = seq.structuredContent.stdout;
  assert.ok(out.startsWith(whole.slice(0, 128)), out.slice(0, 200));
  assert.ok(out.endsWith(whole.slice(-128)), out.slice(-200));
  assert.match(out, new RegExp(`\\[… ${whole.length - 256} bytes left out here \\(max_output_bytes is 256\\); the whole output is in the Airlock history: 'airlockctl show agent-box:\\d+' …\\]`));

  // Arguments against the schema, precisely; unknown tools are protocol errors.
  const badType = await call('sandbox_exec', { sandbox: 5, argv: ['true'] });
  assert.equal(badType.isError, true);
  assert.match(text(badType), /^invalid arguments for sandbox_exec: \/sandbox: expected string, got number/);
  const extra = await call('sandbox_exec', { sandbox: 'agent-box', argv: ['true'], bogus: 1 });
  assert.match(text(extra), /bogus/);
  const both = await call('sandbox_exec', { sandbox: 'agent-box', argv: ['true'], command: 'true' });
  assert.equal(text(both), "give either 'command' (a shell line) or 'argv' (a program and its arguments), not both");
  await assert.rejects(call('no_such_tool', {}), (e) => e.code === -32602 && /unknown tool 'no_such_tool'/.test(e.message));

  // Only this session's sandboxes; a preset is the person's to give.
  const foreign = await call('sandbox_exec', { sandbox: 'persons-own', argv: ['true'] });
  assert.match(text(foreign), /^'persons-own' is not a sandbox of this session/);
  const newline = await call('sandbox_create', { name: 'box\n' });
  assert.match(text(newline), /^invalid arguments for sandbox_create: \/name: expected a string matching/);
  const idLike = await call('sandbox_create', { name: 'cafe' });
  assert.match(text(idLike), /hex digits alone look like a sandbox id/);
  const preset = await call('sandbox_create', { preset: 'package-install' });
  assert.match(text(preset), /^presets are the person's to choose/);
  const host = await call('sandbox_create', { network: 'allowlist', allow: ['evil.example'] });
  assert.match(text(host), /^'evil.example' is not a host the person allowed/);

  const list = await call('sandbox_list', {});
  assert.deepEqual(list.structuredContent.sandboxes.map((s) => s.name), ['agent-box']);
  const deleted = await call('sandbox_delete', { sandbox: 'agent-box' });
  assert.equal(deleted.isError, false, text(deleted));
  assert.deepEqual((await call('sandbox_list', {})).structuredContent.sandboxes, []);
  const gone = await call('sandbox_exec', { sandbox: 'agent-box', argv: ['true'] });
  assert.equal(gone.isError, true);
  await client.close();
  say({ ok: true });
} else if (scenario === 'cancel') {
  await call('sandbox_create', { name: 'cancel-box' });
  const abort = new AbortController();
  const { result, execution } = running('cancel-box', ['sleep', '30'], abort.signal);
  const label = await execution;
  abort.abort('the agent changed its mind');
  await assert.rejects(result);
  // Cancelled while it waits for a person: the question is taken back.
  const asked = await cancelledWhileAsking('sandbox_exec', { sandbox: 'cancel-box', command: 'touch ignored' });
  // The session goes on.
  const after = await call('sandbox_exec', { sandbox: 'cancel-box', argv: ['echo', 'still here'] });
  assert.equal(after.structuredContent.stdout, 'still here\n');
  await client.close();
  say({ ok: true, execution: label, withdrawn: asked });
} else if (scenario === 'disconnect') {
  await call('sandbox_create', { name: 'gone-box' });
  const { result, execution } = running('gone-box', ['sleep', '30']);
  result.catch(() => {});
  const label = await execution;
  const closing = Date.now();
  await client.close(); // stdin closes: the server kills what runs and exits
  say({ ok: true, execution: label, closeMs: Date.now() - closing });
} else if (scenario === 'person') {
  // Started with --preset package-install --allow pypi.org: the agent gets those, or less.
  const plain = await call('sandbox_create', { name: 'with-preset' });
  assert.equal(plain.isError, false, text(plain));
  const listed = (await call('sandbox_list', {})).structuredContent.sandboxes;
  assert.equal(listed[0].preset, 'package-install');
  const narrow = await call('sandbox_create', { name: 'with-host', network: 'allowlist', allow: ['PyPI.org'] });
  assert.equal(narrow.isError, false, text(narrow));
  assert.equal(narrow.structuredContent.capabilities.network.mode, 'allowlist');
  assert.ok(narrow.structuredContent.capabilities.network.allow.includes('pypi.org'), JSON.stringify(narrow.structuredContent.capabilities.network));
  const wide = await call('sandbox_create', { allow: ['pypi.org', 'evil.example'] });
  assert.match(text(wide), /^'evil.example' is not a host the person allowed for this session \(pypi.org\)$/);
  const other = await call('sandbox_create', { preset: 'locked' });
  assert.equal(text(other), "this session creates sandboxes with preset 'package-install' (the person's choice), not 'locked'");
  await client.close();
  say({ ok: true });
} else if (scenario === 'tools') {
  // A host tool the person's sandbox may call (asking them each time), as an MCP tool.
  let tools = (await client.listTools()).tools;
  for (let i = 0; i < 50 && !tools.some((t) => t.name === 'package.version'); i++) {
    await new Promise((r) => setTimeout(r, 100));
    tools = (await client.listTools()).tools;
  }
  const tool = tools.find((t) => t.name === 'package.version');
  assert.ok(tool, tools.map((t) => t.name).join(', '));
  assert.deepEqual(tool.inputSchema.required, ['sandbox', 'arguments']);
  assert.equal(tool.inputSchema.properties.arguments.properties.package.pattern, '^[a-z0-9][a-z0-9+.-]{0,99}$');
  assert.match(tool.description, /each call waits for a person's approval/);
  const progress = [];
  const bash = await call('package.version', { sandbox: 'tooled', arguments: { package: 'bash' } }, { onprogress: (p) => progress.push(p.message) });
  assert.equal(bash.isError, false, text(bash));
  assert.match(text(bash), /bash \d/);
  assert.match(progress[0], /^waiting for a person to approve package.version \(request [0-9a-f]{8}\)$/, progress.join(' | '));
  const bad = await call('package.version', { sandbox: 'tooled', arguments: { package: 'Not A Package!' } });
  assert.equal(bad.isError, true);
  assert.match(text(bad), /^invalid arguments for package.version: \/arguments\/package: /);
  // Cancelled while it waits for a person: taken back.
  const asked = await cancelledWhileAsking('package.version', { sandbox: 'tooled', arguments: { package: 'ignored-pkg' } });
  // Shared, not the session's to delete.
  const keep = await call('sandbox_delete', { sandbox: 'tooled' });
  assert.match(text(keep), /^tooled is the person's, shared with this session/);
  await client.close();
  say({ ok: true, progress, withdrawn: asked });
} else if (scenario === 'bypasses') {
  // In the person's sandbox 'judged' (sh run.sh allowed, curl denied): the ways an agent's code
  // would start curl anyway, written and run over MCP. Each is refused in its execve.
  const write = async (path, content) => {
    const r = await call('sandbox_write_file', { sandbox: 'judged', path, content });
    assert.equal(r.isError, false, text(r));
  };
  await write('d1.py', "import subprocess\nsubprocess.run(['python3', '/workspace/d2.py'])\n");
  await write('d2.py', "import errno, os\ntry:\n    os.execv('/usr/bin/curl', ['curl', '--version'])\nexcept OSError as e:\n    print('curl:', errno.errorcode[e.errno])\n");
  await write('ways.py', [
    'import errno, os',
    'def attempt(path, argv):',
    '    pid = os.fork()',
    '    if pid == 0:',
    '        try:',
    '            os.execv(path, argv)',
    '        except OSError as e:',
    '            print(argv[0], errno.errorcode[e.errno], flush=True)',
    '        os._exit(0)',
    '    os.waitpid(pid, 0)',
    "open('/workspace/x', 'w').write('#!/usr/bin/curl -K\\n')",
    "os.chmod('/workspace/x', 0o755)",
    "attempt('/proc/self/root/usr/bin/curl', ['c1', '--version'])",
    "attempt('/workspace/x', ['c2', 'https://example.invalid'])",
    "attempt('/usr/bin/env', ['c3', 'curl', '--version'])",
    '',
  ].join('\n'));
  await write('run.sh', 'python3 /workspace/d1.py; python3 /workspace/ways.py\n');
  const r = await call('sandbox_exec', { sandbox: 'judged', argv: ['sh', 'run.sh'] });
  assert.equal(r.isError, false, text(r));
  const out = r.structuredContent?.stdout ?? text(r);
  assert.match(out, /curl: EPERM\nc1 EPERM\nc2 EPERM\n/, out);
  await client.close();
  say({ ok: true, out });
} else {
  throw new Error(`unknown scenario ${scenario}`);
}
