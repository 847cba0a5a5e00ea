// Streams one chat turn through chatsvc's /v1 with a real JavaScript client and prints
// {"text": ...} (what the client assembled) as one JSON line. Driven by
// tests/chatsvc/chat/test_js_clients.py:
//   node stream_turn.mjs openai|ai-sdk '{"baseURL", "apiKey", "model", "headers", "messages",
//                                        "user"?}'
// A failed request exits non-zero with the client's error on stderr.
import OpenAI from 'openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { streamText } from 'ai';

const [client, raw] = process.argv.slice(2);
const turn = JSON.parse(raw);

async function withOpenAI() {
  const openai = new OpenAI({ baseURL: turn.baseURL, apiKey: turn.apiKey,
    defaultHeaders: turn.headers ?? {}, maxRetries: 0 });
  const stream = await openai.chat.completions.create({
    model: turn.model, messages: turn.messages, stream: true,
    ...(turn.user ? { user: turn.user } : {}),
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  return text;
}

async function withAISDK() {
  const provider = createOpenAICompatible({ name: 'chatsvc', baseURL: turn.baseURL,
    apiKey: turn.apiKey, headers: turn.headers ?? {} });
  const result = streamText({ model: provider(turn.model), messages: turn.messages, maxRetries: 0 });
  let text = '';
  for await (const part of result.fullStream) {
    if (part.type === 'error') throw part.error; // the SDK reports failures as stream parts
    if (part.type === 'text-delta') text += part.text;
  }
  return text;
}

const run = { openai: withOpenAI, 'ai-sdk': withAISDK }[client];
if (!run) throw new Error(`unknown client ${client}: openai or ai-sdk`);
console.log(JSON.stringify({ text: await run() }));
