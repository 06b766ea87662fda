// SPDX-License-Identifier: Apache-2.0
// Drives `airlockd --daytona-api` with the official Daytona TypeScript SDK, as a framework's
// Daytona integration would: only DAYTONA_API_URL and DAYTONA_API_KEY point it at Airlock.
// Usage: node sdk.mjs session|wrong-key. tst_daytona runs it beside a real daemon, answers the
// approvals it asks for with `airlockctl approve` (and `airlockctl deny` for those that mention
// "forbidden"), then reads the history. Each step asserts what it got; the last line of output is
// {"ok": true, ...} with what the C++ side checks.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { Daytona, DaytonaAuthenticationError, DaytonaAuthorizationError, DaytonaError, DaytonaNotFoundError,
  DaytonaTimeoutError } from '@daytonaio/sdk';

const scenario = process.argv[2];
const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const sha = (b) => createHash('sha256').update(b).digest('hex');

if (scenario === 'wrong-key') {
  const daytona = new Daytona({ apiKey: 'alk_000000000000_' + 'A'.repeat(43) });
  await assert.rejects(daytona.get('anything'), (e) => e instanceof DaytonaAuthenticationError && e.statusCode === 401
    && /unknown|not/i.test(e.message));
  const none = new Daytona({ apiKey: 'not-a-token' });
  await assert.rejects(none.get('anything'), (e) => e instanceof DaytonaAuthenticationError && e.statusCode === 401);
  say({ ok: true });
  process.exit(0);
}

if (scenario === 'basic') { // the non-root path: an ordinary user's daemon
  const daytona = new Daytona();
  const s = await daytona.create({ labels: { who: 'user' } });
  const r = await s.process.executeCommand('echo $HOME; pwd');
  assert.equal(r.exitCode, 0);
  assert.equal(r.result, '/home/sandbox\n/workspace\n');
  const one = randomBytes(1 << 20);
  await s.fs.uploadFile(one, 'one.bin');
  assert.equal(sha(await s.fs.downloadFile('one.bin')), sha(one));
  await s.process.createSession('s');
  assert.equal((await s.process.executeSessionCommand('s', { command: 'echo hi' })).stdout, 'hi\n');
  await s.delete();
  say({ ok: true });
  process.exit(0);
}

assert.equal(scenario, 'session');
const daytona = new Daytona(); // DAYTONA_API_URL and DAYTONA_API_KEY from the environment
const timings = {};

// Create with env vars and labels; a second one with other labels.
let t = Date.now();
const app = await daytona.create({ envVars: { GREETING: 'hello from env' }, labels: { suite: 'airlock', role: 'app' } });
timings.createMs = Date.now() - t;
assert.equal(app.state, 'started');
const other = await daytona.create({ labels: { suite: 'other' } });
assert.notEqual(app.id, other.id);

// List by label: only the first.
const listed = [];
for await (const s of daytona.list({ labels: { suite: 'airlock' } })) listed.push(s.id);
assert.deepEqual(listed, [app.id]);
assert.equal((await daytona.get(app.id)).labels.role, 'app');

// executeCommand: exit code and output; the sandbox's env, with cwd and the call's own env. A
// command with variables set asks a person (they can change what runs): the C++ side approves it
// while the call waits.
await app.fs.createFolder('sub', '755');
t = Date.now();
const greeting = await app.process.executeCommand('echo "$GREETING/$EXTRA"; pwd', 'sub', { EXTRA: 'call' });
timings.approvedExecMs = Date.now() - t;
assert.equal(greeting.exitCode, 0);
assert.equal(greeting.result, 'hello from env/call\n/workspace/sub\n');
const three = await other.process.executeCommand('exit 3');
assert.equal(three.exitCode, 3);
const echoed = await other.process.executeCommand('echo out; echo err >&2');
assert.equal(echoed.result, 'out\nerr\n');

// A command the policy denies is the SDK's authorization error, with Airlock's reason.
await assert.rejects(other.process.executeCommand('rm -r /workspace'), (e) => e instanceof DaytonaAuthorizationError
  && e.statusCode === 403 && /denied by policy: .*rule 'rm -r'/.test(e.message));
// A person's "no" too.
await assert.rejects(other.process.executeCommand('touch forbidden'), (e) => e instanceof DaytonaAuthorizationError
  && /not on my machine/.test(e.message));
