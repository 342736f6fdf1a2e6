// mcp-call.mjs URL MCP_AUTH_BIN CONFIG NAME
//
// A real MCP client (the SDK's Client over Streamable HTTP) whose Authorization header comes
// from `mcp-auth header --json NAME`. A 401 asks `mcp-auth header --refresh` and retries once; a 403 with error="insufficient_scope" signs in again with the challenged scope
// added (`mcp-auth login --scope`, step-up), at most 3 times per request. Then it lists the
// tools and calls test-tool when there is one.
import { execFileSync } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, bin, config, name] = process.argv.slice(2);

function header(refresh = false) {
  const out = execFileSync(bin, ["--config", config, "header", "--json", ...(refresh ? ["--refresh"] : []), name], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  return JSON.parse(out).headers.Authorization;
}

function challengeScope(res) {
  const h = res.headers.get("www-authenticate") || "";
  if (!/insufficient_scope/.test(h)) return null;
  const m = /scope="([^"]*)"/.exec(h);
  return m ? m[1] : "";
}

// authorization attempts per run, the first sign-in included: never loop on step-up
let signins = 1;
const MAX_SIGNINS = 3;
let current = header();
async function authFetch(input, init = {}) {
  for (let attempt = 0; attempt < 4; attempt++) {
    const headers = new Headers(init.headers || {});
    headers.set("Authorization", current);
    const res = await fetch(input, { ...init, headers });
    if (res.status === 401 && attempt === 0) {
      // refused before its time: ask for a refreshed one, once
      current = header(true);
      continue;
    }
    if (res.status === 403) {
      const scope = challengeScope(res);
      if (scope !== null && signins < MAX_SIGNINS) {
        signins++;
        execFileSync(bin, ["--config", config, "login", name, "--timeout", "30s",
          ...(scope ? ["--scope", scope] : [])], { stdio: ["ignore", "inherit", "inherit"] });
        current = header();
        continue;
      }
    }
    return res;
  }
  throw new Error("authorization kept failing");
}

const client = new Client({ name: "credkit-conformance", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: authFetch });
await client.connect(transport);
const tools = await client.listTools();
if (tools.tools.some((t) => t.name === "test-tool")) {
  await client.callTool({ name: "test-tool", arguments: {} });
}
await client.close();
