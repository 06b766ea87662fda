// SPDX-License-Identifier: Apache-2.0
// The model for the agent tests: Anthropic's Messages API (POST /v1/messages) and OpenAI's
// Responses API (POST /v1/responses), streamed as server-sent events the way the real APIs stream
// them, only as much as Claude Code and Codex need. It stands in for what cannot be reached from
// here (a model); the agents, their tools and their HTTP clients are the real ones.
//
// What it answers follows a script (--script FILE, JSON): {"steps": [STEP...], "final": TEXT}.
// A conversation that has N tool results so far gets step N as a tool call, and once the steps are
// done the final text. A STEP names the tool for each API:
//   {"anthropic": {"name": "Bash", "input": {...}}, "openai": {"name": "shell", "arguments": {...}}}
// Requests that are not the agent's turn (a title, a quota probe: no tools in them) get the final
// text. Every request is printed as one JSON line on stdout like stub_https.mjs prints them, with
// the tool results the agent sent back ("results") so that a test can read what the agent saw.
import fs from 'node:fs';

// The script, or null without one (then the model's routes are the fixed ones of stub_https.mjs).
export function loadScript(path) {
  return path ? JSON.parse(fs.readFileSync(path, 'utf8')) : null;
}

const sse = (res, event, data) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);

function anthropicResults(body) {
  const out = [];
  for (const m of body.messages ?? [])
    if (Array.isArray(m.content))
      for (const c of m.content)
        if (c.type === 'tool_result')
          out.push(typeof c.content === 'string' ? c.content
            : (c.content ?? []).map((p) => p.text ?? '').join(''));
  return out;
}

function anthropic(script, body, res) {
  const results = anthropicResults(body);
  const hasTools = Array.isArray(body.tools) && body.tools.length > 0;
  const step = hasTools ? script.steps[results.length]?.anthropic : undefined;
  const id = `msg_stub_${results.length}`;
  const usage = { input_tokens: 10, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const block = step ? { type: 'tool_use', id: `toolu_stub_${results.length}`, name: step.name, input: step.input }
    : { type: 'text', text: script.final };
  const stop = step ? 'tool_use' : 'end_turn';
  if (!body.stream) {
    const json = JSON.stringify({ id, type: 'message', role: 'assistant', model: body.model, content: [block],
      stop_reason: stop, stop_sequence: null, usage });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
    res.end(json);
    return results;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  sse(res, 'message_start', { type: 'message_start', message: { id, type: 'message', role: 'assistant',
    model: body.model, content: [], stop_reason: null, stop_sequence: null, usage } });
  if (step) {
    sse(res, 'content_block_start', { type: 'content_block_start', index: 0,
      content_block: { type: 'tool_use', id: block.id, name: step.name, input: {} } });
    sse(res, 'content_block_delta', { type: 'content_block_delta', index: 0,
      delta: { type: 'input_json_delta', partial_json: JSON.stringify(step.input) } });
  } else {
    sse(res, 'content_block_start', { type: 'content_block_start', index: 0,
      content_block: { type: 'text', text: '' } });
    sse(res, 'content_block_delta', { type: 'content_block_delta', index: 0,
      delta: { type: 'text_delta', text: script.final } });
  }
  sse(res, 'content_block_stop', { type: 'content_block_stop', index: 0 });
  sse(res, 'message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null },
    usage: { output_tokens: 12 } });
  sse(res, 'message_stop', { type: 'message_stop' });
  res.end();
  return results;
}

function openaiResults(body) {
  const out = [];
  for (const item of Array.isArray(body.input) ? body.input : [])
    if (item.type === 'function_call_output' || item.type === 'custom_tool_call_output')
      out.push(typeof item.output === 'string' ? item.output : JSON.stringify(item.output));
  return out;
}

function openai(script, body, res) {
  const results = openaiResults(body);
  const hasTools = Array.isArray(body.tools) && body.tools.length > 0;
  const step = hasTools ? script.steps[results.length]?.openai : undefined;
  const n = results.length;
  const item = step
    ? { type: 'function_call', id: `fc_stub_${n}`, call_id: `call_stub_${n}`, name: step.name,
      arguments: JSON.stringify(step.arguments), status: 'completed' }
    : { type: 'message', id: `msg_stub_${n}`, role: 'assistant', status: 'completed',
      content: [{ type: 'output_text', text: script.final, annotations: [] }] };
  const response = { id: `resp_stub_${n}`, object: 'response', created_at: Math.floor(Date.now() / 1000),
    model: body.model, status: 'completed', output: [item],
    usage: { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 12,
      output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 22 } };
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let seq = 0;
  const send = (type, data) => sse(res, type, { type, sequence_number: seq++, ...data });
  send('response.created', { response: { ...response, status: 'in_progress', output: [] } });
  send('response.output_item.added', { output_index: 0, item: { ...item, status: 'in_progress' } });
  if (!step) {
    send('response.output_text.delta', { item_id: item.id, output_index: 0, content_index: 0, delta: script.final });
  }
  send('response.output_item.done', { output_index: 0, item });
  send('response.completed', { response });
  res.end();
  return results;
}

// Answers a model request and returns the tool results it carried, or null: not the model's.
export function answerModel(script, req, raw, res) {
  if (!script) return null;
  const api = req.method === 'POST' && req.url.split('?')[0] === '/v1/messages' ? anthropic
    : req.method === 'POST' && req.url.split('?')[0] === '/v1/responses' ? openai : null;
  if (!api) return null;
  let body;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch (e) {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { type: 'invalid_request_error', message: `not JSON: ${e.message}` } }));
    return [];
  }
  const results = api(script, body, res);
  results.tools = (Array.isArray(body.tools) ? body.tools : []).map((t) => t.name ?? t.type);
  return results;
}