// The timeout (seconds) kills the command.
await assert.rejects(other.process.executeCommand('sleep 30', undefined, undefined, 1),
  (e) => e instanceof DaytonaTimeoutError && e.statusCode === 408);

// No network: a request out of the sandbox fails at connect (no route), and an agent cannot give
// its sandbox a network allow list.
const curl = await other.process.executeCommand('curl -sS -m 5 http://10.255.255.1/');
assert.equal(curl.exitCode, 7, curl.result);
assert.match(curl.result, /(Network is unreachable|Couldn't connect|Failed to connect)/);
await assert.rejects(daytona.create({ networkAllowList: '10.0.0.0/8' }),
  (e) => e instanceof DaytonaAuthorizationError && /not a host the person allowed \(allowed\.test\)/.test(e.message));
// A host the person allowed (airlockd --daytona-allow allowed.test): reached through the egress
// proxy; any other host is refused there.
const netted = await daytona.create({ networkAllowList: 'allowed.test' });
assert.equal(netted.networkAllowList, 'allowed.test');
assert.equal(netted.networkBlockAll, false);
const web = process.env.WEB_PORT;
const fetched = await netted.process.executeCommand(`curl -sS -m 10 http://allowed.test:${web}/ok.txt`);
assert.equal(fetched.result, 'daytona-web GET /ok.txt\n');
const elsewhere = await netted.process.executeCommand(`curl -sS -m 10 -o /dev/null -w '%{http_code}' http://elsewhere.test:${web}/ok.txt`);
assert.equal(elsewhere.result, '403');
await netted.delete();
await assert.rejects(daytona.create({ networkAllowList: 'allowed.test,elsewhere.test' }),
  (e) => e instanceof DaytonaAuthorizationError && /'elsewhere\.test' is not a host the person allowed/.test(e.message));

// Files: text and binary (1 MiB, 64 MiB) up and down, intact; list, details, folder, delete.
await other.fs.uploadFile(Buffer.from('hello\n'), 'notes/a.txt');
assert.equal((await other.fs.downloadFile('notes/a.txt')).toString(), 'hello\n');
const one = randomBytes(1 << 20), big = randomBytes(64 << 20);
await other.fs.uploadFile(one, 'bin/one.bin');
t = Date.now();
await other.fs.uploadFile(big, '/workspace/bin/big.bin');
timings.upload64MiBMs = Date.now() - t;
assert.equal(sha(await other.fs.downloadFile('bin/one.bin')), sha(one));
t = Date.now();
assert.equal(sha(await other.fs.downloadFile('bin/big.bin')), sha(big));
timings.download64MiBMs = Date.now() - t;
const files = (await other.fs.listFiles('bin')).map((f) => `${f.name}:${f.size}:${f.isDir}`).sort();
assert.deepEqual(files, [`big.bin:${64 << 20}:false`, `one.bin:${1 << 20}:false`]);
assert.equal((await other.fs.getFileDetails('notes/a.txt')).size, 6);
await other.fs.createFolder('made/deeper', '755');
assert.ok((await other.fs.listFiles('made')).some((f) => f.name === 'deeper' && f.isDir));
await other.fs.deleteFile('notes/a.txt');
await assert.rejects(other.fs.downloadFile('notes/a.txt'), /No such file|not found|does not exist/i);
await assert.rejects(other.fs.uploadFile(Buffer.from('x'), '/etc/passwd'), (e) => e instanceof DaytonaError
  && /outside \/workspace/.test(e.message));

// What Airlock has no equivalent for is refused, saying so.
await assert.rejects(daytona.snapshot.list(), (e) => e instanceof DaytonaError && e.statusCode === 501
  && /Airlock has no snapshots/.test(e.message));
await assert.rejects(daytona.create({ snapshot: 'python:3.12' }), (e) => e.statusCode === 501 && /no snapshots/.test(e.message));

// Sessions: a command waited for; one run on its own whose logs stream while it runs.
await other.process.createSession('work');
const waited = await other.process.executeSessionCommand('work', { command: 'echo one; echo two >&2' });
assert.equal(waited.exitCode, 0);
assert.equal(waited.stdout, 'one\n');
assert.equal(waited.stderr, 'two\n');
// Each command is an execution of its own (the rules judge each): cd and export do not carry over.
await other.process.executeSessionCommand('work', { command: 'cd /tmp; export CARRIED=1' });
const fresh = await other.process.executeSessionCommand('work', { command: 'pwd; echo "[$CARRIED]"' });
assert.equal(fresh.stdout, '/workspace\n[]\n');
const started = await other.process.executeSessionCommand('work', {
  command: 'for i in 1 2 3; do echo tick $i; sleep 0.3; done; echo bad >&2; exit 4', runAsync: true });
assert.ok(started.cmdId);
assert.equal(started.exitCode, undefined);
const out = [], err = [], arrivals = [];
await other.process.getSessionCommandLogs('work', started.cmdId,
  (chunk) => { out.push(chunk); arrivals.push(Date.now()); }, (chunk) => err.push(chunk));
assert.equal(out.join(''), 'tick 1\ntick 2\ntick 3\n');
assert.equal(err.join(''), 'bad\n');
assert.ok(arrivals.at(-1) - arrivals[0] >= 250, `the logs came at once, not as the command ran: ${arrivals}`);
assert.equal((await other.process.getSessionCommand('work', started.cmdId)).exitCode, 4);
const logs = await other.process.getSessionCommandLogs('work', started.cmdId);
assert.equal(logs.stdout, 'tick 1\ntick 2\ntick 3\n');
assert.equal(logs.stderr, 'bad\n');
// What a session keeps of a command's output is its first MiB (all of it goes to a follower).
const counted = Array.from({ length: 500000 }, (_, i) => `${i + 1}\n`).join(''); // 3.4 MB
const loud = await other.process.executeSessionCommand('work', { command: 'sleep 1; seq 1 500000', runAsync: true });
const followed = [];
await other.process.getSessionCommandLogs('work', loud.cmdId, (chunk) => followed.push(chunk), () => {});
assert.ok(followed.join('') === counted, `a follower got ${followed.join('').length} of ${counted.length} bytes`);
assert.equal((await other.process.getSessionCommandLogs('work', loud.cmdId)).stdout, counted.slice(0, 1 << 20));
// A command the rules refuse, on its own: it ends with 126 and Airlock's reason on stderr.
const refusedAsync = await other.process.executeSessionCommand('work', { command: 'rm -r /workspace/bin', runAsync: true });
let refusedCommand;
for (let i = 0; i < 50 && refusedCommand?.exitCode === undefined; ++i) {
  refusedCommand = await other.process.getSessionCommand('work', refusedAsync.cmdId);
  await new Promise((r) => setTimeout(r, 100));
}
assert.equal(refusedCommand.exitCode, 126);
assert.match((await other.process.getSessionCommandLogs('work', refusedAsync.cmdId)).stderr, /rule 'rm -r'/);
assert.deepEqual((await other.process.getSession('work')).commands.map((c) => c.exitCode), [0, 0, 0, 4, 0, 126]);
await other.process.deleteSession('work');
await assert.rejects(other.process.getSession('work'), (e) => e instanceof DaytonaNotFoundError);

// Intervals are recorded and reported; an ephemeral sandbox (auto-delete 0) goes when it stops.
// None by default (an idle Airlock sandbox costs nothing).
assert.equal(other.autoStopInterval, 0);
assert.equal(other.autoDeleteInterval, -1);
await other.setAutostopInterval(30);
await other.setAutoDeleteInterval(90);
const intervals = await daytona.get(other.id);
assert.equal(intervals.autoStopInterval, 30);
assert.equal(intervals.autoDeleteInterval, 90);
const ephemeral = await daytona.create({ ephemeral: true });
assert.equal(ephemeral.autoDeleteInterval, 0);
await ephemeral.stop();
await assert.rejects(daytona.get(ephemeral.id), (e) => e instanceof DaytonaNotFoundError);

// Delete: gone from the list and from get.
await app.delete();
await other.delete();
const after = [];
for await (const s of daytona.list()) after.push(s.id);
assert.deepEqual(after, []);
await assert.rejects(daytona.get(app.id), (e) => e instanceof DaytonaNotFoundError);

say({ ok: true, app: app.id, other: other.id, timings });
process.exit(0);
