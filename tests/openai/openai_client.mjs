// The official OpenAI Node client (npm `openai`, version pinned in package.json) against a
// running `tzero serve`: models, completions and chat, plain and streamed (equal text), usage,
// logprobs, embeddings (the client's default base64 decoding equal to the float format, bit for
// bit), prompt scoring (echo + logprobs + max_tokens 0), and the errors the client maps to its
// exception classes.
//
//   node tests/openai/openai_client.mjs BASE_URL API_KEY     (BASE_URL like http://127.0.0.1:8080/v1)
// Exit status 0 when every check passes; each check prints one line.
import assert from "node:assert/strict";
import OpenAI from "openai";

const [baseURL, apiKey] = process.argv.slice(2);
if (!baseURL) {
  console.error("usage: openai_client.mjs BASE_URL [API_KEY]");
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: apiKey ?? "none", maxRetries: 0 });
let failed = 0;
async function check(name, fn) {
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e?.stack ?? e}`);
  }
}

const models = await client.models.list();
const model = models.data[0]?.id;

await check("models.list", async () => {
  assert.equal(models.data.length, 1);
  assert.equal(models.data[0].object, "model");
});

await check("completions: plain and streamed agree", async () => {
  const req = { model, prompt: "Once upon a time", max_tokens: 12, temperature: 0, logprobs: 2 };
  const r = await client.completions.create(req);
  assert.equal(r.object, "text_completion");
  assert.match(r.system_fingerprint, /^tz-/);
  assert.equal(r.usage.completion_tokens, r.choices[0].logprobs.tokens.length);
  // tzero's additive field passes through the client (docs/SERVER.md, "The tzero field").
  assert.match(r.choices[0].tzero.logits_digest, /^[0-9a-f]{32}$/);
  const stream = await client.completions.create({ ...req, stream: true });
  let text = "";
  const lps = [];
  let digest;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.text ?? "";
    lps.push(...(chunk.choices[0]?.logprobs?.token_logprobs ?? []));
    digest = chunk.choices[0]?.tzero?.logits_digest ?? digest;
  }
  assert.equal(digest, r.choices[0].tzero.logits_digest);
  assert.equal(text, r.choices[0].text);
  assert.deepEqual(lps, r.choices[0].logprobs.token_logprobs);
});

await check("chat: plain and streamed agree, usage chunk", async () => {
  const req = {
    model,
    messages: [{ role: "user", content: "Hello there" }],
    max_tokens: 10,
    temperature: 0,
    seed: 3,
    logprobs: true,
    top_logprobs: 2,
  };
  const r = await client.chat.completions.create(req);
  assert.equal(r.object, "chat.completion");
  assert.equal(r.choices[0].message.role, "assistant");
  const stream = await client.chat.completions.create({
    ...req,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = "";
  let role = null;
  let usage = null;
  const lps = [];
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta;
    if (d?.role) role = d.role;
    text += d?.content ?? "";
    lps.push(...(chunk.choices[0]?.logprobs?.content ?? []).map((c) => c.logprob));
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(role, "assistant");
  assert.equal(text, r.choices[0].message.content);
  assert.deepEqual(lps, r.choices[0].logprobs.content.map((c) => c.logprob));
  assert.deepEqual(usage, r.usage);
});

await check("embeddings: base64 (the client's default) equals float, dimensions", async () => {
  const input = ["Once upon a time", "the same bits, alone or batched"];
  // Without encoding_format the client asks for base64 and decodes the float32 bytes itself.
  const dflt = await client.embeddings.create({ model, input });
  const flt = await client.embeddings.create({ model, input, encoding_format: "float" });
  assert.equal(flt.object, "list");
  assert.equal(flt.data.length, 2);
  assert.deepEqual(
    flt.data.map((d) => d.index),
    [0, 1],
  );
  assert.ok(flt.usage.prompt_tokens > 0);
  assert.equal(flt.usage.total_tokens, flt.usage.prompt_tokens);
  for (let i = 0; i < 2; i++) {
    const f = flt.data[i].embedding;
    assert.ok(Array.isArray(f) && f.length > 0);
    assert.deepEqual(dflt.data[i].embedding, f);  // every float32 exactly
    const norm = Math.sqrt(f.reduce((s, x) => s + x * x, 0));
    assert.ok(Math.abs(norm - 1) < 1e-5, `norm ${norm}`);
  }
  const b64 = await client.embeddings.create({ model, input: input[0], encoding_format: "base64" });
  const buf = Buffer.from(b64.data[0].embedding, "base64");
  const f32 = new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4);
  assert.deepEqual(Array.from(f32), flt.data[0].embedding);
  const d = await client.embeddings.create({ model, input: input[0], dimensions: 8 });
  assert.equal(d.data[0].embedding.length, 8);
});

await check("embeddings: empty input -> BadRequestError (400)", async () => {
  await assert.rejects(
    client.embeddings.create({ model, input: [] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "input",
  );
});

await check("completions: echo + logprobs + max_tokens 0 scores the prompt", async () => {
  const prompt = "The capital of France is Paris";
  const r = await client.completions.create({
    model,
    prompt,
    echo: true,
    logprobs: 1,
    max_tokens: 0,
    temperature: 0,
  });
  const lp = r.choices[0].logprobs;
  assert.equal(r.choices[0].text, prompt);
  assert.equal(lp.tokens.length, r.usage.prompt_tokens);
  assert.equal(lp.token_logprobs[0], null);
  assert.ok(lp.token_logprobs.slice(1).every((x) => typeof x === "number" && x <= 0));
  assert.equal(r.usage.completion_tokens, 0);
});

await check("chat: response_format json_schema gives JSON that follows the schema", async () => {
  const schema = {
    type: "object",
    properties: { name: { type: "string", maxLength: 8 }, n: { type: "integer", minimum: 0, maximum: 9 } },
    required: ["name", "n"],
    additionalProperties: false,
  };
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({
      model,
      messages: [{ role: "user", content: "JSON please" }],
      max_tokens: 200,
      temperature: 1,
      seed,
      response_format: { type: "json_schema", json_schema: { name: "item", strict: true, schema } },
    });
    const out = JSON.parse(r.choices[0].message.content);
    assert.equal(typeof out.name, "string");
    assert.ok(Number.isInteger(out.n) && out.n >= 0 && out.n <= 9);
    assert.deepEqual(Object.keys(out).sort(), ["n", "name"]);
  }
});

const tools = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Weather in a city",
      parameters: {
        type: "object",
        properties: { city: { type: "string", maxLength: 10 } },
        required: ["city"],
        additionalProperties: false,
      },
    },
  },
];

await check("chat: tools with tool_choice required, plain and streamed", async () => {
  const req = {
    model,
    messages: [{ role: "user", content: "Weather in Paris?" }],
    max_tokens: 300,
    temperature: 1,
    seed: 5,
    tools,
    tool_choice: "required",
  };
  const r = await client.chat.completions.create(req);
  const msg = r.choices[0].message;
  assert.equal(r.choices[0].finish_reason, "tool_calls");
  assert.ok(msg.tool_calls.length >= 1);
  for (const call of msg.tool_calls) {
    assert.equal(call.type, "function");
    assert.equal(call.function.name, "get_weather");
    assert.equal(typeof JSON.parse(call.function.arguments).city, "string");
  }
  const stream = await client.chat.completions.create({ ...req, stream: true });
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    for (const tc of chunk.choices[0]?.delta?.tool_calls ?? []) {
      calls[tc.index] ??= { id: tc.id, name: "", arguments: "" };
      calls[tc.index].name += tc.function?.name ?? "";
      calls[tc.index].arguments += tc.function?.arguments ?? "";
    }
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(finish, "tool_calls");
  assert.deepEqual(
    calls.map((c) => [c.name, c.arguments]),
    msg.tool_calls.map((c) => [c.function.name, c.function.arguments]),
  );
});

await check("bad parameter -> BadRequestError (400)", async () => {
  await assert.rejects(
    client.completions.create({ model, prompt: "x", temperature: 3 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === "temperature",
  );
});

await check("unknown parameter -> 400", async () => {
  await assert.rejects(
    client.chat.completions.create({ model, messages: [{ role: "user", content: "x" }], bogus: 1 }),
    (e) => e instanceof OpenAI.BadRequestError && e.code === "unknown_parameter",
  );
});

await check("wrong key -> AuthenticationError (401)", async () => {
  const bad = new OpenAI({ baseURL, apiKey: "wrong", maxRetries: 0 });
  await assert.rejects(bad.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
});

process.exit(failed ? 1 : 0);
