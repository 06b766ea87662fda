// SPDX-License-Identifier: Apache-2.0
// A real HTTPS server for the credential broker's tests (Node's own https module, nothing from npm):
// it stands in for an API host behind TLS with a test authority. Every request is printed as one
// JSON line on stdout (when, method, target, raw header lines, body bytes), so a test can check exactly
// what reached the host. Answers:
//   /echo-headers  the request's raw headers as JSON (a host that echoes what it was sent)
//   /stream        a chunked answer in three parts, 50 ms apart (an event stream)
//   /bytes/N       N bytes of 'x' with a Content-Length
//   /delay/MS      "late\n", MS milliseconds later
//   POST /v1/messages, POST /v1/responses: a model (stub_model.mjs), by the script given with --script
//   anything else  "ok METHOD TARGET\n"
// Usage: node stub_https.mjs --host ADDR --port PORT --cert FILE --key FILE [--script FILE]
// Prints "LISTENING PORT" once it accepts connections.
import https from 'node:https';
import fs from 'node:fs';
import { answerModel, loadScript } from './stub_model.mjs';

const arg = (name) => {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0 || i + 1 >= process.argv.length) throw new Error(`--${name} is required`);
  return process.argv[i + 1];
};
const option = (name) => (process.argv.includes(`--${name}`) ? arg(name) : undefined);
const script = loadScript(option('script'));

// The fixed routes (everything but the model's).
function answerFixed(req, res) {
  if (req.url === '/echo-headers') {
    const body = JSON.stringify(req.rawHeaders);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  } else if (req.url === '/stream') {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let n = 0;
    const next = () => {
      n += 1;
      res.write(`data: part ${n}\n\n`);
      if (n === 3) res.end();
      else setTimeout(next, 50);
    };
    next();
  } else if (req.url.startsWith('/delay/')) {
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 5 });
      res.end('late\n');
    }, Number(req.url.slice(7)));
  } else if (req.url.startsWith('/bytes/')) {
    const size = Number(req.url.slice(7));
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
    res.end(Buffer.alloc(size, 'x'));
  } else {
    const body = `ok ${req.method} ${req.url}\n`;
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }
}

const server = https.createServer(
  { cert: fs.readFileSync(arg('cert')), key: fs.readFileSync(arg('key')), ALPNProtocols: ['http/1.1'] },
  (req, res) => {
    let bytes = 0;
    const chunks = [];
    req.on('data', (chunk) => {
      bytes += chunk.length;
      if (req.url.startsWith('/v1/')) chunks.push(chunk);
    });
    req.on('end', () => {
      const results = answerModel(script, req, Buffer.concat(chunks), res);
      process.stdout.write(JSON.stringify({
        time: Date.now(), method: req.method, url: req.url, httpVersion: req.httpVersion, headers: req.rawHeaders, bodyBytes: bytes,
        ...(results ? { results, tools: results.tools } : {}),
      }) + '\n');
      if (!results) answerFixed(req, res);
    });
  });
server.keepAliveTimeout = 60000;
server.listen(Number(arg('port')), arg('host'), () => {
  process.stdout.write(`LISTENING ${server.address().port}\n`);
});
