-- wrk script: one stateless MCP 2026-07-28 `tools/call ping` per request; counts answers that are not a pong.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "ping"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ping","arguments":{},' ..
  '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",' ..
  '"io.modelcontextprotocol/clientCapabilities":{}}}}'

local threads = {}

function setup(thread)
  thread:set("bad", 0)
  table.insert(threads, thread)
end

function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"pong":true', 1, true) or string.find(body, '"isError":true', 1, true) then
    bad = bad + 1
  end
end

function done(summary, latency, requests)
  local bad = 0
  for _, thread in ipairs(threads) do bad = bad + thread:get("bad") end
  io.write(string.format("BAD %d\nP50 %.3f\nP99 %.3f\n", bad, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
